#!/usr/bin/python3
"""A slow link, not a broken one (ctest label `netns`): tc tbf at 10 Mbit/s. bench still
finishes (exit 0, no diagnosis); `ccscope diagnose` names the link, and bisects the slow ring to
the hop across it.

    throttle_test.py --ccscope BIN [--deadline S] CASE ARGS...
    throttle WORLD HOST        HOST's own veth throttled (both ends): every pair through it slow
    throttle WORLD A B         only the traffic between hosts A and B throttled
    diagnose_hop WORLD A B     ring-adjacent A and B throttled: the ring-hop probe names A -> B
"""

import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from labcommon import log, probe_line  # noqa: E402
from netlab import TIMEOUT_S, main  # noqa: E402
from nsjobs import Expect, Job, bench_argv, ranks_on, report, run_diagnose  # noqa: E402

TBF = ["tbf", "rate", "10mbit", "burst", "32kbit", "latency", "50ms"]
# A sweep whose largest operation needs well under --timeout at 10 Mbit/s.
SLOW_SWEEP = ["-b", "8", "-e", "64K", "-f", "8", "-n", "5", "-w", "1", "--timeout", f"{TIMEOUT_S}s"]


def throttle_host(net, a):
    """tbf on both ends of host a's veth."""
    net.sw_cmd(["tc", "qdisc", "add", "dev", f"h{a}", "root", *TBF],
               undo=["tc", "qdisc", "del", "dev", f"h{a}", "root"])
    net.host_cmd(a, ["tc", "qdisc", "add", "dev", "eth0", "root", *TBF],
                 undo=["tc", "qdisc", "del", "dev", "eth0", "root"])


def throttle_pair(net, a, b):
    """tbf only for traffic between hosts a and b, the other pairs at full speed."""
    for x, y in ((a, b), (b, a)):
        # htb without a default class: unclassified traffic leaves unshaped (direct queue);
        # traffic to the peer goes through class 1:20 and the tbf below it.
        net.host_cmd(x, ["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb"],
                     undo=["tc", "qdisc", "del", "dev", "eth0", "root"])
        net.host_cmd(x, ["tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:20",
                         "htb", "rate", "10gbit"])
        net.host_cmd(x, ["tc", "qdisc", "add", "dev", "eth0", "parent", "1:20", "handle", "20:",
                         *TBF])
        net.host_cmd(x, ["tc", "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip",
                         "prio", "1", "u32", "match", "ip", "dst", f"{net.ips[y]}/32",
                         "flowid", "1:20"])


def slow_bench_problems(net, binary, world, what):
    """bench over the slow link: every rank exits 0 without a diagnosis."""
    js = os.path.join(net.workdir, "bench.jsonl")
    t0 = time.monotonic()
    job = Job(net, world, bench_argv(binary, js, *SLOW_SWEEP)).start()
    problems = []
    for r, p in enumerate(job.procs):
        rc = p.wait(120 - (time.monotonic() - t0))
        if rc != 0 or "diagnosis" in p.stderr():
            problems.append(f"bench rank {r}: exit {rc}, expected 0 and no diagnosis on a slow "
                            f"link\n{p.describe()}")
    log(f"{what}: bench exit codes {[p.p.returncode for p in job.procs]} in "
        f"{time.monotonic() - t0:.1f} s")
    return problems


def case_throttle(net, binary, world, a, b=None):
    """`throttle W H`: `tc qdisc add dev <veth> root tbf rate 10mbit burst 32kbit latency 50ms`
    on both ends of host H's veth. `throttle W A B`: the same tbf only for traffic between hosts
    A and B (an htb qdisc with a u32 filter on the peer's address in each of the two hosts).
    bench must finish; diagnose must exit 1, host-network, the hosts and ranks on the link."""
    world, a = int(world), int(a)
    if b is None:
        throttle_host(net, a)
        what = f"link of {net.hosts[a]} throttled to 10mbit, {world} ranks"
        expect = Expect(net, "host-network", ranks_on(a, world), [a], link_hosts=[a],
                        every_link=True)
    else:
        b = int(b)
        throttle_pair(net, a, b)
        what = f"link {net.hosts[a]} <-> {net.hosts[b]} throttled to 10mbit, {world} ranks"
        expect = Expect.link(net, world, a, b)
    problems = slow_bench_problems(net, binary, world, what)
    problems += run_diagnose(net, binary, world, expect, f"{what}: diagnose", want_rc=1)
    report(what, expect, [], problems, net)


def case_diagnose_hop(net, binary, world, a, b):
    """The link between ring-adjacent hosts a and b throttled: the allreduce runs slow, the ring
    is bisected, and the hop a -> b is named with the link between them (the pair probe already
    names the link: the verdict is host-network either way)."""
    world, a, b = int(world), int(a), int(b)
    throttle_pair(net, a, b)
    expect = Expect.link(net, world, a, b)
    what = f"diagnose, link {net.hosts[a]} <-> {net.hosts[b]} throttled, ring hops"
    text = []
    problems = run_diagnose(net, binary, world, expect, what, want_rc=1, rank0_text=text)
    hop = probe_line(text[0] if text else "", "ring hops over tcp") or ""
    log(f"{what}: {hop}")
    if not (hop.startswith("FAIL host-network") and net.names[a][0] in hop
            and net.names[b][0] in hop):
        problems.append(f"{what}: the ring-hop line does not fail naming both hosts: {hop!r}")
    report(what, expect, [], problems, net)


if __name__ == "__main__":
    sys.exit(main(globals()))
