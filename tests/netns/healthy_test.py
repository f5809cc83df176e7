#!/usr/bin/python3
"""A healthy network of netns hosts (ctest label `netns`): bench runs end 0 with rows and no
diagnosis, and `ccscope diagnose` names no culprit, run after run.

    healthy_test.py --ccscope BIN [--deadline S] CASE ARGS...
    healthy WORLD RUNS            RUNS bench runs in a row on WORLD ranks
    diagnose_healthy WORLD [RUNS] `ccscope diagnose` RUNS times (default 1): exit 0
"""

import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from labcommon import TestFailure, log, result_records  # noqa: E402
from netlab import main  # noqa: E402
from nsjobs import SHORT, Job, bench_argv, json_diagnosis, run_diagnose  # noqa: E402


def healthy_run_problems(net, binary, world, i, runs):
    """One bench run on the healthy network: what went wrong, if anything."""
    js = os.path.join(net.workdir, f"healthy{i}.jsonl")
    t0 = time.monotonic()
    job = Job(net, world, bench_argv(binary, js, *SHORT), label=f"h{i}r").start()
    problems = []
    for r, p in enumerate(job.procs):
        rc = p.wait(60 - (time.monotonic() - t0))
        if rc != 0:
            problems.append(f"run {i} rank {r}: exit {rc}\n{p.describe()}")
        if "diagnosis" in p.stderr():
            problems.append(f"run {i} rank {r}: printed a diagnosis\n{p.describe()}")
    jd, _ = json_diagnosis(js)
    if jd:
        problems.append(f"run {i}: --json has a diagnosis record: {jd}")
    rows = result_records(js)
    if not rows:
        problems.append(f"run {i}: no result rows in {js}")
    log(f"healthy run {i + 1}/{runs}: exit codes {[p.p.returncode for p in job.procs]}, "
        f"{len(rows)} rows, {time.monotonic() - t0:.1f} s")
    left = net.leftovers()
    if left:
        problems.append(f"processes outlived healthy run {i}: {left}")
    return problems


def case_healthy(net, binary, world, runs):
    for i in range(int(runs)):
        problems = healthy_run_problems(net, binary, int(world), i, runs)
        if problems:
            raise TestFailure("\n".join(problems))


def case_diagnose_healthy(net, binary, world, runs=1):
    for i in range(int(runs)):
        problems = run_diagnose(net, binary, int(world), None, f"diagnose on a healthy network "
                                f"({world} ranks, run {i + 1})", want_rc=0)
        if problems:
            raise TestFailure("\n".join(problems))


if __name__ == "__main__":
    sys.exit(main(globals()))
