// Sendrecv: every rank sends its input to r+1 and receives r-1's into its output; one message
// each way, no ordering between them (a receive never waits for the send: no cycle on a ring).
#include "collectives/movement_schedules.h"
#include "collectives/schedule_ops.h"

namespace ccscope::collectives {

Schedule directSendrecvSchedule(const ScheduleParams& p) {
  const int n = p.ranks, r = p.rank;
  if (n == 1) return copySchedule(p, p.count);
  Schedule s = newSchedule(p);
  addSend(s, ringMod(r + 1, n), 0, atIn(0), p.count);
  addRecv(s, ringMod(r - 1, n), 0, atOut(0), p.count);
  s.finalize();
  return s;
}

}  // namespace ccscope::collectives
