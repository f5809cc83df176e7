#!/usr/bin/python3
"""The rendezvous store cannot be reached (ctest label `netns`): its port refused for one host,
or already taken on host 0 before rank 0 starts. Layer bootstrap, within the deadline.

    bootstrap_test.py --ccscope BIN [--deadline S] CASE ARGS...
    refused WORLD HOST                    REJECT tcp-reset to the store port for HOST's address
    portinuse WORLD silent|accept-close   something else listens on MASTER_PORT on host 0
"""

import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from labcommon import check  # noqa: E402
from netlab import PORT, SLACK_S, TIMEOUT_S, main  # noqa: E402
from nsjobs import Expect, ranks_on, run_bootstrap  # noqa: E402


def case_refused(net, binary, world, host):
    """REJECT --reject-with tcp-reset to the store port on host 0, for one host's address."""
    world, host = int(world), int(host)

    def setup():
        net.iptables(0, ["INPUT", "-p", "tcp", "-s", net.ips[host], "--dport", str(PORT), "-j",
                         "REJECT", "--reject-with", "tcp-reset"])

    # The refused ranks never reach the store, so the other ranks cannot know their host: they
    # must name the ranks; the host is named by the refused ranks themselves (hosts, when named
    # by anyone, must be the victim's).
    expect = Expect(net, "bootstrap", ranks_on(host, world), [host], hosts_optional=True)
    run_bootstrap(net, binary, world, expect, list(range(world)),
                  f"rendezvous port refused for {net.hosts[host]}, {world} ranks", setup)


SQUAT = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[2], int(sys.argv[1]))); s.listen(128)
open(sys.argv[4], "w").close()
while True:
    if sys.argv[3] == "accept-close":
        c, _ = s.accept(); c.close()
    else:
        time.sleep(3600)
"""


def check_rank0_could_not_bind(job, t0, summary):
    """Rank 0 finds its port taken: exit 2 within 5 s, naming the port and the bootstrap layer."""
    p = job.procs[0]
    rc = p.wait(TIMEOUT_S + SLACK_S)
    t = (p.t_exit or time.monotonic()) - t0
    err = p.stderr()
    summary.append((0, rc, round(t, 1), "(could not bind)", None))
    if rc != 2 or t > 5 or str(PORT) not in err or "bootstrap" not in err:
        return [f"rank 0 (port taken): exit {rc} after {t:.1f} s, expected 2 within 5 s "
                f"with an error naming port {PORT} and the bootstrap layer\n{p.describe()}"]
    return []


def case_portinuse(net, binary, world, kind):
    """Something already listens on MASTER_PORT on host 0 when rank 0 starts. kind: `silent`
    (listens, never accepts: connections complete in the backlog and hear nothing) or
    `accept-close` (accepts and closes every connection), bound to MASTER_ADDR.
    Rank 0 cannot bind: a prompt error naming the port and the bootstrap layer (exit 2, as for
    `--np` in tests/mp badinput.master_port_in_use). The other ranks reach the squatter instead
    of a store: each exits 3 within the deadline with a bootstrap diagnosis naming host 0's
    store (culprit rank 0, host 0)."""
    world = int(world)
    ready = os.path.join(net.workdir, "squatter.ready")
    squatter = []

    def setup():
        squatter.append(net.start(0, [sys.executable, "-c", SQUAT, str(PORT), net.ips[0], kind,
                                      ready], {}, "squatter"))
        end = time.monotonic() + 10
        while not os.path.exists(ready):
            check(time.monotonic() < end, "the port squatter did not start")
            time.sleep(0.02)

    expect = Expect(net, "bootstrap", [0], [0])
    run_bootstrap(net, binary, world, expect, list(range(1, world)),
                  f"rendezvous port {PORT} already in use on {net.hosts[0]} ({kind}), "
                  f"{world} ranks", setup, keep=squatter, own_check=check_rank0_could_not_bind)


if __name__ == "__main__":
    sys.exit(main(globals()))
