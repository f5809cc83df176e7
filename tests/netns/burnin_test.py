#!/usr/bin/python3
"""`ccscope burnin` on 6 hosts x 2 ranks over tcp (ctest label `netns`).

    burnin_test.py --ccscope BIN [--deadline S] CASE ARGS...
    faults SLOW A B     host SLOW's veth and the link A <-> B throttled: exit 1; the pairs phase
                        names exactly that host and that link, and so does the burn-in summary
    invalid             a wrong interface name: every rank exits 2, the run is invalid and says
                        which interface on which ranks
    soak A B SECONDS    a 40 s soak of ring links; the link A <-> B throttled SECONDS into it:
                        that link alone has a bandwidth verdict, from about then (+-10 s)
    congestion RUNS     a healthy lab: the victims' impact factors per repeat, their median and
                        spread, RUNS repeats; the bandwidth factor stays within a band
    record OUT          every phase on a lab with host 4 throttled for the pairs and sweep, and
                        the link h1 <-> h2 throttled 15 s into a 40 s soak; the records copied to
                        OUT (how tests/data/burnin/netns-6hosts-burnin.jsonl was made; not a
                        ctest case)
"""

import json
import os
import shutil
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

import netlab  # noqa: E402
import nsjobs  # noqa: E402

netlab.NHOSTS = nsjobs.NHOSTS = 6
WORLD = 12

from labcommon import log  # noqa: E402
from netlab import main  # noqa: E402
from nsjobs import Job  # noqa: E402
from pairs_test import host_index, verdicts  # noqa: E402
from throttle_test import throttle_host, throttle_pair  # noqa: E402

# Sizes small enough that a pair over a 10 Mbit/s link takes a few seconds, not minutes.
PAIRS = """
[pairs]
size = "256K"
test_time = "100ms"
lat_iters = 300
"""
SWEEP = """
[[sweep]]
collective = "allreduce"
min_size = "8"
max_size = "64K"
iters = 5
warmup = 1
"""


def profile(net, name, body):
    path = os.path.join(net.workdir, f"{name}.toml")
    with open(path, "w") as f:
        f.write(f'name = "{name}"\ntransport = "tcp"\ntimeout = "30s"\n{body}')
    return path


def run_burnin(net, binary, label, prof, extra=(), limit=240, on_record=None):
    """Every rank's exit code, rank 0's records and stdout; on_record(rec) sees each record as
    rank 0 writes it (the test's clock for faults injected mid-run)."""
    js = os.path.join(net.workdir, f"{label}.jsonl")
    job = Job(net, WORLD, [binary, "burnin", "--profile", prof, "--json", js, *extra],
              label=label).start()
    t0 = time.monotonic()
    problems, seen = [], 0
    while any(p.poll() is None for p in job.procs) and time.monotonic() - t0 < limit:
        if on_record and os.path.exists(js):
            with open(js) as f:
                lines = f.readlines()
            for line in lines[seen:]:
                if line.endswith("\n"):
                    on_record(json.loads(line))
                    seen += 1
        time.sleep(0.2)
    for r, p in enumerate(job.procs):
        if p.wait(max(0.5, limit - (time.monotonic() - t0))) is None:
            problems.append(f"{label} rank {r}: still running after {limit} s\n{p.describe()}")
    rcs = [p.p.returncode for p in job.procs]
    log(f"{label}: exit codes {rcs} in {time.monotonic() - t0:.1f} s")
    out = job.procs[0].stdout()
    log("\n".join(l for l in out.splitlines()
                  if l.startswith(("#", "FAILED", "DEGRADED", "INVALID", "PASS", "FAIL", "  "))))
    records = []
    if os.path.exists(js):
        with open(js) as f:
            records = [json.loads(l) for l in f if l.strip()]
    return rcs, records, problems, out


def summary_of(records):
    s = [r for r in records if r.get("type") == "burnin_summary"]
    return s[-1] if s else None


