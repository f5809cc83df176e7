#!/usr/bin/python3
"""`ccscope pairs` on local ranks (ctest label `mp`): the records and the table of a healthy run,
and a rank SIGKILLed half-way: exit 3 naming it, every pair measured before it kept.

    pairs_test.py --ccscope BIN [--deadline S] CASE [ARGS...]
    records TRANSPORT N SCOPE   --np N: exit 0, one pair record per pair of the plan, figures sane
    kill TRANSPORT N V          --np N, rank V SIGKILLed after the first round: exit 3 naming it
"""

import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import alive, check, log, rank_pids, read_jsonl  # noqa: E402
from mplib import main  # noqa: E402

def pairs_argv(binary, transport, n, js, *extra, test_time="50ms"):
    return [binary, "pairs", "--np", str(n), "--transport", transport, "--size", "256K",
            "--test-time", test_time, "--lat-iters", "200", "--json", js, *extra]


def of_type(records, t):
    return [r for r in records if r.get("type") == t]


def case_records(h, binary, mpirun, transport, n, scope):
    n = int(n)
    js = h.path("pairs.jsonl")
    rc, out, _, p = h.run(pairs_argv(binary, transport, n, js, "--scope", scope), 120)
    recs = read_jsonl(js)
    # Ranks sharing two cores can make a link look slow: a verdict is a measurement here, and
    # the exit code must agree with the records.
    verdicts = of_type(recs, "pair_verdict")
    check(rc == (1 if verdicts else 0), f"exit code {rc} with {len(verdicts)} verdicts\n"
          f"{h.describe(p)}")
    run = of_type(recs, "pairs_run")
    check(len(run) == 1 and recs[0] is run[0], f"the first record is not the one pairs_run: "
          f"{recs[:1]}")
    pairs = [r for r in of_type(recs, "pair") if not r["retest"]]
    want = n * (n - 1) // 2 if scope == "ranks" else 0
    check(len(pairs) == want and run[0]["pairs"] == want,
          f"{len(pairs)} pair records and a plan of {run[0]['pairs']}, expected {want}")
    seen = {(r["rank_a"], r["rank_b"]) for r in pairs}
    check(seen == {(a, b) for a in range(n) for b in range(a + 1, n)},
          f"pairs measured: {sorted(seen)}")
    for r in pairs:
        check(r["bw_uni_gbps"] > 0 and r["bw_bidir_gbps"] > 0, f"no bandwidth: {r}")
        check(0 < r["p50_us"] <= r["p99_us"] <= r["p999_us"] <= r["max_us"],
              f"latency percentiles out of order: {r}")
        check(r["lat_samples"] == 200, f"{r['lat_samples']} round trips, asked for 200")
    summaries = of_type(recs, "pairs_summary")
    check(len(summaries) == 1, "no pairs_summary record")
    # Ranks beyond this machine's cores: p99 is the scheduler's, not judged, and said so.
    if n > (os.cpu_count() or 1):
        check("p99_unjudged" in summaries[0], f"{n} ranks on {os.cpu_count()} cores and p99 "
              f"judged: {summaries[0]}")
        check(not [v for v in verdicts if v["metric"] == "p99"], f"p99 verdicts: {verdicts}")
    rows = [l for l in out.splitlines() if l and not l.startswith("#") and " rank " in l]
    check(len(rows) >= want, f"{len(rows)} table rows, expected {want}\n{out}")
    log(f"{want} pairs over {transport} at np {n}; summary "
        f"{of_type(recs, 'pairs_summary')[0]['hosts']}")


def case_kill(h, binary, mpirun, transport, n, victim):
    n, victim = int(n), int(victim)
    js = h.path("pairs.jsonl")
    # Long tests, so the kill lands inside a round; a 4 s deadline bounds the others' wait.
    p = h.start(pairs_argv(binary, transport, n, js, "--scope", "ranks", "--timeout", "4s",
                           test_time="1s"), label="launcher")
    ranks = rank_pids(p.pid, n)
    end = time.monotonic() + 60
    while len(of_type(read_jsonl(js, allow_partial_last=True) if os.path.exists(js) else [],
                      "pair")) < n // 2:
        check(time.monotonic() < end and p.poll() is None, "no finished round within 60 s")
        time.sleep(0.05)
    before = of_type(read_jsonl(js, allow_partial_last=True), "pair")
    t0 = time.monotonic()
    os.kill(ranks[victim], signal.SIGKILL)
    rc = h.wait(p, 60)
    took = time.monotonic() - t0
    log(f"SIGKILL to rank {victim} after {len(before)} pairs: exit {rc} after {took:.1f} s")
    check(rc == 3, f"launcher exit {rc}, expected 3\n{h.describe(p)}")
    check(took < 4 * 2 + 10, f"took {took:.1f} s to end after the kill")
    check(not any(alive(pid) for pid in ranks.values()), "a rank outlived the launcher")
    err = h.stderr(p)
    check(f"rank {victim}" in err and "diagnosis" in err,
          f"stderr names no diagnosis of rank {victim}:\n{err[-3000:]}")
    after = of_type(read_jsonl(js), "pair")
    check(after[:len(before)] == before, "pairs measured before the kill changed or vanished")


if __name__ == "__main__":
    sys.exit(main(globals()))
