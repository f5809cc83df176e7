#!/usr/bin/python3
"""A misconfigured host (ctest label `netns`): its ranks ask for `--ifname nosuch0`. They fail
at once naming the interface; the others, and `ccscope diagnose`, blame host-network
(configuration) with those ranks as the culprit.

    ifname_test.py --ccscope BIN [--deadline S] CASE ARGS...
    ifname WORLD HOST            bench, HOST's ranks with --ifname nosuch0
    diagnose_ifname WORLD HOST   the same for `ccscope diagnose`
"""

import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from netlab import SLACK_S, TIMEOUT_S, main  # noqa: E402
from nsjobs import (SHORT, Expect, Job, bench_argv, check_hang, ranks_on, report,  # noqa: E402
                    run_diagnose)

BAD_IFNAME = ["--ifname", "nosuch0"]


def misconfigured(net, world, host):
    """(the ranks on host, what they must be blamed for, their extra arguments)."""
    victims = ranks_on(host, world)
    expect = Expect(net, "host-network", victims, [host], hosts_optional=True)
    return victims, expect, {r: BAD_IFNAME for r in victims}


def case_ifname(net, binary, world, host):
    """The ranks on one host ask for --ifname nosuch0; the others use the default."""
    world, host = int(world), int(host)
    victims, expect, args = misconfigured(net, world, host)
    js = os.path.join(net.workdir, "bench.jsonl")
    job = Job(net, world, bench_argv(binary, js, *SHORT), per_rank_args=args)
    t0 = time.monotonic()
    job.start()
    what = f"--ifname nosuch0 on {net.hosts[host]} (ranks {victims}), {world} ranks"
    summary = []
    problems = check_hang(job, [r for r in range(world) if r not in victims], t0, expect, js,
                          summary)
    # The ranks that asked: a prompt error that names the interface, non-zero, not a hang.
    for r in victims:
        p = job.procs[r]
        rc = p.wait(TIMEOUT_S + SLACK_S)
        t = (p.t_exit or time.monotonic()) - t0
        summary.append((r, rc, round(t, 1), "(asked for nosuch0)", None))
        if rc in (None, 0) or "nosuch0" not in p.stderr():
            problems.append(f"rank {r} (asked for nosuch0): exit {rc} after {t:.1f} s, expected "
                            f"non-zero with an error naming nosuch0\n{p.describe()}")
    report(what, expect, summary, problems, net)


def case_diagnose_ifname(net, binary, world, host):
    world, host = int(world), int(host)
    _, expect, args = misconfigured(net, world, host)
    problems = run_diagnose(net, binary, world, expect,
                            f"diagnose, --ifname nosuch0 on {net.hosts[host]}", want_rc=1,
                            per_rank_args=args)
    report(f"diagnose --ifname nosuch0 on {net.hosts[host]}", expect, [], problems, net)


if __name__ == "__main__":
    sys.exit(main(globals()))