def case_faults(net, binary, slow, a, b):
    slow, a, b = int(slow), int(a), int(b)
    throttle_host(net, slow)
    throttle_pair(net, a, b)
    what = f"burnin: host {net.hosts[slow]} and link {net.hosts[a]} <-> {net.hosts[b]} throttled"
    prof = profile(net, "faults", PAIRS + SWEEP)
    rcs, records, problems, _ = run_burnin(net, binary, "faults", prof)
    if rcs != [1] + [0] * (WORLD - 1):
        problems.append(f"{what}: exit codes {rcs}, expected 1 on rank 0 and 0 elsewhere")
    found = verdicts(net, records)
    want = {("host", "bandwidth", slow), ("link", "bandwidth", *sorted((a, b)))}
    if not want <= found:
        problems.append(f"{what}: pair verdicts {sorted(found)} lack {sorted(want - found)}")
    extra = {v for v in found if (v[0], *v[2:]) not in {(k, *h) for k, _, *h in want}}
    if extra:
        problems.append(f"{what}: pair verdicts beyond the two faults: {sorted(extra)}")
    s = summary_of(records)
    if not s:
        problems.append(f"{what}: no burnin_summary record")
    else:
        bad_hosts = {host_index(net, h) for h, v in s["hosts"].items() if v != "pass"}
        bad_links = {tuple(sorted((host_index(net, l["unit_a"]), host_index(net, l["unit_b"]))))
                     for l in s["links"]}
        if s["verdict"] not in ("degraded", "failed") or bad_hosts != {slow} or \
                bad_links != {tuple(sorted((a, b)))}:
            problems.append(f"{what}: summary verdict {s['verdict']}, hosts at fault {bad_hosts}, "
                            f"links {bad_links}; expected host {slow} and link {(a, b)}")
        if s["phases"] != ["preflight", "pairs", "sweep"]:
            problems.append(f"{what}: phases {s['phases']}")
    rows = [r for r in records if r.get("type") == "result"]
    if not rows:
        problems.append(f"{what}: the sweep wrote no result rows")
    nsjobs.report(what, "burnin exit 1 naming one host and one link", [], problems, net)


def case_invalid(net, binary):
    what = "burnin --ifname nosuch0"
    prof = profile(net, "invalid", PAIRS)
    rcs, records, problems, out = run_burnin(net, binary, "invalid", prof, ["--ifname", "nosuch0"],
                                             limit=60)
    if rcs != [2] * WORLD:
        problems.append(f"{what}: exit codes {rcs}, expected 2 (invalid) on every rank")
    s = summary_of(records)
    if not s or s["verdict"] != "invalid":
        problems.append(f"{what}: summary {s}, expected verdict invalid")
    elif not any("nosuch0" in r for r in s["reasons"]):
        problems.append(f"{what}: the reasons do not name the interface: {s['reasons']}")
    if "INVALID" not in out or "nosuch0" not in out:
        problems.append(f"{what}: rank 0 printed no INVALID line naming nosuch0")
    if any(r.get("type") in ("pair", "result", "soak_sample") for r in records):
        problems.append(f"{what}: something was measured after a failed preflight")
    nsjobs.report(what, "every rank exit 2 with the reason", [], problems, net)


def case_soak(net, binary, a, b, at_s):
    a, b, at_s = int(a), int(b), float(at_s)
    what = f"burnin soak: link {net.hosts[a]} <-> {net.hosts[b]} throttled {at_s:.0f} s in"
    prof = profile(net, "soak", """
[preflight]
enabled = false
[pairs]
enabled = false
[soak]
duration = "40s"
interval = "2s"
links = "ring"
size = "256K"
test_time = "50ms"
lat_iters = 100
""")
    state = {}

    def on_record(rec):
        if rec.get("type") == "soak_run" and "timer" not in state:
            state["start"] = time.monotonic()
            state["timer"] = threading.Timer(at_s, lambda: (throttle_pair(net, a, b), state.update(
                throttled=time.monotonic() - state["start"])))
            state["timer"].start()

    rcs, records, problems, _ = run_burnin(net, binary, "soak", prof, limit=180,
                                           on_record=on_record)
    if "timer" in state:
        state["timer"].cancel()
    log(f"{what}: throttled {state.get('throttled', -1):.1f} s after the soak_run record")
    if rcs != [1] + [0] * (WORLD - 1):
        problems.append(f"{what}: exit codes {rcs}, expected 1 on rank 0 and 0 elsewhere")
    samples = [r for r in records if r.get("type") == "soak_sample"]
    if len(samples) < 6 * 10:
        problems.append(f"{what}: {len(samples)} soak samples, expected at least 10 of 6 links")
    # Bandwidth names that link alone. The tbf queue on both its hosts can move the tail
    # latency of their other links too (seen: p99 1.9 ms from 48 s on h2 <-> h3, p50 with it):
    # p99 verdicts are logged, not judged here.
    bad = [v for v in records if v.get("type") == "soak_verdict" and v["verdict"] != "pass"]
    link = tuple(sorted((a, b)))
    bw = [v for v in bad if v["metric"] == "bandwidth"]
    named = {tuple(sorted((host_index(net, v["unit_a"]), host_index(net, v["unit_b"]))))
             for v in bw}
    if named != {link}:
        problems.append(f"{what}: bandwidth verdicts name {named}, expected only {link}: {bw}")
    for v in bw:
        if abs(v["since_s"] - at_s) > 10:
            problems.append(f"{what}: degraded from {v['since_s']:.1f} s, expected {at_s:.0f} "
                            f"+- 10 s")
    log(f"{what}: verdicts " + "; ".join(f"{v['series']} {v['verdict']} from {v['since_s']:.1f} s"
                                          for v in bad))
    s = summary_of(records)
    if not s or s["verdict"] not in ("degraded", "failed"):
        problems.append(f"{what}: summary {s}")
    nsjobs.report(what, "that link degraded from about then", [], problems, net)


