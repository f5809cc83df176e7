// All-to-all and all-to-allv: pairwise exchange and linear with a bounded window. Both see a
// rank's traffic as one Exchange (per peer: where its block starts and how long it is in the
// input and in the output), so all-to-all is the all-to-allv whose blocks are all count/n.
// Both ends derive a message's length from the same geometry or plan, so a zero-length block
// is dropped on both sides (the builder's zero-length rule) and never sent.
#include "collectives/movement_schedules.h"
#include "collectives/schedule_builder.h"
#include "core/check.h"

namespace ccscope::collectives {

namespace {

struct Exchange {
  std::vector<uint64_t> send_off, send_len;  // per destination, in the input
  std::vector<uint64_t> recv_off, recv_len;  // per source, in the output
};

Exchange uniformExchange(const ScheduleParams& p) {
  const uint64_t block = p.count / p.ranks;
  Exchange x;
  for (int j = 0; j < p.ranks; ++j) {
    x.send_off.push_back(j * block);
    x.recv_off.push_back(j * block);
  }
  x.send_len.assign(p.ranks, block);
  x.recv_len.assign(p.ranks, block);
  return x;
}

Exchange planExchange(const ScheduleParams& p) {
  CCSCOPE_CHECK(p.plan != nullptr && p.plan->ranks == p.ranks,
                "all-to-allv schedule without a plan for its ranks");
  Exchange x;
  for (int j = 0; j < p.ranks; ++j) {
    x.send_off.push_back(p.plan->sendOffset(p.rank, j));
    x.send_len.push_back(p.plan->at(p.rank, j));
    x.recv_off.push_back(p.plan->recvOffset(p.rank, j));
    x.recv_len.push_back(p.plan->at(j, p.rank));
  }
  return x;
}

void copyOwn(ScheduleBuilder& b, const ScheduleParams& p, const Exchange& x) {
  const int r = p.rank;
  b.copy(atOut(x.recv_off[r]), atIn(x.send_off[r]), x.recv_len[r]);
}

// Step k (1..n-1): send to r+k and receive from r-k, once both messages of step k-1 are done
// (the classic sendrecv loop: one peer pair in flight, no incast). The blocks never overlap, so
// this pacing is stated with `after`; a step with no message passes the wait on.
Schedule pairwise(const ScheduleParams& p, const Exchange& x) {
  ScheduleBuilder b(p);
  copyOwn(b, p, x);
  const int n = p.ranks, r = p.rank;
  After prev;
  for (int k = 1; k < n; ++k) {
    const int to = ringMod(r + k, n), from = ringMod(r - k, n);
    const auto tag = static_cast<uint32_t>(k);
    After now{b.send(to, tag, atIn(x.send_off[to]), x.send_len[to], prev),
              b.recv(from, tag, atOut(x.recv_off[from]), x.recv_len[from], prev)};
    std::erase(now, kNoOp);
    if (!now.empty()) prev = std::move(now);
  }
  return b.finish();
}

// Sends in order r+1, r+2, ... and receives r-1, r-2, ...; the i-th message each way waits for
// the (i-W)-th to finish (pacing, stated with `after`). Every wait points at a message of a
// smaller distance k, so the window cannot deadlock even when a send only completes once its
// receive is posted.
Schedule linear(const ScheduleParams& p, const Exchange& x) {
  ScheduleBuilder b(p);
  copyOwn(b, p, x);
  const int n = p.ranks, r = p.rank;
  std::vector<uint32_t> sends, recvs;
  auto window = [](const std::vector<uint32_t>& v) {
    return v.size() >= kLinearWindow ? v[v.size() - kLinearWindow] : kNoOp;
  };
  for (int k = 1; k < n; ++k) {
    const int to = ringMod(r + k, n), from = ringMod(r - k, n);
    const auto tag = static_cast<uint32_t>(k);
    const uint32_t snd = b.send(to, tag, atIn(x.send_off[to]), x.send_len[to], {window(sends)});
    if (snd != kNoOp) sends.push_back(snd);
    const uint32_t rcv =
        b.recv(from, tag, atOut(x.recv_off[from]), x.recv_len[from], {window(recvs)});
    if (rcv != kNoOp) recvs.push_back(rcv);
  }
  return b.finish();
}

}  // namespace

Schedule pairwiseAlltoallSchedule(const ScheduleParams& p) {
  return pairwise(p, uniformExchange(p));
}
Schedule pairwiseAlltoallvSchedule(const ScheduleParams& p) { return pairwise(p, planExchange(p)); }
Schedule linearAlltoallSchedule(const ScheduleParams& p) { return linear(p, uniformExchange(p)); }
Schedule linearAlltoallvSchedule(const ScheduleParams& p) { return linear(p, planExchange(p)); }

}  // namespace ccscope::collectives
