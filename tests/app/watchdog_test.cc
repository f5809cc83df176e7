#include "app/watchdog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ccscope::app {
namespace {

using collectives::CollectiveBackend;
using core::Deadline;
using core::Status;

// Records every call that reaches it, and answers with values no default of the base class
// gives, so a method the wrapper does not forward shows up either way.
class FakeBackend final : public CollectiveBackend {
 public:
  explicit FakeBackend(std::set<std::string>& calls) : calls_(calls) {}
  std::string algorithm() const override { return hit("algorithm", "fake-algo"); }
  std::string chosenAlgorithm() const override { return hit("chosenAlgorithm", "fake-chosen"); }
  std::string choiceNote() const override { return hit("choiceNote", "fake-why"); }
  std::string setupNote() const override { return hit("setupNote", "fake-setup"); }
  std::string transport() const override { return hit("transport", "fake-transport"); }
  int rank() const override { return hit("rank", 3); }
  int size() const override { return hit("size", 7); }
  Status allocate(size_t, core::HostPages) override { return hit("allocate", Status::ok()); }
  // Shares only with its own kind, as a real backend does.
  bool shareBuffers(CollectiveBackend& other, size_t) override {
    return hit("shareBuffers", dynamic_cast<FakeBackend*>(&other) != nullptr);
  }
  std::string allocationNote() const override { return hit("allocationNote", "fake-alloc"); }
  char* sendBuffer() override { return hit("sendBuffer", &send_); }
  char* recvBuffer() override { return hit("recvBuffer", &recv_); }
  collectives::DeviceRuntime* device() override {
    return hit("device", static_cast<collectives::DeviceRuntime*>(nullptr));
  }
  std::string dataPath() const override { return hit("dataPath", "fake-path"); }
  uint64_t segmentBytes() const override { return hit("segmentBytes", uint64_t{4096}); }
  Status prepare(const collectives::OpConfig&) override { return hit("prepare", Status::ok()); }
  Status run(bool, Deadline) override { return hit("run", Status::ok()); }
  bool capturable() const override { return hit("capturable", true); }
  Status enqueue(bool, Deadline) override { return hit("enqueue", Status::ok()); }
  Status drain(Deadline, const std::function<core::Result<bool>()>&) override {
    return hit("drain", Status::ok());
  }
  Status barrier(Deadline) override { return hit("barrier", Status::ok()); }
  Status maxDoubles(std::span<double>, Deadline) override {
    return hit("maxDoubles", Status::ok());
  }
  Status sumInts(std::span<int64_t>, Deadline) override { return hit("sumInts", Status::ok()); }
  void corruptNextResult() override { calls_.insert("corruptNextResult"); }
  void setFlightRecorder(core::FlightRecorder* r) override {
    calls_.insert("setFlightRecorder");
    recorder_ = r;
  }
  core::FlightRecorder* recorder() const { return recorder_; }

 private:
  template <typename T>
  T hit(const char* name, T value) const {
    calls_.insert(name);
    return value;
  }
  std::set<std::string>& calls_;
  char send_ = 0, recv_ = 0;
};

// The virtual methods collective_backend.h declares, read from the header itself: a virtual
// added there without a forward in WatchedBackend (and a call below) fails this test.
std::set<std::string> declaredVirtuals() {
  std::ifstream in(CCSCOPE_SOURCE_DIR "/collectives/collective_backend.h");
  std::stringstream text;
  std::string line;
  while (std::getline(in, line)) text << line.substr(0, line.find("//")) << '\n';
  std::string code = text.str();
  std::set<std::string> names;
  static const std::regex kVirtual(R"(virtual\s[^;{}()]*?([A-Za-z_]\w*)\s*\()");
  for (std::sregex_iterator it(code.begin(), code.end(), kVirtual), end; it != end; ++it)
    names.insert((*it)[1]);
  names.erase("CollectiveBackend");  // the destructor
  return names;
}

TEST(WatchedBackendTest, EveryVirtualReachesTheInnerBackend) {
  std::set<std::string> calls;
  auto inner = std::make_unique<FakeBackend>(calls);
  FakeBackend* fake = inner.get();
  Watchdog dog(3600, [](double) { std::abort(); });
  std::unique_ptr<CollectiveBackend> w = watched(std::move(inner), dog);
  FakeBackend other(calls);
  std::vector<double> d(2);
  std::vector<int64_t> i(2);
  core::FlightRecorder rec;

  EXPECT_EQ(w->algorithm(), "fake-algo");
  EXPECT_EQ(w->chosenAlgorithm(), "fake-chosen");
  EXPECT_EQ(w->choiceNote(), "fake-why");
  EXPECT_EQ(w->setupNote(), "fake-setup");
  EXPECT_EQ(w->transport(), "fake-transport");
  EXPECT_EQ(w->rank(), 3);
  EXPECT_EQ(w->size(), 7);
  EXPECT_TRUE(w->allocate(64, core::HostPages::kBase).isOk());
  EXPECT_TRUE(w->shareBuffers(other, 64));
  EXPECT_EQ(w->allocationNote(), "fake-alloc");
  EXPECT_NE(w->sendBuffer(), nullptr);
  EXPECT_NE(w->recvBuffer(), nullptr);
  EXPECT_EQ(w->device(), nullptr);
  EXPECT_EQ(w->dataPath(), "fake-path");
  EXPECT_EQ(w->segmentBytes(), 4096u);
  EXPECT_TRUE(w->prepare(collectives::OpConfig{}).isOk());
  EXPECT_TRUE(w->run(false, Deadline::afterSeconds(5)).isOk());
  EXPECT_TRUE(w->capturable());
  EXPECT_TRUE(w->enqueue(false, Deadline::afterSeconds(5)).isOk());
  EXPECT_TRUE(w->drain(Deadline::afterSeconds(5), [] { return core::Result<bool>(true); }).isOk());
  EXPECT_TRUE(w->barrier(Deadline::afterSeconds(5)).isOk());
  EXPECT_TRUE(w->maxDoubles(d, Deadline::afterSeconds(5)).isOk());
  EXPECT_TRUE(w->sumInts(i, Deadline::afterSeconds(5)).isOk());
  w->corruptNextResult();
  w->setFlightRecorder(&rec);
  EXPECT_EQ(fake->recorder(), &rec);

  std::set<std::string> declared = declaredVirtuals();
  ASSERT_TRUE(declared.count("run") && declared.count("setFlightRecorder"))
      << "collective_backend.h not read from " CCSCOPE_SOURCE_DIR;
  for (const std::string& name : declared)
    EXPECT_TRUE(calls.count(name))
        << "CollectiveBackend::" << name << " did not reach the wrapped backend";
}

// Two watched backends of one sweep share buffers as their inner backends would.
TEST(WatchedBackendTest, SharesBuffersWithAnotherWatchedBackend) {
  std::set<std::string> calls;
  Watchdog dog(3600, [](double) { std::abort(); });
  auto a = watched(std::make_unique<FakeBackend>(calls), dog);
  auto b = watched(std::make_unique<FakeBackend>(calls), dog);
  EXPECT_TRUE(a->shareBuffers(*b, 64));
}

}  // namespace
}  // namespace ccscope::app
