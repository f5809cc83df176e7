#!/usr/bin/python3
"""A broken link between netns hosts (ctest label `netns`): layer host-network, culprit the
link and the ranks on it, on every rank (bench) or in `ccscope diagnose`'s verdict.

    link_test.py --ccscope BIN [--deadline S] CASE ARGS...
    linkdown WORLD HOST switch|host  HOST's cable pulled: its veth down on the switch side or
                                     the host side (ip link set eth0 down)
    drop WORLD A B                   iptables DROP between ring-adjacent hosts A and B mid-run
    diagnose_drop WORLD A B          the same before `ccscope diagnose` starts
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from netlab import NHOSTS, main  # noqa: E402
from nsjobs import Expect, ranks_on, report, run_diagnose, run_fault  # noqa: E402


def case_linkdown(net, binary, world, host, side):
    """One host's cable pulled: its veth set down on the switch side or the host side."""
    world, host = int(world), int(host)
    assert side in ("switch", "host") and 0 < host < NHOSTS

    def inject(job):
        if side == "switch":
            net.sw_cmd(["ip", "link", "set", f"h{host}", "down"],
                       undo=["ip", "link", "set", f"h{host}", "up"])
        else:
            net.host_cmd(host, ["ip", "link", "set", "eth0", "down"],
                         undo=["ip", "link", "set", "eth0", "up"])

    expect = Expect(net, "host-network", ranks_on(host, world), [host], link_hosts=[host])
    run_fault(net, binary, world, inject, expect, list(range(world)),
              f"link of host {net.hosts[host]} down ({side} side of the veth), {world} ranks")


def drop_between(net, a, b):
    """iptables DROP in host a's namespace for everything to/from host b."""
    net.iptables(a, ["INPUT", "-s", net.ips[b], "-j", "DROP"])
    net.iptables(a, ["OUTPUT", "-d", net.ips[b], "-j", "DROP"])


def case_drop(net, binary, world, a, b):
    world, a, b = int(world), int(a), int(b)
    # The ring crosses a<->b between the last rank on the lower host and the first on the other.
    lo, hi = sorted((a, b))
    if (lo, hi) == (0, NHOSTS - 1):
        pair = [world - 1, 0]
    else:
        pair = [ranks_on(lo, world)[-1], ranks_on(hi, world)[0]]
    expect = Expect(net, "host-network", pair, [a, b], link_hosts=[a, b],
                    ranks_alt=[ranks_on(a, world) + ranks_on(b, world)])
    run_fault(net, binary, world, lambda job: drop_between(net, a, b), expect,
              list(range(world)), f"packets dropped between {net.hosts[a]} and {net.hosts[b]}, "
              f"{world} ranks (ring hop {pair[0]}->{pair[1]})")


def case_diagnose_drop(net, binary, world, a, b):
    world, a, b = int(world), int(a), int(b)
    drop_between(net, a, b)
    expect = Expect.link(net, world, a, b)
    what = f"diagnose, packets dropped between {net.hosts[a]} and {net.hosts[b]}"
    problems = run_diagnose(net, binary, world, expect, what, want_rc=1)
    report(what, expect, [], problems, net)


if __name__ == "__main__":
    sys.exit(main(globals()))
