#!/usr/bin/env python3
"""Straggler detection end to end: a real rank made slow by stopping and continuing it (30 ms
of every 60 ms, as a starved or throttled node would be), and healthy runs beside it.

    straggler T N R     rank R stuttered: the {"type":"waits"} record and the table name it
    healthy T N         the same sweep untouched: no straggler named
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log, rank_pids, read_jsonl  # noqa: E402
from mplib import main  # noqa: E402

RUN_TIMEOUT = 120
SWEEP = ["-b", "1M", "-e", "8M", "-f", "2", "-n", "20", "-w", "2", "--timeout", "60s"]


def argv(binary, transport, n, js):
    return [binary, "bench", "allreduce", "--np", str(n), "--transport", transport, *SWEEP,
            "--json", js]


def waits_records(js):
    return [r for r in read_jsonl(js) if r.get("type") == "waits"]


def case_straggler(h, binary, mpirun, transport, n, victim):
    n, victim = int(n), int(victim)
    js = h.path("straggler.jsonl")
    p = h.start(argv(binary, transport, n, js), label="launcher")
    pid = rank_pids(p.pid, n)[victim]
    stutters = 0
    while p.poll() is None:
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.03)
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.03)
            stutters += 1
        except ProcessLookupError:
            break
    rc = h.wait(p, RUN_TIMEOUT)
    check(rc == 0, f"exit code {rc}, expected 0 (a straggler is not a failure)\n{h.describe(p)}")
    recs = waits_records(js)
    check(len(recs) == 1, f"{len(recs)} waits records, expected 1")
    w = recs[0]
    check(w["straggler"] == victim,
          f"straggler {w['straggler']}, expected rank {victim}: blocked share "
          f"{w['blocked_share']}, waited share {w['waited_share']}, samples {w['samples']}")
    out = h.stdout(p)
    check(f"straggler: rank {victim}:" in out,
          f"the table does not name rank {victim}\n{out[-2000:]}")
    log(f"rank {victim} of {n} over {transport} stopped {stutters} times: named; {w['verdict']}")


def case_healthy(h, binary, mpirun, transport, n):
    n = int(n)
    js = h.path("healthy.jsonl")
    rc, out, _, p = h.run(argv(binary, transport, n, js), RUN_TIMEOUT)
    check(rc == 0, f"exit code {rc}\n{h.describe(p)}")
    recs = waits_records(js)
    check(len(recs) == 1, f"{len(recs)} waits records, expected 1")
    w = recs[0]
    check(w["straggler"] == -1 and "straggler:" not in out,
          f"a healthy run named rank {w['straggler']}: {w.get('verdict')}")
    check(min(w["samples"]) > 0, f"no samples on some rank: {w['samples']}")
    log(f"{n} ranks over {transport}: no straggler; blocked share "
        f"{[round(x, 2) for x in w['blocked_share']]}")


if __name__ == "__main__":
    sys.exit(main(globals()))
