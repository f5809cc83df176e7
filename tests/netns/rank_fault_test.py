#!/usr/bin/python3
"""A fault in one rank's application (ctest label `netns`): killed, stopped, or out of step with
the others (test-only switch). Every other rank exits 3 with layer application, culprit that
rank and its host.

    rank_fault_test.py --ccscope BIN [--deadline S] CASE ARGS...
    kill WORLD RANK                SIGKILL to RANK mid-run
    stop WORLD RANK                SIGSTOP to RANK mid-run
    mismatch WORLD RANK skip|count CCSCOPE_TESTONLY_MISMATCH: RANK skips an operation or posts
                                   another count at the second size
"""

import os
import signal
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from netlab import main  # noqa: E402
from nsjobs import SHORT, Expect, host_of_rank, run_fault  # noqa: E402


def case_kill(net, binary, world, victim, sig="kill"):
    world, victim = int(world), int(victim)
    h = host_of_rank(victim, world)
    signum = signal.SIGKILL if sig == "kill" else signal.SIGSTOP

    def inject(job):
        os.kill(job.procs[victim].pid, signum)

    expect = Expect(net, "application", [victim], [h])
    run_fault(net, binary, world, inject, expect, [r for r in range(world) if r != victim],
              f"SIG{sig.upper()} rank {victim} of {world} (host {net.hosts[h]})",
              victims_to_reap=[victim])


def case_stop(net, binary, world, victim):
    case_kill(net, binary, world, victim, sig="stop")


def case_mismatch(net, binary, world, victim, kind):
    world, victim = int(world), int(victim)
    h = host_of_rank(victim, world)
    expect = Expect(net, "application", [victim], [h])
    # The injection is at the second size: start at once, no rows awaited.
    env = {r: {"CCSCOPE_TESTONLY_MISMATCH": f"{victim}:{kind}"} for r in range(world)}
    run_fault(net, binary, world, lambda job: None, expect, list(range(world)),
              f"CCSCOPE_TESTONLY_MISMATCH={victim}:{kind}, {world} ranks", extra_env=env,
              bench_args=SHORT, rows_first=0)


if __name__ == "__main__":
    sys.exit(main(globals()))
