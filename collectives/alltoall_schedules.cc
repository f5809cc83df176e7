// All-to-all and all-to-allv: pairwise exchange and linear with a bounded window. Both see a
// rank's traffic as one Exchange (per peer: where its block starts and how long it is in the
// input and in the output), so all-to-all is the all-to-allv whose blocks are all count/n.
// Both ends derive a message's length from the same geometry or plan, so a zero-length block
// is skipped on both sides and never sent.
#include "collectives/movement_schedules.h"
#include "collectives/schedule_ops.h"
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

uint32_t copyOwn(Schedule& s, const Exchange& x) {
  const int r = s.rank;
  return addCopy(s, atOut(x.recv_off[r]), atIn(x.send_off[r]), x.recv_len[r]);
}

// Step k (1..n-1): send to r+k and receive from r-k, once both messages of step k-1 are done
// (the classic sendrecv loop: one peer pair in flight, no incast).
Schedule pairwise(const ScheduleParams& p, const Exchange& x) {
  Schedule s = newSchedule(p);
  copyOwn(s, x);
  const int n = p.ranks, r = p.rank;
  std::vector<uint32_t> prev;
  for (int k = 1; k < n; ++k) {
    const int to = ringMod(r + k, n), from = ringMod(r - k, n);
    const uint32_t tag = static_cast<uint32_t>(k);
    std::vector<uint32_t> now;
    if (x.send_len[to] > 0)
      now.push_back(addSend(s, to, tag, atIn(x.send_off[to]), x.send_len[to], prev));
    if (x.recv_len[from] > 0)
      now.push_back(addRecv(s, from, tag, atOut(x.recv_off[from]), x.recv_len[from], prev));
    if (!now.empty()) prev = std::move(now);
  }
  s.finalize();
  return s;
}

// Sends in order r+1, r+2, ... and receives r-1, r-2, ...; the i-th message each way waits for
// the (i-W)-th to finish. Every wait points at a message of a smaller distance k, so the
// window cannot deadlock even when a send only completes once its receive is posted.
Schedule linear(const ScheduleParams& p, const Exchange& x) {
  Schedule s = newSchedule(p);
  copyOwn(s, x);
  const int n = p.ranks, r = p.rank;
  std::vector<uint32_t> sends, recvs;
  for (int k = 1; k < n; ++k) {
    const int to = ringMod(r + k, n), from = ringMod(r - k, n);
    const uint32_t tag = static_cast<uint32_t>(k);
    if (x.send_len[to] > 0) {
      const uint32_t after =
          sends.size() >= kLinearWindow ? sends[sends.size() - kLinearWindow] : kNoOp;
      sends.push_back(addSend(s, to, tag, atIn(x.send_off[to]), x.send_len[to], {after}));
    }
    if (x.recv_len[from] > 0) {
      const uint32_t after =
          recvs.size() >= kLinearWindow ? recvs[recvs.size() - kLinearWindow] : kNoOp;
      recvs.push_back(addRecv(s, from, tag, atOut(x.recv_off[from]), x.recv_len[from], {after}));
    }
  }
  s.finalize();
  return s;
}

}  // namespace

Schedule pairwiseAlltoallSchedule(const ScheduleParams& p) {
  return pairwise(p, uniformExchange(p));
}
Schedule pairwiseAlltoallvSchedule(const ScheduleParams& p) { return pairwise(p, planExchange(p)); }
Schedule linearAlltoallSchedule(const ScheduleParams& p) { return linear(p, uniformExchange(p)); }
Schedule linearAlltoallvSchedule(const ScheduleParams& p) { return linear(p, planExchange(p)); }

}  // namespace ccscope::collectives
