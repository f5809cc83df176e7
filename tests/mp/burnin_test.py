#!/usr/bin/python3
"""`ccscope burnin` on local ranks (ctest label `mp`): a run of every phase writes its records in
order and an exit code that agrees with them; a rank SIGKILLed during the soak: exit 3 naming
it, every sample before kept, and `ccscope report` renders them and fails the run.

    burnin_test.py --ccscope BIN [--deadline S] CASE [ARGS...]
    records TRANSPORT N     --np N, every phase (scope ranks: one host)
    kill TRANSPORT N V      --np N, rank V SIGKILLed after the fifth soak sample
"""

import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import alive, check, log, rank_pids, read_jsonl  # noqa: E402
from mplib import main  # noqa: E402

PROFILE = """name = "mp"
transport = "{transport}"
timeout = "{timeout}"
[pairs]
scope = "ranks"
size = "256K"
test_time = "50ms"
lat_iters = 200
[[sweep]]
collective = "allreduce"
min_size = "8"
max_size = "256K"
iters = 5
warmup = 1
min_busbw = "256K=0.001"
[soak]
duration = "{soak}"
interval = "1s"
links = "ring"
size = "256K"
test_time = "30ms"
lat_iters = 100
collectives = ["allreduce"]
collective_size = "256K"
[congestion]
repeats = 2
lat_iters = 300
size = "256K"
test_time = "100ms"
"""


def of_type(records, t):
    return [r for r in records if r.get("type") == t]


def write_profile(h, transport, soak, timeout="30s"):
    path = h.path("profile.toml")
    with open(path, "w") as f:
        f.write(PROFILE.format(transport=transport, soak=soak, timeout=timeout))
    return path


def case_records(h, binary, mpirun, transport, n):
    n = int(n)
    js = h.path("burnin.jsonl")
    prof = write_profile(h, transport, "6s")
    rc, out, _, p = h.run([binary, "burnin", "--np", str(n), "--profile", prof, "--json", js], 180)
    recs = read_jsonl(js)
    types = [r["type"] for r in recs]
    check(types[0] == "burnin_run" and types[-1] == "burnin_summary",
          f"records from {types[:1]} to {types[-1:]}\n{h.describe(p)}")
    # The phases in order: each one's first record after the previous one's.
    order = ["preflight", "pairs_run", "run", "soak_run", "soak_verdict", "congestion_summary"]
    firsts = [types.index(t) if t in types else -1 for t in order]
    check(-1 not in firsts and firsts == sorted(firsts), f"phase records out of order: "
          f"{dict(zip(order, firsts))}")
    s = of_type(recs, "burnin_summary")[0]
    check(s["phases"] == ["preflight", "pairs", "sweep", "soak", "congestion"],
          f"phases {s['phases']}")
    # Ranks sharing two cores can make a link or a soak sample look slow: a verdict is a
    # measurement here, and the exit code must agree with it.
    want = 0 if s["verdict"] == "pass" else 1
    check(rc == want and (s["verdict"] == "pass") == (not s["findings"]),
          f"exit {rc} with verdict {s['verdict']} and findings {s['findings']}")
    check(len(of_type(recs, "pair")) >= n * (n - 1) // 2, "fewer pair records than pairs")
    check(of_type(recs, "result"), "no sweep rows")
    samples = of_type(recs, "soak_sample")
    links = [r for r in samples if r["kind"] == "link"]
    check(len(links) >= 3 * n and len(samples) - len(links) >= 3,
          f"{len(links)} link and {len(samples) - len(links)} collective soak samples in 6 s")
    check(all(r["t_s"] < 6 + 3 for r in samples), "a soak sample after the duration")
    check(len(of_type(recs, "congestion")) == 2, "not two congestion repeats")
    rrc, rout, _, _ = h.run([binary, "report", js, "--md", "-"], 60)
    check(rrc == want, f"report exit {rrc}, burnin's {rc}\n{rout}")
    check("### Burn-in: " in rout, f"no burn-in section in the Markdown\n{rout}")
    log(f"burnin over {transport} at np {n}: exit {rc}, verdict {s['verdict']}, "
        f"{len(samples)} soak samples")


def case_kill(h, binary, mpirun, transport, n, victim):
    n, victim = int(n), int(victim)
    js = h.path("burnin.jsonl")
    prof = write_profile(h, transport, "60s", timeout="4s")
    p = h.start([binary, "burnin", "--np", str(n), "--profile", prof, "--json", js],
                label="launcher")
    ranks = rank_pids(p.pid, n)
    end = time.monotonic() + 90
    while len(of_type(read_jsonl(js, allow_partial_last=True) if os.path.exists(js) else [],
                      "soak_sample")) < 5 * n:
        check(time.monotonic() < end and p.poll() is None, "no five soak samples within 90 s")
        time.sleep(0.05)
    before = of_type(read_jsonl(js, allow_partial_last=True), "soak_sample")
    t0 = time.monotonic()
    os.kill(ranks[victim], signal.SIGKILL)
    rc = h.wait(p, 60)
    took = time.monotonic() - t0
    log(f"SIGKILL to rank {victim} after {len(before)} soak samples: exit {rc} after {took:.1f} s")
    check(rc == 3, f"launcher exit {rc}, expected 3\n{h.describe(p)}")
    check(took < 4 * 4 + 10, f"took {took:.1f} s to end after the kill")
    check(not any(alive(pid) for pid in ranks.values()), "a rank outlived the launcher")
    err = h.stderr(p)
    check(f"rank {victim}" in err and "diagnosis" in err,
          f"stderr names no diagnosis of rank {victim}:\n{err[-3000:]}")
    after = read_jsonl(js)
    check(of_type(after, "soak_sample")[:len(before)] == before,
          "soak samples taken before the kill changed or vanished")
    check(not of_type(after, "burnin_summary"), "a summary after a lost rank")
    html = h.path("report.html")
    rrc, rout, _, _ = h.run([binary, "report", js, "--html", html], 60)
    with open(html) as f:
        page = f.read()
    check(rrc == 1 and "Soak: link bandwidth" in page and "data-verdict=\"incomplete\"" in page,
          f"report exit {rrc}; the page lacks the soak chart or the incomplete verdict\n{rout}")


if __name__ == "__main__":
    sys.exit(main(globals()))
