#!/usr/bin/python3
"""Hangs (ctest label `mp`): a rank killed (SIGKILL) or stopped (SIGSTOP) mid-sweep, and ranks
that never join. The others exit 3 within --timeout plus slack, each naming the rank, and the
rows finished before the fault stay in the JSON Lines file.

    faults_test.py --ccscope BIN [--deadline S] CASE [ARGS...]
    fault K T N V           --np N, signal K (kill|stop) to rank V mid-sweep: exit 3, diagnosis
    fault_torchrun K T N V  the same with torchrun-style ranks we own (per-rank exit codes)
    join_deadline           3 of 4 torchrun-style ranks: exit 3 within the deadline, rank 3 named

CCSCOPE_FAULT_EXTRA_ARGS (shell words) is added to the bench command line of the fault cases, e.g.
`--device cuda` for scripts/gpu-check.sh; unset, the cases run as above.
"""

import os
import re
import shlex
import signal
import sys
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import (TestFailure, alive, check, log, rank_pids, read_jsonl,  # noqa: E402
                       result_records, torchrun_env)
from mplib import bench, free_port, main, row_key, split_records, start_torchrun  # noqa: E402

FAULT_TIMEOUT_S = 4
FAULT_SLACK_S = 5
FAULT_LIMIT_S = FAULT_TIMEOUT_S + FAULT_SLACK_S
DIAG = re.compile(r"rank (\d+): diagnosis: (.*)")


def fault_args(transport, js):
    extra = shlex.split(os.environ.get("CCSCOPE_FAULT_EXTRA_ARGS", ""))
    return ["--transport", transport, "-b", "1M", "-e", "64M", "-n", "50", "-w", "1",
            "--timeout", f"{FAULT_TIMEOUT_S}s", "--json", js, *extra]


def wait_rows(h, js, n_rows, procs, limit=90):
    """The rows finished once there are n_rows; fails if a process exits first."""
    end = time.monotonic() + limit
    while len(result_records(js)) < n_rows:
        for p in procs:
            if p.poll() is not None:
                raise TestFailure(f"{p.label} exited with {p.returncode} before {n_rows} rows were "
                                  f"written\n{h.describe(p)}")
        check(time.monotonic() < end, f"fewer than {n_rows} result rows after {limit} s")
        time.sleep(0.01)
    _, rows = split_records(read_jsonl(js, allow_partial_last=True), js)
    return rows


def send(pid, kind):
    os.kill(pid, signal.SIGKILL if kind == "kill" else signal.SIGSTOP)


def check_diagnosis(stderr, survivors, victim, kind, where):
    """Every surviving rank prints a diagnosis line, and each names the victim."""
    lines = [ln for ln in stderr.splitlines() if "diagnosis:" in ln]
    by_rank = {}
    for ln in lines:
        m = DIAG.search(ln)
        check(m, f"{where}: unparsable diagnosis line: {ln!r}")
        by_rank.setdefault(int(m.group(1)), []).append(m.group(2))
        blamed = re.search(r"\brank (\d+)\b", m.group(2))
        check(blamed and int(blamed.group(1)) == victim,
              f"{where}: diagnosis names the wrong rank (victim was rank {victim}): {ln!r}")
    missing = [r for r in survivors if r not in by_rank]
    check(not missing, f"{where}: surviving ranks {missing} printed no diagnosis naming rank "
          f"{victim}\n--- stderr ---\n{stderr[-4000:]}")
    # The verdict must say what happened to the victim: killed (gone) or stopped (frozen).
    words = ("exited or was killed", "gone") if kind == "kill" else ("stopped responding",
                                                                    "stopped answering")
    check(any(w in d for ds in by_rank.values() for d in ds for w in words),
          f"{where}: no diagnosis says rank {victim} {' / '.join(words)}\n--- stderr ---\n"
          f"{stderr[-4000:]}")


def check_rows_kept(h, js, before):
    recs = read_jsonl(js)  # strict: every line complete, valid JSON
    _, rows = split_records(recs, js)
    check(len(rows) >= 2, f"JSON Lines file holds {len(rows)} result rows after the fault, "
          f"expected the >= 2 finished before it")
    check(rows[:len(before)] == before,
          "rows finished before the fault changed or disappeared from the JSON Lines file")
    bad = [row_key(r) for r in rows if r["wrong"] != 0]
    check(not bad, f"rows finished before the fault have wrong != 0: {bad}")
    return rows


def survivor_exit_times(survivors, t0):
    """{rank: seconds after t0} of the survivors that exited within the limit plus 30 s."""
    exited = {}
    while len(exited) < len(survivors) and time.monotonic() - t0 < FAULT_LIMIT_S + 30:
        for r, pid in survivors.items():
            if r not in exited and not alive(pid):
                exited[r] = time.monotonic() - t0
        time.sleep(0.01)
    return exited


