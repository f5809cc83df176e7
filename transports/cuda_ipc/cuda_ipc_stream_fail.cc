// The CUDA-IPC stream path when a peer fails, aborts or closes: what already finished, the
// reason a receiver gave, the waits the rank's stream has on that peer released and drained.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "transports/common/pair_errors.h"
#include "transports/cuda_ipc/cuda_ipc_impl.h"

namespace ccscope::transports::cuda_ipc {

using core::Code;
using core::Layer;
using core::Status;

// Why `p` refused the last message this rank sent it, in the words the host path uses.
Status CudaIpcTransport::rejectStatus(int p) {
  PairOut& out = outPair(p);
  const uint32_t why = loadWord(out.reject);
  const Desc& d = out.ring[(loadWord(out.taken) - 1) % kRing];
  return (why == kRejectTag ? tagMismatchStatus(p, rank_, out.reject_tag, d.tag)
                            : tooLongStatus(p, rank_, d.len, out.reject_len))
      .withPeer(p);
}

// Before a failing peer's waits are released: the requests with it whose work ran, as the
// flags prove (a receive: this rank's stream wrote its "done" after the copy; a send: the peer
// wrote its "done"), finish as done; a batch's event may not have been polled yet, and a peer
// that closed after its last message must not fail a message that arrived.
void CudaIpcTransport::completeByFlags(int p) {
  auto proven = [&](const Pending& x) {
    PairOut& pair = x.dir == Dir::kRecv ? inPair(p) : outPair(p);
    return reached(loadWord(pair.done), x.msg + 1);
  };
  auto finish = [&](const Pending& x) {
    RequestRecord& rec = table_->slot(x.slot);
    if (x.peer != p || rec.gen != x.gen || rec.state != ReqState::kPending || !proven(x)) return;
    table_->addBytes(x.slot, rec.len);
    table_->complete(x.slot);
  };
  for (const Enqueued& b : enqueued_)
    for (const Pending& x : b.reqs) finish(x);
  for (const Pending& x : peers_[p].host_sends) finish(x);
}

// A peer that gave the pair up, or closed, as its flag words say.
void CudaIpcTransport::checkAborts() {
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || peers_[p].dead) continue;
    const uint32_t w = std::max(loadWord(inPair(p).abort), loadWord(outPair(p).abort));
    if (w != kPairLive && loadWord(outPair(p).reject) != kNoReject)
      failPeer(p, rejectStatus(p));
    else if (w == kPairClosed)
      failPeer(p, Status(Code::kPeerClosed, fmt::format("rank {} closed its cuda-ipc transport", p))
                      .withLayer(Layer::kApplication)
                      .withPeer(p));
    else if (w != kPairLive)
      failPeer(p, Status(Code::kAborted,
                         fmt::format("rank {} aborted its exchanges with rank {}", p, rank_))
                      .withLayer(Layer::kApplication)
                      .withPeer(p));
  }
}

// Satisfies every wait this rank's stream has, or will have, on `p`, and tells `p` (whose host
// may wait on ours). A copy out of a peer that died then reads its mapping, which this process
// still holds; that receive has failed already.
void CudaIpcTransport::releaseWaits(int p, uint32_t why) {
  if (!stream_path_ || flags_.empty() || !flags_[p].base()) return;
  if (!loadWord(outPair(p).abort)) storeWord(outPair(p).abort, why);
  if (!loadWord(inPair(p).abort)) storeWord(inPair(p).abort, why);
  storeWord(outPair(p).done, static_cast<uint32_t>(peers_[p].send_seq));
  storeWord(inPair(p).ready, static_cast<uint32_t>(peers_[p].recv_seq));
}

// Waits, boundedly, until the rank's stream ran what was enqueued. A failed peer's stream may
// still write a flag it had enqueued, undoing a release: releases are written again meanwhile.
void CudaIpcTransport::drainStream(double seconds) {
  if (!rank_stream_) return;
  auto ev = batchEvent();
  if (!ev) return;
  cudaEvent_t e = batch_events_[*ev];
  if (ops_.event_record(e, rank_stream_) == cudaSuccess) {
    const core::Deadline until = core::Deadline::afterSeconds(seconds);
    while (ops_.event_query(e) == cudaErrorNotReady) {
      if (until.expired()) {
        spdlog::warn("cuda-ipc: rank {}: its stream did not drain within {:.3g} s", rank_, seconds);
        break;
      }
      for (int p = 0; p < size_; ++p)
        if (p != rank_ && peers_[p].dead) releaseWaits(p, kPairAborted);
      blockFor(20000);
    }
  }
  free_batch_events_.push_back(*ev);
}

void CudaIpcTransport::closeStream() {
  for (size_t p = 0; p < flags_.size(); ++p)
    if (flags_dev_[p]) ops_.host_unregister(flags_[p].base());
  flags_.clear();
  flags_dev_.clear();
  enqueued_.clear();
  batch_.clear();
  for (cudaEvent_t e : batch_events_) ops_.event_destroy(e);
  batch_events_.clear();
  free_batch_events_.clear();
}

}  // namespace ccscope::transports::cuda_ipc
