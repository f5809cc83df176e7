// The line above the table when the measured transport cannot verify tags: a rank one collective
// ahead of its peers would show only as wrong data, so the user is told to keep checking. A
// one-rank transport stands in; only its capabilities matter here.
#include <gtest/gtest.h>

#include <string>

#include "collectives/schedule_backend.h"

namespace ccscope::collectives {
namespace {

using core::Status;

class OneRankTransport final : public transports::Transport {
 public:
  explicit OneRankTransport(bool verifies_tags) : verifies_tags_(verifies_tags) { initTable(0, 1); }
  const char* name() const override { return "fake"; }
  transports::Capabilities caps() const override {
    transports::Capabilities c;
    c.verifies_tags = verifies_tags_;
    return c;
  }
  Status connect(launch::Bootstrap&, core::Deadline) override { return Status::ok(); }
  Status progress() override { return Status::ok(); }
  void abortPeer(int, const Status&) override {}
  void close() override {}

 protected:
  void blockFor(int64_t) override {}
  core::Result<transports::Request> doPost(transports::Dir, int, uint32_t,
                                           const transports::MemoryRegion&) override {
    return Status(core::Code::kUnsupported, "a one-rank transport has no peers");
  }
  void cancelPending(uint32_t) override {}

 private:
  bool verifies_tags_;
};

std::string setupNote(bool verifies_tags, const std::string& algorithm) {
  OneRankTransport t(verifies_tags);
  AlgorithmOptions o;
  o.algorithm = algorithm;
  auto b = ScheduleBackend::create(t, o);
  EXPECT_TRUE(b.isOk()) << b.status().toString();
  return b.isOk() ? (*b)->setupNote() : "";
}

TEST(ScheduleBackendNoteTest, TransportWithoutTagChecksIsNamedAboveTheTable) {
  const std::string note = setupNote(false, "ring");
  EXPECT_NE(note.find("fake does not verify message tags"), std::string::npos) << note;
  EXPECT_NE(note.find("only as wrong data (keep -c on)"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos) << "one line: " << note;
}

TEST(ScheduleBackendNoteTest, TransportThatVerifiesTagsAddsNothing) {
  EXPECT_EQ(setupNote(true, "ring"), "");
}

TEST(ScheduleBackendNoteTest, AutoKeepsItsCalibrationLineAndAddsTheTagLineBelow) {
  const std::string note = setupNote(false, "auto");
  const size_t nl = note.find('\n');
  ASSERT_NE(nl, std::string::npos) << note;
  EXPECT_EQ(note.rfind("auto: cost model calibrated", 0), 0u) << note;
  EXPECT_NE(note.find("does not verify message tags", nl), std::string::npos) << note;
  EXPECT_EQ(setupNote(true, "auto").find('\n'), std::string::npos);
}

}  // namespace
}  // namespace ccscope::collectives