def case_fault(h, binary, mpirun, kind, transport, n, victim):
    n, victim = int(n), int(victim)
    assert kind in ("kill", "stop") and 0 < victim < n
    js = h.path("fault.jsonl")
    p = h.start(bench(binary, "--np", n, *fault_args(transport, js)), label="launcher")
    before = wait_rows(h, js, 2, [p])
    ranks = rank_pids(p.pid, n)
    check(sorted(ranks) == list(range(n)), f"launcher children carry ranks {sorted(ranks)}, "
          f"expected 0..{n - 1}")
    before = wait_rows(h, js, len(before), [p])  # re-read: rows are only ever appended
    t0 = time.monotonic()
    send(ranks[victim], kind)
    log(f"sent SIG{kind.upper()} to rank {victim} (pid {ranks[victim]}) of {n} over {transport} "
        f"after {len(before)} rows")
    survivors = {r: pid for r, pid in ranks.items() if r != victim}
    exited = survivor_exit_times(survivors, t0)
    rc = h.wait(p, max(1.0, 60 - (time.monotonic() - t0)))
    log(f"survivor exit times (s after the signal): "
        f"{ {r: round(t, 2) for r, t in sorted(exited.items())} }; launcher exited {rc} after "
        f"{time.monotonic() - t0:.1f} s")
    late = {r: t for r, t in exited.items() if t > FAULT_LIMIT_S}
    never = [r for r in survivors if r not in exited]
    check(not never and not late, f"surviving ranks must exit within --timeout {FAULT_TIMEOUT_S}s "
          f"+ {FAULT_SLACK_S} s: late {late}, still running {never}\n{h.describe(p)}")
    check(rc == 3, f"launcher exit code {rc}, expected 3\n{h.describe(p)}")
    err = h.stderr(p)
    ended = ended_by_ucx(err, ranks, victim)
    if ended:
        log(f"ranks {ended} were ended by UCX reading from the killed rank by cma")
    check_diagnosis(err, [r for r in sorted(survivors) if r not in ended], victim, kind,
                    "launcher stderr")
    rows = check_rows_kept(h, js, before)
    log(f"JSON Lines kept {len(rows)} rows ({len(before)} seen before the signal)")


def ended_by_ucx(stderr, ranks, victim):
    """With --ucx-errors none, UCX treats a failed peer as fatal: a rank reading from the killed
    rank by cma at that moment is aborted by UCX itself (`process_vm_readv(pid=VICTIM ...) ...
    No such process`, then SIGABRT), as transports/README.md says. Those ranks cannot diagnose;
    the others must."""
    if "--ucx-errors none" not in os.environ.get("CCSCOPE_FAULT_EXTRA_ARGS", ""):
        return []
    if f"process_vm_readv(pid={ranks[victim]} " not in stderr:
        return []
    return [r for r, pid in ranks.items()
            if r != victim and f"rank {r} (pid {pid}) was killed by signal 6" in stderr]


def case_fault_torchrun(h, binary, mpirun, kind, transport, n, victim):
    n, victim = int(n), int(victim)
    assert kind in ("kill", "stop") and 0 < victim < n
    js = h.path("fault.jsonl")
    procs, _ = start_torchrun(h, bench(binary, *fault_args(transport, js)), n)
    before = wait_rows(h, js, 2, procs)
    t0 = time.monotonic()
    send(procs[victim].pid, kind)
    log(f"sent SIG{kind.upper()} to torchrun-style rank {victim} of {n} over {transport} after "
        f"{len(before)} rows")
    results = {}
    for r, p in enumerate(procs):
        if r == victim:
            continue
        rc = h.wait(p, max(1.0, FAULT_LIMIT_S + 30 - (time.monotonic() - t0)))
        results[r] = (rc, time.monotonic() - t0)
    log(f"survivors (exit code, seconds after the signal): "
        f"{ {r: (rc, round(t, 2)) for r, (rc, t) in results.items()} }")
    if kind == "stop":
        os.kill(procs[victim].pid, signal.SIGCONT)
        os.kill(procs[victim].pid, signal.SIGKILL)
    procs[victim].wait(timeout=10)
    for r, (rc, t) in results.items():
        check(rc == 3 and t <= FAULT_LIMIT_S, f"rank {r}: exit code {rc} after {t:.1f} s, "
              f"expected 3 within {FAULT_LIMIT_S} s\n{h.describe(procs[r])}")
        check_diagnosis(h.stderr(procs[r]), [r], victim, kind, f"rank {r} stderr")
    rows = check_rows_kept(h, js, before)
    log(f"JSON Lines kept {len(rows)} rows ({len(before)} seen before the signal)")


def case_join_deadline(h, binary, mpirun):
    """3 of 4 torchrun-style ranks start: they stop within the deadline, naming rank 3."""
    timeout = 3
    port, token = free_port(), uuid.uuid4().hex
    argv = bench(binary, "-b", "8", "-e", "8", "--timeout", f"{timeout}s")
    t0 = time.monotonic()
    procs = [h.start(argv, torchrun_env(r, 4, port, token), label=f"rank{r}") for r in range(3)]
    res = [(h.wait(p, 60), time.monotonic() - t0) for p in procs]
    log(f"ranks 0..2 (exit code, seconds): {[(rc, round(t, 2)) for rc, t in res]}")
    for r, (rc, t) in enumerate(res):
        check(rc == 3 and t <= timeout + 5, f"rank {r}: exit code {rc} after {t:.1f} s, expected "
              f"3 within {timeout + 5} s\n{h.describe(procs[r])}")
    err0 = h.stderr(procs[0])
    named = [ln for ln in err0.splitlines() if "join" in ln and re.search(r"\b3\b", ln)]
    check(named, f"rank 0 (the store) does not name rank 3 as not joined:\n{err0}")
    log(f"rank 0: {named[0]}")


if __name__ == "__main__":
    sys.exit(main(globals()))
