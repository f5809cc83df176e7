// A narrow seam for executor unit tests: a transport whose requests finish only when the test
// (or a script run from progress()) says so, in any order, with failures or never, and which logs
// every post, batch bracket, completion and cancel; a stream-ordered compute backend that runs
// its steps only when told; and a mailbox that joins ranks running on threads. Together they
// test ordering, windows, batches and failure paths of the executor without processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "collectives/compute.h"
#include "collectives/executor.h"
#include "collectives/schedule.h"
#include "transports/transport.h"

namespace ccscope::collectives::testing {

struct ScriptedOptions {
  bool stream_ordered = false;
  uint32_t max_inflight_per_peer = 64;
  bool verifies_tags = true;
  uint32_t request_slots = 0;  // 0: the table's default
};

enum class PostState : uint8_t {
  kPending,
  kDone,
  kFailed,
  kSink,     // a cancelled receive kept in the matching order (it still holds its slot)
  kDropped,  // cancelled and dropped from the transport (the slot is free)
};

struct Posted {
  transports::Dir dir = transports::Dir::kSend;
  int peer = -1;
  uint32_t tag = 0;  // as posted: the executor's channel and call number included
  size_t len = 0;
  char* buf = nullptr;
  int batch = -1;  // the batch the post went in; -1: outside every batch
  transports::Request req;
  PostState state = PostState::kPending;
  uint32_t scheduleTag() const { return tag & 0xffffff; }  // the executor's low 24 bits
};

enum class EventKind : uint8_t { kBeginBatch, kEndBatch, kPost, kComplete, kFail, kCancel };

struct Event {
  EventKind kind;
  size_t post;  // index into posts(); SIZE_MAX for batch brackets
};

class ScriptedTransport final : public transports::Transport {
 public:
  // Run from progress() (so from every wait), never re-entered.
  using Script = std::function<void(ScriptedTransport&)>;
  explicit ScriptedTransport(ScriptedOptions o = {});

  // Ready to post as `rank` of `size`, without a bootstrap.
  void open(int rank, int size);
  const char* name() const override { return "scripted"; }
  transports::Capabilities caps() const override;
  core::Status connect(launch::Bootstrap& bootstrap, core::Deadline deadline) override;
  void beginBatch() override;
  core::Status endBatch() override;
  core::Status progress() override;
  void abortPeer(int peer, const core::Status& why) override;
  void close() override;

  void setScript(Script s) { script_ = std::move(s); }
  // Sends finish inside postSend, as tcp's often do: before the poster ever waits.
  void setCompleteSendsAtPost(bool on) { sends_at_post_ = on; }
  const std::vector<Posted>& posts() const { return posts_; }
  const std::vector<Event>& events() const { return events_; }
  std::vector<size_t> pending() const;  // indices of posts still pending, in posting order
  size_t progressCalls() const { return progress_calls_; }
  // Finishes post `i` (false if it is not pending); a receive first gets `data` written.
  bool complete(size_t i, std::span<const char> data = {});
  bool fail(size_t i, core::Status why);
  // Where a request (as posted) is in the log; SIZE_MAX if not found.
  size_t indexOf(transports::Request r) const;

 protected:
  void blockFor(int64_t max_ns) override;
  core::Result<transports::Request> doPost(transports::Dir dir, int peer, uint32_t tag,
                                           const transports::MemoryRegion& view) override;
  void cancelPending(uint32_t slot) override;

 private:
  ScriptedOptions opts_;
  Script script_;
  bool in_script_ = false;
  bool in_batch_ = false;
  bool sends_at_post_ = false;
  int batches_ = 0;
  size_t progress_calls_ = 0;
  std::vector<Posted> posts_;
  std::vector<Event> events_;
  std::vector<size_t> post_of_slot_;  // the latest post in each request slot
};

// The wire between ranks running on threads: each rank's script ships its pending sends and fills
// its pending receives from here, touching only its own transport (tables are single-threaded).
class Mailbox {
 public:
  // Ships and matches what it can for `t`, then completes at most `per_call` of the requests
  // ready to finish, last-posted first when `reverse` (one at a time lets the executor see each).
  void pump(ScriptedTransport& t, bool reverse, size_t per_call = SIZE_MAX);

 private:
  struct Message {
    uint32_t tag;
    std::vector<char> bytes;
  };
  void match(ScriptedTransport& t, std::map<size_t, std::vector<char>>& ready);
  std::mutex mu_;
  std::map<std::pair<int, int>, std::deque<Message>> queues_;  // (from, to) -> FIFO
  // Per rank: posts shipped or matched, not completed yet -> a receive's bytes.
  std::map<int, std::map<size_t, std::vector<char>>> ready_;
};

// A stream-ordered compute backend: steps are enqueued by start() and run (with the CPU
// kernels) only when the test says, in enqueue order, as a device stream would.
class ScriptedCompute final : public ComputeBackend {
 public:
  struct Started {
    LocalStep step;
    uint32_t token;
    size_t posts_before;  // the transport's posts when it was enqueued
  };
  explicit ScriptedCompute(const ScriptedTransport& t, bool stream_ordered = true)
      : t_(t), stream_ordered_(stream_ordered) {}
  const char* name() const override { return "scripted"; }
  transports::MemoryKinds memoryKinds() const override { return {transports::MemoryKind::kHost}; }
  bool streamOrdered() const override { return stream_ordered_; }
  core::Status bind(core::DataType dtype, core::ReduceOp op, int ranks) override {
    return cpu_.bind(dtype, op, ranks);
  }
  core::Result<bool> start(const LocalStep& s, uint32_t token) override {
    started_.push_back({s, token, t_.posts().size()});
    return false;
  }
  bool anyFinished() const override { return !finished_.empty(); }
  bool nextFinished(uint32_t* token) override;
  // Runs the oldest enqueued step that has not run; false when none is waiting.
  bool runNext();
  const std::vector<Started>& started() const { return started_; }
  size_t ran() const { return ran_; }

 private:
  const ScriptedTransport& t_;
  bool stream_ordered_;
  CpuCompute cpu_;
  std::vector<Started> started_;
  size_t ran_ = 0;
  std::deque<uint32_t> finished_;
};

// A schedule written op by op with explicit dependencies: these tests need orders and shapes
// that ScheduleBuilder (which derives every hazard) would not produce on its own.
class HandSchedule {
 public:
  HandSchedule(int rank, int ranks, uint64_t scratch_elems);
  uint32_t send(int peer, uint32_t tag, Span src, uint64_t count,
                const std::vector<uint32_t>& deps = {});
  uint32_t recv(int peer, uint32_t tag, Span dst, uint64_t count,
                const std::vector<uint32_t>& deps = {});
  uint32_t reduce(Span dst, Span a, Span b, uint64_t count, const std::vector<uint32_t>& deps = {});
  Schedule finish();

 private:
  uint32_t add(Op op, const std::vector<uint32_t>& deps);
  Schedule s_;
};

// One rank of a test: a scripted transport, registered float buffers and an executor.
struct ScriptedRank {
  ScriptedRank(int rank, int size, size_t elems, ScriptedOptions o = {});
  Buffers buffers() const;
  // Prepares the executor for `s` (kept here) over floats, summing.
  void prepare(Schedule s);
  core::Status run(core::Deadline deadline, core::FlightEntry* fe = nullptr) {
    return ex.run(t, buffers(), deadline, fe);
  }

  ScriptedTransport t;
  std::vector<float> in, out, scratch;
  transports::Registration in_reg, out_reg, scratch_reg;
  Schedule sched;
  Executor ex;
};

}  // namespace ccscope::collectives::testing
