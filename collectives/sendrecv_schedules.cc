// Sendrecv: every rank sends its input to r+1 and receives r-1's into its output; one message
// each way, no ordering between them (a receive never waits for the send: no cycle on a ring).
#include "collectives/movement_schedules.h"
#include "collectives/schedule_builder.h"

namespace ccscope::collectives {

Schedule directSendrecvSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  if (n == 1) return copySchedule(p, p.count);
  ScheduleBuilder b(p);
  b.send(ringMod(r + 1, n), 0, atIn(0), p.count);
  b.recv(ringMod(r - 1, n), 0, atOut(0), p.count);
  return b.finish();
}

}  // namespace ccscope::collectives
