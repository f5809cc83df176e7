// The one executor: runs any Schedule over any Transport. prepare() sizes every array once;
// run() allocates nothing, posts each pair's messages in schedule order, runs local reductions
// as soon as their inputs arrived, and waits (spin, then block) only when nothing is ready.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "collectives/schedule.h"
#include "core/deadline.h"
#include "core/dtype.h"
#include "core/flight_record.h"
#include "core/status.h"
#include "transports/transport.h"

namespace ccscope::collectives {

struct Buffers {
  transports::MemoryRegion input, output, scratch;
};

class Executor {
 public:
  // Binds a schedule (kept by reference: it must outlive the executor's use of it).
  // `channel` separates independent executors' messages (0: the measured collective, 1: the
  // harness's own barriers and statistics) in the tags.
  void prepare(const Schedule& s, core::DataType dtype, core::ReduceOp op, uint32_t channel = 0);
  // Runs the bound schedule once. The deadline covers the whole collective. When `fe` is given,
  // progress (ops done, the peer waited on, bytes moved) is written into it as it happens.
  core::Status run(transports::Transport& t, const Buffers& bufs, core::Deadline deadline,
                   core::FlightEntry* fe = nullptr);
  size_t opCount() const { return sched_ ? sched_->ops.size() : 0; }
  // Test-only fault injection: after the next run, flip the low bit of the first element of an
  // op that wrote this rank's output, so this rank's result is wrong (exact checks must see it).
  void corruptNextResult() { corrupt_ = true; }

 private:
  // Before each run: no op done, the ops without dependencies ready.
  void resetRun();
  void onReady(uint32_t op);
  void markDone(uint32_t op);
  // Posts every comm op whose turn in its lane came and whose inputs are ready.
  core::Status postReadyComms(transports::Transport& t, const Buffers& bufs);
  core::Status postComm(transports::Transport& t, const Buffers& bufs, uint32_t op);
  // After a wait: releases the finished requests and marks their ops done.
  core::Status releaseFinished(transports::Transport& t);
  // After a failed wait: the unfinished send that moved last longest ago, into the record.
  void recordStuckSend(transports::Transport& t, core::FlightEntry& fe) const;
  void runLocal(const Buffers& bufs, uint32_t op);
  void corruptFirstElement(char* dst);
  char* addr(const Buffers& bufs, const Span& s) const;

  const Schedule* sched_ = nullptr;
  size_t elem_ = 1;
  ReduceFn reduce_ = nullptr;
  ScaleFn scale_ = nullptr;
  core::DataType dtype_ = core::DataType::kFloat;
  bool corrupt_ = false;
  uint32_t channel_ = 0;
  uint32_t corrupt_op_ = UINT32_MAX;  // an op writing the output: its first element is flipped

  std::vector<uint32_t> remaining_;    // unmet dependencies per op
  std::vector<uint8_t> ready_;         // dependencies met (comm ops wait for their turn)
  std::vector<uint32_t> local_queue_;  // ready local ops (stack)
  // Per (peer, direction): the schedule's comm ops in order, and how many were posted.
  std::vector<std::vector<uint32_t>> lanes_;
  std::vector<uint32_t> lane_of_, lane_cursor_;
  std::vector<transports::Request> outstanding_;
  std::vector<uint32_t> outstanding_op_;
  uint32_t done_ = 0;
  uint64_t calls_ = 0;
};

}  // namespace ccscope::collectives