def case_congestion(net, binary, runs):
    what = f"burnin congestion: {runs} repeats on a healthy lab"
    prof = profile(net, "congestion", f"""
[preflight]
enabled = false
[pairs]
enabled = false
[congestion]
repeats = {int(runs)}
lat_iters = 1000
size = "1M"
test_time = "200ms"
""")
    rcs, records, problems, out = run_burnin(net, binary, "congestion", prof, limit=180)
    if rcs != [0] * WORLD:
        problems.append(f"{what}: exit codes {rcs}, expected 0")
    reps = [r for r in records if r.get("type") == "congestion"]
    if len(reps) != int(runs):
        problems.append(f"{what}: {len(reps)} congestion records, expected {runs}")
    for r in reps:
        for phase in ("alone", "loaded"):
            if not r[phase]["p99_us"] > 0 or not r[phase]["bw_uni_gbps"] > 0:
                problems.append(f"{what}: repeat {r['repeat']} {phase}: {r[phase]}")
        if r["victim_a"] == r["victim_b"]:
            problems.append(f"{what}: both victims on {r['victim_a']}")
    s = [r for r in records if r.get("type") == "congestion_summary"]
    if not s or "impact factor" not in out:
        problems.append(f"{what}: no congestion summary or printed spread")
    elif reps:
        bw = [r["bw_factor"] for r in reps]
        log(f"{what}: p99 factors {s[0]['p99_factors']}, bandwidth factors {bw}")
        if min(bw) <= 0 or max(bw) / min(bw) > 4:
            problems.append(f"{what}: bandwidth factors {bw} spread over more than 4x")
    nsjobs.report(what, "impact factors per repeat with their spread", [], problems, net)


def case_record(net, binary, out):
    prof = profile(net, "record", PAIRS + SWEEP + """
[soak]
duration = "40s"
interval = "2s"
links = "ring"
size = "256K"
test_time = "50ms"
lat_iters = 100
collectives = ["allreduce"]
collective_size = "256K"
[congestion]
repeats = 3
lat_iters = 500
size = "1M"
test_time = "200ms"
""")
    throttle_host(net, 4)
    timer = []

    def on_record(rec):
        if rec.get("type") == "soak_run" and not timer:
            # Host 4 at full speed again for the soak, whose samples it would slow to ~9 s.
            net.sw_cmd(["tc", "qdisc", "del", "dev", "h4", "root"],
                       undo=["tc", "qdisc", "add", "dev", "h4", "root", "pfifo"])
            net.host_cmd(4, ["tc", "qdisc", "del", "dev", "eth0", "root"],
                         undo=["tc", "qdisc", "add", "dev", "eth0", "root", "pfifo"])
            timer.append(threading.Timer(15, lambda: throttle_pair(net, 1, 2)))
            timer[0].start()

    rcs, _, problems, _ = run_burnin(net, binary, "record", prof, limit=200, on_record=on_record)
    if timer:
        timer[0].cancel()
    shutil.copy(os.path.join(net.workdir, "record.jsonl"), out)
    log(f"record: exit codes {rcs}; records in {out}")
    nsjobs.report("burnin record", "a run of every phase", [], problems, net)


if __name__ == "__main__":
    sys.exit(main(globals()))
