#!/usr/bin/python3
"""`ccscope pairs` on 6 hosts x 2 ranks over tcp (ctest label `netns`): one host slowed on all its
links and one link between two other hosts throttled are named as exactly that host and that
link (not the host's five links); healthy runs in a row flag nothing.

    pairs_test.py --ccscope BIN [--deadline S] CASE ARGS...
    faults SLOW_HOST A B    host SLOW_HOST's veth throttled, and the link A <-> B: exit 1, two
                            verdicts
    healthy RUNS            RUNS runs in a row: exit 0, no verdict
"""

import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

import netlab  # noqa: E402
import nsjobs  # noqa: E402

# The lab's host count is a module setting the others read when the network is built: six
# hosts here, so that a host effect and a link effect are told apart over 15 links.
netlab.NHOSTS = nsjobs.NHOSTS = 6
WORLD = 12

from labcommon import log  # noqa: E402
from netlab import main  # noqa: E402
from nsjobs import Job  # noqa: E402
from throttle_test import throttle_host, throttle_pair  # noqa: E402

# Small enough that a pair over a 10 Mbit/s link takes a few seconds, not minutes. A p99 of 300
# half round trips is their third largest: one scheduler stall of 12 ranks on 2 cores made a
# healthy link's p99 5.7x its partners'; 1,000 need ten slow samples.
PAIRS_ARGS = ["--transport", "tcp", "--scope", "hosts", "--size", "256K", "--test-time", "100ms",
              "--lat-iters", "1000", "--timeout", "30s"]


def run_pairs(net, binary, label):
    js = os.path.join(net.workdir, f"{label}.jsonl")
    job = Job(net, WORLD, [binary, "pairs", *PAIRS_ARGS, "--json", js], label=label).start()
    t0 = time.monotonic()
    problems = []
    for r, p in enumerate(job.procs):
        if p.wait(max(0.5, 240 - (time.monotonic() - t0))) is None:
            problems.append(f"{label} rank {r}: still running after 240 s\n{p.describe()}")
    rcs = [p.p.returncode for p in job.procs]
    log(f"{label}: exit codes {rcs} in {time.monotonic() - t0:.1f} s")
    out = job.procs[0].stdout()
    log("\n".join(l for l in out.splitlines() if l.startswith(("#", "FAILED", "DEGRADED"))))
    records = []
    if os.path.exists(js):
        with open(js) as f:
            records = [json.loads(l) for l in f if l.strip()]
    return rcs, records, problems, job


def host_index(net, unit):
    """The lab host a unit label names (its hostname, or its address under one hostname)."""
    hits = [i for i, (name, ip) in enumerate(net.names) if name in unit or ip in unit]
    return hits[0] if len(hits) == 1 else None


def verdicts(net, records):
    """{(kind, hosts...)} of the pair_verdict records, hosts as lab indices."""
    out = set()
    for v in records:
        if v.get("type") != "pair_verdict":
            continue
        hosts = [host_index(net, v["unit_a"])] + ([host_index(net, v["unit_b"])]
                                                  if v["kind"] == "link" else [])
        out.add((v["kind"], v["metric"], *sorted(h for h in hosts if h is not None)))
    return out


def case_faults(net, binary, slow, a, b):
    slow, a, b = int(slow), int(a), int(b)
    throttle_host(net, slow)
    throttle_pair(net, a, b)
    what = f"pairs: host {net.hosts[slow]} and link {net.hosts[a]} <-> {net.hosts[b]} throttled"
    rcs, records, problems, _ = run_pairs(net, binary, "faults")
    if rcs[0] != 1:
        problems.append(f"{what}: rank 0 exit {rcs[0]}, expected 1")
    if any(rc != 0 for rc in rcs[1:]):
        problems.append(f"{what}: ranks 1.. exit {rcs[1:]}, expected 0")
    found = verdicts(net, records)
    want = {("host", "bandwidth", slow), ("link", "bandwidth", *sorted((a, b)))}
    if not want <= found:
        problems.append(f"{what}: verdicts {sorted(found)} lack {sorted(want - found)}")
    # Latency may name the same culprits; nothing else may be named at all.
    extra = {v for v in found if (v[0], *v[2:]) not in {(k, *h) for k, _, *h in want}}
    if extra:
        problems.append(f"{what}: verdicts beyond the two faults: {sorted(extra)}")
    pairs = [r for r in records if r.get("type") == "pair" and not r["retest"]]
    if len(pairs) != 15:
        problems.append(f"{what}: {len(pairs)} pair records, expected the 15 links of 6 hosts")
    log(f"{what}: verdicts {sorted(found)}")
    nsjobs.report(what, "one host and one link named", [], problems, net)


def case_healthy(net, binary, runs):
    problems = []
    for i in range(int(runs)):
        rcs, records, more, _ = run_pairs(net, binary, f"healthy{i}")
        problems += more
        found = [r for r in records if r.get("type") == "pair_verdict"]
        if rcs != [0] * WORLD or found:
            problems.append(f"healthy run {i}: exit codes {rcs}, verdicts {found}")
    nsjobs.report(f"pairs: {runs} healthy runs", "no verdict", [], problems, net)


if __name__ == "__main__":
    sys.exit(main(globals()))
