// The NCCL RAS client against a protocol test server (ras_server.py) replaying the real report
// of a hang and variants of it, and the RAS reports as the analyzer reads them.
#include "diagnostics/hang/ras_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "diagnostics/analyze/ras_report.h"
#include "tests/diagnostics/hang/hang_test_util.h"

namespace ccscope::diagnostics {
namespace {

using test_hang::kData;
using test_hang::newAnalyzer;
using test_hang::readAll;
using test_hang::snapshotWithRasText;

const std::string kServer = CCSCOPE_TEST_SOURCE "/diagnostics/hang/ras_server.py";

// The replay server, started for one test and killed at its end.
class RasServer {
 public:
  explicit RasServer(const std::vector<std::string>& args) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      std::vector<std::string> argv = {CCSCOPE_TEST_PYTHON, kServer};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c;
      c.reserve(argv.size() + 1);
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[64] = {};
    if (fgets(line, sizeof line, f)) std::sscanf(line, "PORT %d", &port_);
    fclose(f);
  }
  ~RasServer() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  RasQuery query(double timeout = 5) const {
    RasQuery q;
    q.port = port_;
    q.timeout_s = timeout;
    return q;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// --- RAS client against the replay server -------------------------------------------------

TEST(RasClientTest, ReadsTheRealReportInTextFromAServerWithoutJson) {
  RasServer server({"--text", kData + "real-2.28.9-opcount-mismatch.txt", "--json-unknown"});
  auto a = queryRas(server.query());
  ASSERT_TRUE(a.isOk()) << a.status().message();
  EXPECT_EQ(a->server_protocol, 2);
  EXPECT_EQ(a->format, "text");
  EXPECT_NE(a->note.find("JSON refused"), std::string::npos) << a->note;
  EXPECT_NE(a->text.find("Rank 1 has launched up to operation 5"), std::string::npos);
  ASSERT_GE(a->transcript.size(), 2u);
  EXPECT_EQ(a->transcript[0], "> CLIENT PROTOCOL 2");
  EXPECT_EQ(a->transcript[1], "< SERVER PROTOCOL 2");
}

TEST(RasClientTest, ReadsJsonAndRepairsNccl2289sMissingComma) {
  RasServer server({"--json", kData + "variant-2.28.9-missing-rank-bad-comma.json"});
  auto a = queryRas(server.query());
  ASSERT_TRUE(a.isOk()) << a.status().message();
  EXPECT_EQ(a->format, "json");
  EXPECT_NE(a->note.find("repaired"), std::string::npos) << a->note;
  const std::string text = rasJsonAsText(nlohmann::json::parse(a->text));
  EXPECT_NE(text.find("Missing communicator data from 1 rank"), std::string::npos) << text;
  EXPECT_NE(text.find("1 job process is considered dead"), std::string::npos) << text;
}

TEST(RasClientTest, AnOldProtocolIsRefusedWithTheVersions) {
  RasServer server({"--text", kData + "real-2.28.9-opcount-mismatch.txt", "--protocol", "1"});
  auto a = queryRas(server.query());
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), core::Code::kUnsupported);
  EXPECT_NE(a.status().message().find("protocol 1"), std::string::npos) << a.status().message();
}

TEST(RasClientTest, AServerThatIsNotRasIsNamedSo) {
  RasServer server({"--mode", "not-ras"});
  auto a = queryRas(server.query());
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), core::Code::kUnsupported);
  EXPECT_NE(a.status().message().find("not an NCCL RAS server"), std::string::npos)
      << a.status().message();
}

TEST(RasClientTest, AClosedConnectionAndAStallEndInTime) {
  {
    RasServer server({"--mode", "close-after-handshake"});
    auto a = queryRas(server.query());
    ASSERT_FALSE(a.isOk());
    EXPECT_EQ(a.status().code(), core::Code::kPeerClosed) << a.status().message();
  }
  RasServer server({"--text", kData + "real-2.28.9-opcount-mismatch.txt", "--mode", "slow"});
  const auto t0 = std::chrono::steady_clock::now();
  auto a = queryRas(server.query(1.0));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), core::Code::kDeadlineExceeded);
  EXPECT_NE(a.status().message().find("bytes of its report"), std::string::npos)
      << a.status().message();
  EXPECT_LT(s, 2.0);
}

TEST(RasClientTest, NoListenerSaysWhy) {
  // A port that was just free: bind, read the number, close.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  RasQuery q;
  q.port = ntohs(addr.sin_port);
  auto a = queryRas(q);
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), core::Code::kUnavailable);
  EXPECT_NE(a.status().message().find("no RAS listener"), std::string::npos);
}

TEST(RasClientTest, Addresses) {
  auto q = parseRasAddress("10.0.0.7:29000");
  ASSERT_TRUE(q.isOk());
  EXPECT_EQ(q->host, "10.0.0.7");
  EXPECT_EQ(q->port, 29000);
  q = parseRasAddress("[::1]:28029");
  ASSERT_TRUE(q.isOk());
  EXPECT_EQ(q->host, "::1");
  EXPECT_EQ(q->port, 28029);
  q = parseRasAddress("node7");
  ASSERT_TRUE(q.isOk());
  EXPECT_EQ(q->port, kRasDefaultPort);
  EXPECT_FALSE(parseRasAddress("node7:http").isOk());
  EXPECT_FALSE(parseRasAddress("node7:70000").isOk());
}

// --- RAS reports in the analyzer ------------------------------------------------------------

TEST(RasReportTest, EveryReportNamesRankOne) {
  for (const char* f :
       {"real-2.28.9-opcount-mismatch.txt", "variant-missing-rank.txt", "variant-dead-peer.txt"}) {
    auto a = newAnalyzer();
    a->analyzeSnapshot(snapshotWithRasText(f), "node-a.json");
    const auto d = a->finish();
    EXPECT_TRUE(d.conclusive) << f;
    EXPECT_EQ(d.culprit.ranks, std::vector<int>{1}) << f << ": " << d.verdict;
  }
  HangSnapshot s;
  s.node = "node-a";
  s.ras_json = readAll(kData + "variant-2.28.9-opcount-mismatch.json");
  auto a = newAnalyzer();
  a->analyzeSnapshot(s, "node-a.json");
  const auto d = a->finish();
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1}) << d.verdict;
  EXPECT_NE(d.verdict.find("#6"), std::string::npos) << d.verdict;
}

TEST(RasReportTest, TheRealReportAsAPlainLogNamesRankOne) {
  auto a = newAnalyzer();
  ASSERT_TRUE(a->analyzeFile(kData + "real-2.28.9-opcount-mismatch.txt").isOk());
  const auto d = a->finish();
  EXPECT_EQ(d.layer, core::Layer::kApplication) << d.verdict;
  EXPECT_EQ(d.culprit.ranks, std::vector<int>{1}) << d.verdict;
}

}  // namespace
}  // namespace ccscope::diagnostics
