// MemoryRegion's bounds-checked views and Registration's lifetime (transports/README.md,
// "Memory"), in one process: a fake transport counts what is registered and deregistered.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "transports/memory.h"
#include "transports/transport.h"

namespace ccscope::transports {
namespace {

using core::Code;
using core::Status;

TEST(MemoryRegionTest, SliceAndFromStayInsideTheRegion) {
  std::vector<char> mem(100);
  MemoryRegion mr(mem.data(), mem.size(), MemoryKind::kHost, -1, 7, MemoryKeys{1, 2, nullptr});
  auto v = mr.slice(10, 20);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v->base(), mem.data() + 10);
  EXPECT_EQ(v->len(), 20u);
  EXPECT_EQ(v->offset(), 10u);
  EXPECT_EQ(v->id(), 7u);
  EXPECT_EQ(v->keys().rkey, 2u);
  // A view of a view: offsets add up, bounds are the inner view's.
  auto w = v->slice(5, 15);
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  EXPECT_EQ(w->base(), mem.data() + 15);
  EXPECT_EQ(w->offset(), 15u);
  EXPECT_FALSE(v->slice(5, 16).isOk());
  auto rest = mr.from(90);
  ASSERT_TRUE(rest.isOk());
  EXPECT_EQ(rest->len(), 10u);
  auto end = mr.from(100);
  ASSERT_TRUE(end.isOk());
  EXPECT_EQ(end->len(), 0u);
  EXPECT_TRUE(mr.slice(100, 0).isOk());
}

TEST(MemoryRegionTest, ViewsThatWouldOverrunFailNamingTheRegion) {
  std::vector<char> mem(100);
  MemoryRegion mr(mem.data(), mem.size(), MemoryKind::kHost, -1, 7, MemoryKeys{});
  const std::pair<size_t, size_t> bad[] = {{0, 101},      {99, 2},       {101, 0},
                                           {1, SIZE_MAX}, {SIZE_MAX, 2}, {SIZE_MAX, 0}};
  for (auto [off, len] : bad) {
    auto v = mr.slice(off, len);
    ASSERT_FALSE(v.isOk()) << len << " B at " << off;
    EXPECT_EQ(v.status().code(), Code::kInvalidArgument);
    EXPECT_NE(v.status().message().find("overrun memory region 7 of 100 B"), std::string::npos)
        << v.status().toString();
    EXPECT_FALSE(mr.contains(off, len));
  }
  EXPECT_FALSE(mr.from(101).isOk());
  EXPECT_FALSE(mr.from(SIZE_MAX).isOk());
}

TEST(MemoryRegionTest, KindSetsNameWhatTheyHold) {
  MemoryKinds host{MemoryKind::kHost};
  EXPECT_TRUE(host.has(MemoryKind::kHost));
  EXPECT_FALSE(host.has(MemoryKind::kCuda));
  EXPECT_EQ(host.names(), "host");
  EXPECT_EQ((MemoryKinds{MemoryKind::kHost, MemoryKind::kCuda}).names(), "host, cuda");
  EXPECT_EQ(MemoryKinds{}.names(), "nothing");
}

// What the fake transport saw; outlives the transport.
struct Log {
  int registered = 0;
  std::vector<uint32_t> deregistered;  // region ids
};

class FakeTransport final : public Transport {
 public:
  explicit FakeTransport(Log* log) : log_(log) {}
  const char* name() const override { return "fake"; }
  Capabilities caps() const override {
    Capabilities c;
    c.memory_kinds = {MemoryKind::kHost, MemoryKind::kHostPinned};
    return c;
  }
  Status connect(launch::Bootstrap& /*bootstrap*/, core::Deadline /*deadline*/) override {
    return Status::ok();
  }
  Status progress() override { return Status::ok(); }
  void abortPeer(int /*peer*/, const Status& /*why*/) override {}
  void close() override {}

 protected:
  void blockFor(int64_t /*max_ns*/) override {}
  core::Result<MemoryKeys> doRegister(char* /*base*/, size_t /*len*/, MemoryKind /*kind*/,
                                      int /*device*/) override {
    ++log_->registered;
    return MemoryKeys{3, 4, nullptr};
  }
  void doDeregister(const MemoryRegion& mr) override { log_->deregistered.push_back(mr.id()); }
  core::Result<Request> doPost(Dir /*dir*/, int /*peer*/, uint32_t /*tag*/,
                               const MemoryRegion& /*view*/) override {
    return Status(Code::kInternal, "not used");
  }
  void cancelPending(uint32_t /*slot*/) override {}

 private:
  Log* log_;
};

TEST(RegistrationTest, DeregistersOnceWhenItGoes) {
  Log log;
  FakeTransport t(&log);
  std::vector<char> mem(64);
  uint32_t id = 0;
  {
    auto r = t.registerMemory(mem.data(), mem.size(), MemoryKind::kHostPinned);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->region().kind(), MemoryKind::kHostPinned);
    EXPECT_EQ(r->region().keys().lkey, 3u);
    id = r->region().id();
    Registration moved = std::move(*r);  // the moved-from one must not deregister
    EXPECT_TRUE(moved.registered());
    EXPECT_FALSE(r->registered());
  }
  EXPECT_EQ(log.registered, 1);
  EXPECT_EQ(log.deregistered, std::vector<uint32_t>{id});
  auto again = t.registerMemory(mem.data(), mem.size());
  ASSERT_TRUE(again.isOk());
  EXPECT_NE(again->region().id(), id);
  again->reset();
  again->reset();
  EXPECT_EQ(log.deregistered.size(), 2u);
}

TEST(RegistrationTest, RefusesKindsTheTransportDoesNotMove) {
  Log log;
  FakeTransport t(&log);
  std::vector<char> mem(64);
  auto r = t.registerMemory(mem.data(), mem.size(), MemoryKind::kCuda, 0);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "fake cannot move cuda memory (it moves host, host-pinned)");
  EXPECT_EQ(log.registered, 0);
  EXPECT_FALSE(t.registerMemory(nullptr, 8).isOk());
}

TEST(RegistrationTest, OutlivingItsTransportDoesNothing) {
  Log log;
  std::vector<char> mem(64);
  auto t = std::make_unique<FakeTransport>(&log);
  auto r = t->registerMemory(mem.data(), mem.size());
  ASSERT_TRUE(r.isOk());
  Registration kept = std::move(*r);
  t.reset();
  EXPECT_TRUE(kept.registered());
  kept.reset();
  EXPECT_FALSE(kept.registered());
  EXPECT_TRUE(log.deregistered.empty());
}

}  // namespace
}  // namespace ccscope::transports
