// An algorithm as data: a pure schedule of sends, receives and local reductions with explicit
// dependencies, built once per (rank, ranks, count, segment) outside the timed loop and run by
// the one executor. Schedules never see a transport, so they are unit-tested on their own.
// Schedules are written with ScheduleBuilder (schedule_builder.h), which derives every
// dependency from the memory the ops touch; this header is the data the executor reads.
//
// Matching rule the executor relies on: sends to one peer, and receives from one peer, are
// posted in schedule order, and every schedule emits a pair's messages in the same order on
// both sides (per-peer FIFO, docs/architecture.md, "Transport contract").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ccscope::collectives {

enum class OpKind : uint8_t { kSend, kRecv, kReduce, kCopy, kScale };
enum class Buf : uint8_t { kInput, kOutput, kScratch };

struct Span {
  Buf buf = Buf::kOutput;
  uint64_t offset = 0;  // elements
};

struct Op {
  OpKind kind = OpKind::kCopy;
  int peer = -1;       // send/recv
  uint32_t tag = 0;    // send/recv: the pair's message index, equal on both sides
  Span dst{};          // recv target; reduce/copy/scale destination
  Span a{};            // send source; reduce first operand; copy source
  Span b{};            // reduce second operand (dst = a op b)
  uint64_t count = 0;  // elements
  uint32_t dep_begin = 0, dep_count = 0;    // into Schedule::deps
  uint32_t next_begin = 0, next_count = 0;  // into Schedule::dependents (filled by finalize)
};

struct Schedule {
  int rank = 0;
  int ranks = 1;
  uint64_t count = 0;          // elements per rank's input (collective-specific meaning)
  uint64_t scratch_elems = 0;  // scratch the executor must provide
  std::vector<Op> ops;
  std::vector<uint32_t> deps;
  std::vector<uint32_t> dependents;

  // Rebuilds the dependents lists from `deps` (ScheduleBuilder::finish does; a test that edits
  // `deps` by hand calls it again).
  void finalize();
};

// Splits `count` elements into `parts` nearly equal contiguous parts: part i is
// [partOffset(i), partOffset(i+1)).
inline uint64_t partOffset(uint64_t count, int parts, int i) {
  uint64_t base = count / parts, extra = count % parts;
  uint64_t ui = static_cast<uint64_t>(i);
  return ui * base + (ui < extra ? ui : extra);
}

// Ring allreduce: reduce-scatter then allgather, each chunk cut into segments of
// `segment_elems` so the reduction of one segment overlaps the transfer of the next.
// `avg` adds the final scaling on the owned chunk.
Schedule ringAllreduceSchedule(int rank, int ranks, uint64_t count, uint64_t segment_elems,
                               bool avg);
// Dissemination barrier: ceil(log2 n) rounds of zero-byte messages.
Schedule barrierSchedule(int rank, int ranks);

}  // namespace ccscope::collectives
