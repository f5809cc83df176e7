#include "collectives/power_of_two_fold.h"

namespace ccscope::collectives {

void foldIn(ScheduleBuilder& b, const PowerOfTwoFold& f, int rank, const FoldPlan& plan) {
  const int partner = f.foldPartner(rank);
  if (partner < 0) return;
  Segments(plan.count, plan.segment).forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
    const uint32_t tag = plan.tag_base + static_cast<uint32_t>(g);
    if (f.extra(rank)) {
      b.send(partner, tag, {Buf::kInput, off}, len);
    } else {
      b.recv(partner, tag, at(plan.landing, off), len);
      b.reduce(at(plan.sum, off), {Buf::kInput, off}, at(plan.landing, off), len);
    }
  });
}

void foldOut(ScheduleBuilder& b, const PowerOfTwoFold& f, int rank, const FoldPlan& plan) {
  const int partner = f.foldPartner(rank);
  if (partner < 0) return;
  Segments(plan.count, plan.segment).forEach(0, [&](uint64_t g, uint64_t off, uint64_t len) {
    const uint32_t tag = plan.tag_base + static_cast<uint32_t>(g);
    if (f.extra(rank))
      b.recv(partner, tag, {Buf::kOutput, off}, len);
    else
      b.send(partner, tag, {Buf::kOutput, off}, len);
  });
}

}  // namespace ccscope::collectives
