#include "reports/table_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace ccscope::reports {
namespace {

std::string render(const std::vector<Measurement>& ms, RunSummary sum, bool interleaved = false,
                   const std::string& host_pages = "") {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  TableWriter w(f);
  RunMetadata meta;
  meta.collective = "allreduce";
  meta.ranks = 2;
  meta.interleaved = interleaved;
  meta.host_pages = host_pages;
  w.onRun(meta);
  for (const auto& m : ms) w.onMeasurement(m);
  w.onEnd(sum);
  std::fclose(f);
  std::string out(buf, len);
  free(buf);
  return out;
}

Measurement row(uint64_t bytes, bool in_place, double time) {
  Measurement m;
  m.bytes = bytes;
  m.count = bytes / 4;
  m.dtype = "float";
  m.redop = "sum";
  m.in_place = in_place;
  m.time_us = time;
  m.algbw_gbps = bytes / (time * 1e3);
  m.busbw_gbps = m.algbw_gbps;
  m.wrong = 0;
  return m;
}

TEST(TableWriterTest, TheHeaderSaysWhichPagesTheBuffersAreOn) {
  EXPECT_NE(render({}, {}, false, "huge")
                .find("#  Host buffers of 2 MiB and more on huge pages (--hugepages on)\n"),
            std::string::npos);
  EXPECT_NE(render({}, {}, false, "base").find("#  Host buffers on base pages (--hugepages off)\n"),
            std::string::npos);
  EXPECT_EQ(render({}, {}).find("Host buffers"), std::string::npos);  // a file from before
}

TEST(TableWriterTest, RowsMatchNcclTestsColumnOrder) {
  std::string out = render({row(1024, false, 10), row(1024, true, 20)}, {1.5, 0, 2});
  std::istringstream in(out);
  std::string line, data;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') data = line;
  std::istringstream cols(data);
  std::vector<std::string> c;
  for (std::string x; cols >> x;) c.push_back(x);
  ASSERT_GE(c.size(), 13u);
  EXPECT_EQ(c[0], "1024");   // size
  EXPECT_EQ(c[1], "256");    // count
  EXPECT_EQ(c[2], "float");  // type
  EXPECT_EQ(c[3], "sum");    // redop
  EXPECT_EQ(c[4], "-1");     // root
  EXPECT_EQ(c[5], "10.00");  // out-of-place time
  EXPECT_EQ(c[8], "0");      // out-of-place #wrong
  EXPECT_EQ(c[9], "20.00");  // in-place time
  EXPECT_NE(out.find("# Avg bus bandwidth    : 1.5"), std::string::npos);
  EXPECT_NE(out.find("# Out of bounds values : 0 OK"), std::string::npos);
  EXPECT_NE(out.find("algbw"), std::string::npos);
}

TEST(TableWriterTest, UncheckedAndFailedRowsAreMarked) {
  Measurement a = row(8, false, 1), b = row(8, true, 1);
  a.wrong = -1;
  b.wrong = 3;
  std::string out = render({a, b}, {0, 3, 2});
  EXPECT_NE(out.find("N/A"), std::string::npos);
  EXPECT_NE(out.find("3 FAILED"), std::string::npos);
}

std::vector<std::string> dataLines(const std::string& out) {
  std::istringstream in(out);
  std::vector<std::string> data;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') data.push_back(line);
  return data;
}

// --interleave: algorithms alternate row by row, so each row ends with the algorithm asked
// for (auto's, not its pick, which its note line names); a row without an in-place half keeps
// the column aligned.
TEST(TableWriterTest, InterleavedRowsNameTheirAlgorithmInTheLastColumn) {
  Measurement ring = row(1024, false, 10), ring_ip = row(1024, true, 11);
  ring.algorithm = ring_ip.algorithm = "ring";
  Measurement pick = row(1024, false, 5), pick_ip = row(1024, true, 6);
  pick.algorithm = pick_ip.algorithm = "recursive_doubling";
  pick.requested_algorithm = pick_ip.requested_algorithm = "auto";
  Measurement bruck = row(2048, false, 7);
  bruck.algorithm = "bruck";
  Measurement tree = row(2048, false, 8);
  tree.algorithm = "tree";
  std::string out = render({ring, ring_ip, pick, pick_ip, bruck, tree}, {1, 0, 4}, true);
  std::vector<std::string> data = dataLines(out);
  ASSERT_EQ(data.size(), 4u) << out;
  std::vector<std::string> last;
  std::vector<size_t> widths;
  for (const std::string& d : data) {
    last.push_back(d.substr(d.find_last_of(' ') + 1));
    widths.push_back(d.find_last_of(' '));
  }
  EXPECT_EQ(last, (std::vector<std::string>{"ring", "auto", "bruck", "tree"}));
  EXPECT_EQ(widths, std::vector<size_t>(4, widths[0])) << out;
  EXPECT_NE(out.find("algorithm\n"), std::string::npos) << out;
  // Without --interleave the table is nccl-tests' (no extra column).
  std::string plain = render({ring, ring_ip}, {1, 0, 2});
  EXPECT_EQ(plain.find("algorithm"), std::string::npos);
  EXPECT_EQ(dataLines(plain)[0].find("ring"), std::string::npos);
}

// --placement: a row with only one half prints "-" in the other half's columns, so a scraper
// reading nccl-tests' column positions never takes an in-place time for an out-of-place one.
TEST(TableWriterTest, ARowWithOneHalfDashesTheOther) {
  auto columns = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> c;
    for (std::string x; in >> x;) c.push_back(x);
    return c;
  };
  std::vector<std::string> in_only =
      dataLines(render({row(1024, true, 20), row(2048, true, 30)}, {}));
  ASSERT_EQ(in_only.size(), 2u);
  std::vector<std::string> c = columns(in_only[0]);
  ASSERT_EQ(c.size(), 17u) << in_only[0];
  EXPECT_EQ(c[0], "1024");
  EXPECT_EQ((std::vector<std::string>(c.begin() + 5, c.begin() + 9)),
            (std::vector<std::string>{"-", "-", "-", "-"}));  // out-of-place half
  EXPECT_EQ(c[9], "20.00");                                   // in-place time
  EXPECT_EQ(c[13], "-");                                      // out-of-place p50
  EXPECT_EQ(columns(in_only[1])[9], "30.00");
  std::vector<std::string> out_only = dataLines(render({row(1024, false, 10)}, {}));
  ASSERT_EQ(out_only.size(), 1u);
  c = columns(out_only[0]);
  EXPECT_EQ(c[5], "10.00");
  EXPECT_EQ(c[9], "-");  // in-place time
}

// A section (a note, an algorithm's heading) ends a row still waiting for its in-place half, so
// the row is printed before the heading of what comes after it.
TEST(TableWriterTest, SectionFlushesAPendingRowFirst) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  TableWriter w(f);
  w.onRun(RunMetadata{});
  w.onMeasurement(row(64, false, 3));
  w.onSection("algorithm: tree");
  w.onEnd({});
  std::fclose(f);
  std::string out(buf, len);
  free(buf);
  size_t r = out.find("\n          64"), s = out.find("# algorithm: tree");
  ASSERT_NE(r, std::string::npos) << out;
  ASSERT_NE(s, std::string::npos) << out;
  EXPECT_LT(r, s) << out;
}

}  // namespace
}  // namespace ccscope::reports
