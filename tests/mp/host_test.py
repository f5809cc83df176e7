#!/usr/bin/python3
"""How the ranks use the host (ctest label `mp`): huge or base pages for the buffers, CPU
binding, and the shm transport's single-copy threshold; results exact either way.

    host_test.py --ccscope BIN [--mpirun M] [--deadline S] CASE [ARGS...]
    host_pages T N          --hugepages on (the default) and off: the run record says which
    bind T N                --bind core: rank r pinned to the r-th allowed CPU, round robin
    bind_mpirun             the same under mpirun -np 4, by the local rank mpirun gives
    single_copy_env CMD     CCSCOPE_SHM_SINGLE_COPY_FROM reaches bench or diagnose (CMD)
"""

import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log  # noqa: E402
from mplib import (ITERS, RUN_TIMEOUT, bench, main, need_mpirun, sweep_sizes,  # noqa: E402
                   verify_sweep)


def thp_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            line = f.read()
        return line[line.index("[") + 1:line.index("]")]
    except (OSError, ValueError):
        return ""


def case_host_pages(h, binary, mpirun, transport, n):
    """--hugepages on (the default) and off: exact either way; the run record says which pages
    the buffers asked for; the table warns only when huge pages were asked for and not granted."""
    n = int(n)
    b, e, f = "1M", "8M", 8  # buffers of 8 MiB: four huge pages each
    sizes = sweep_sizes(b, e, factor=f)
    for pages, flag in (("huge", []), ("base", ["--hugepages", "off"])):
        js = h.path(f"{pages}.jsonl")
        argv = bench(binary, "--np", n, "--transport", transport, "-b", b, "-e", e, "-f", f,
                     *flag, *ITERS, "--timeout", "30s", "--json", js)
        rc, _, _, p = h.run(argv, RUN_TIMEOUT, label=pages)
        run, _ = verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sizes,
                              dtypes=["float"], ops=["sum"])
        check(run.get("host_pages") == pages,
              f"run record host_pages {run.get('host_pages')!r}, expected {pages!r}")
        warned = "huge pages asked for" in h.stdout(p)
        # Where the kernel grants huge pages on request, asking gets them; base pages never warn.
        if pages == "base" or thp_mode() in ("madvise", "always"):
            check(not warned, f"unexpected huge-page warning ({pages}, THP "
                  f"{thp_mode()!r})\n{h.describe(p)}")
        else:
            check(warned, f"no warning although THP is {thp_mode()!r}\n{h.describe(p)}")
    log(f"np {n} over {transport}: huge and base pages exact, run records say which")


BIND_SWEEP = ["-b", "1K", "-e", "64K", "-f", 8, "--bind", "core", *ITERS, "--timeout", "30s"]


def check_pinned_round_robin(h, p, err, n):
    """Every local rank r said it runs on the r-th allowed CPU, round robin."""
    allowed = sorted(os.sched_getaffinity(0))
    for r in range(n):
        cpu = allowed[r % len(allowed)]
        want = f"local rank {r} pinned to CPU {cpu} (of {len(allowed)} allowed)"
        check(want in err, f"stderr does not say '{want}'\n{h.describe(p)}")
    return allowed


def case_bind(h, binary, mpirun, transport, n):
    """--bind core: local rank r runs on the r-th CPU it may use (round robin), results exact."""
    n = int(n)
    js = h.path("bind.jsonl")
    argv = bench(binary, "--np", n, "--transport", transport, *BIND_SWEEP, "--json", js)
    rc, _, err, p = h.run(argv, RUN_TIMEOUT, extra_env={"CCSCOPE_LOG_LEVEL": "info"})
    verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sweep_sizes("1K", "64K", 8),
                 dtypes=["float"], ops=["sum"])
    allowed = check_pinned_round_robin(h, p, err, n)
    log(f"np {n} over {transport}: --bind core pinned every rank round robin over {allowed}")


def case_bind_mpirun(h, binary, mpirun):
    """--bind core under mpirun: the rank pins itself by the local rank mpirun gives it."""
    launcher = need_mpirun(mpirun) + ["--bind-to", "none"]  # mpirun's own binding stays off
    js = h.path("bind.jsonl")
    argv = launcher + bench(binary, "--transport", "shm", *BIND_SWEEP, "--json", js)
    rc, _, err, p = h.run(argv, RUN_TIMEOUT, label="mpirun",
                          extra_env={"CCSCOPE_LOG_LEVEL": "info"})
    run, _ = verify_sweep(h, p, rc, js, transport="shm", ranks=4,
                          sizes=sweep_sizes("1K", "64K", 8), dtypes=["float"], ops=["sum"])
    check(run.get("launcher") == "openmpi", f"run record launcher {run.get('launcher')!r}")
    allowed = check_pinned_round_robin(h, p, err, 4)
    log(f"mpirun np 4: --bind core pinned every rank by its local rank over {allowed}")


def case_single_copy_env(h, binary, mpirun, command):
    """$CCSCOPE_SHM_SINGLE_COPY_FROM reaches the shm transport of bench and of diagnose alike."""
    if command == "bench":
        n, js = 3, h.path("sc.jsonl")
        argv = bench(binary, "--np", n, "--transport", "shm", "-b", "8K", "-e", "64K", "-f", 2,
                     *ITERS, "--timeout", "30s", "--json", js)
    else:
        n, argv = 2, [binary, "diagnose", "--np", "2", "--timeout", "10s"]
    # Unset: the transport's own threshold, by whether the local ranks fit the cores.
    own = ((65536, "more local ranks than cores") if n > os.cpu_count() else
           (32768, "a core per local rank"))
    for value, want, why in (("16K", 16384, "CCSCOPE_SHM_SINGLE_COPY_FROM"), (None, *own)):
        env = {"CCSCOPE_LOG_LEVEL": "debug"}
        if value:
            env["CCSCOPE_SHM_SINGLE_COPY_FROM"] = value
        rc, _, err, p = h.run(argv, RUN_TIMEOUT, extra_env=env, label=value or "default")
        check(rc == 0, f"exit {rc}\n{h.describe(p)}")
        said = re.findall(r"rank (\d+)\] \[debug\] shm: single copy from (\d+) B \(([^)]*)\)", err)
        check(sorted(int(r) for r, _, _ in said) == list(range(n)),
              f"not every rank said its threshold: {said}\n{h.describe(p)}")
        for _, got, reason in said:
            check(int(got) == want and reason == why,
                  f"{value or 'unset'}: threshold {got} ({reason}), want {want} ({why})")
        if command == "bench" and value:
            recs = [json.loads(l) for l in open(js)]
            envs = [r["env"] for r in recs if "env" in r]
            check(envs and envs[0].get("CCSCOPE_SHM_SINGLE_COPY_FROM") == value,
                  f"run record env {envs[:1]}")
        log(f"{command}, {value or 'unset'}: {sorted(set((g, r) for _, g, r in said))}")


if __name__ == "__main__":
    sys.exit(main(globals()))
