#include "collectives/harness_channel.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace ccscope::collectives {

using core::Status;

namespace {
constexpr size_t kAuxElems = 4096;  // doubles reduced per pass; longer vectors take several
// On its own transport nothing else posts; over a shared one, channel 1 keeps the harness's tags
// apart from the measured collectives' (channel 0).
constexpr uint32_t kTagChannel = 1;
}  // namespace

HarnessChannel::HarnessChannel(transports::Transport& t, std::unique_ptr<transports::Transport> own)
    : own_(std::move(own)), t_(t) {}

HarnessChannel::~HarnessChannel() = default;

core::Result<std::unique_ptr<HarnessChannel>> HarnessChannel::create(
    std::unique_ptr<transports::Transport> own) {
  transports::Transport& t = *own;
  std::unique_ptr<HarnessChannel> h(new HarnessChannel(t, std::move(own)));
  CCSCOPE_RETURN_IF_ERROR(h->init());
  return h;
}

core::Result<std::unique_ptr<HarnessChannel>> HarnessChannel::sharing(transports::Transport& t) {
  std::unique_ptr<HarnessChannel> h(new HarnessChannel(t, nullptr));
  CCSCOPE_RETURN_IF_ERROR(h->init());
  return h;
}

Status HarnessChannel::init() {
  // The vector reduced, then the ring's scratch (a chunk of it per rank, and one element more).
  aux_ = core::HostBuffer(2 * kAuxElems * sizeof(double) + 4096);
  CCSCOPE_ASSIGN_OR_RETURN(aux_reg_, t_.registerMemory(aux_.data(), aux_.size()));
  barrier_sched_ = barrierSchedule(t_.rank(), t_.size());
  barrier_exec_.prepare(barrier_sched_, core::DataType::kUint8, core::ReduceOp::kSum, kTagChannel);
  return Status::ok();
}

Status HarnessChannel::runRecorded(Executor& ex, const Buffers& b, const char* op, const char* algo,
                                   const char* dtype, uint64_t bytes, core::Deadline deadline) {
  return ex.runRecorded(t_, b, deadline, recorder_, op, algo, dtype, bytes);
}

Status HarnessChannel::barrier(core::Deadline deadline) {
  const transports::MemoryRegion& aux = aux_reg_.region();
  return runRecorded(barrier_exec_, Buffers{aux, aux, aux}, core::kHarnessBarrier, "dissemination",
                     "none", 0, deadline)
      .prepend("harness barrier");
}

Status HarnessChannel::allreduce(void* data, size_t count, core::DataType dt, core::ReduceOp op,
                                 core::Deadline deadline) {
  // Vectors longer than the aux buffer (one latency sample per iteration with -n 20000) are
  // reduced a buffer-full at a time; every rank passes the same count, so the chunks line up.
  const size_t elem = core::dataTypeSize(dt);
  const size_t per_chunk = kAuxElems * sizeof(double) / elem;
  auto* bytes_at = static_cast<unsigned char*>(data);
  const transports::MemoryRegion& in = aux_reg_.region();
  CCSCOPE_ASSIGN_OR_RETURN(transports::MemoryRegion scratch, in.from(kAuxElems * sizeof(double)));
  size_t done = 0;
  do {
    const size_t n = std::min(per_chunk, count - done);
    std::memcpy(aux_.data(), bytes_at + done * elem, n * elem);
    if (n != reduce_count_) {  // the same few lengths come back at every size of a sweep
      reduce_sched_ = ringAllreduceSchedule(t_.rank(), t_.size(), n, n + 1, false);
      reduce_count_ = n;
    }
    reduce_exec_.prepare(reduce_sched_, dt, op, kTagChannel);
    CCSCOPE_RETURN_IF_ERROR(runRecorded(reduce_exec_, Buffers{in, in, scratch}, "allreduce",
                                        core::kHarnessReduction, core::dataTypeName(dt), n * elem,
                                        deadline)
                                .prepend("harness statistics reduction"));
    std::memcpy(bytes_at + done * elem, aux_.data(), n * elem);
    done += n;
  } while (done < count);
  return Status::ok();
}

Status HarnessChannel::maxDoubles(std::span<double> v, core::Deadline deadline) {
  return allreduce(v.data(), v.size(), core::DataType::kDouble, core::ReduceOp::kMax, deadline);
}

Status HarnessChannel::sumInts(std::span<int64_t> v, core::Deadline deadline) {
  return allreduce(v.data(), v.size(), core::DataType::kInt64, core::ReduceOp::kSum, deadline);
}

}  // namespace ccscope::collectives
