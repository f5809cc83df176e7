#!/usr/bin/python3
"""The rows of `ccscope bench allreduce --np N` runs (ctest label `mp`): one per size, dtype, op
and placement, exact, with every field.

    results_test.py --ccscope BIN [--deadline S] CASE [ARGS...]
    sweep T N               --np N over transport T, rotating dtypes/ops with N; #wrong 0
    all_types T N           --dtype all --op all on N ranks
    edge_counts T N         counts below/not divisible by N, and 0 elements
    many_iters T N          -n 9000: more latency samples than the statistics buffer
    placement T N           --placement out / in: only that half's rows and table columns
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log, read_jsonl  # noqa: E402
from mplib import (DTYPES, ITERS, OPS, RUN_TIMEOUT, bench, check_result_row,  # noqa: E402
                   expected_row_count, main, split_records, sweep_sizes, verify_sweep)


def rotated(n, transport):
    """3 dtypes and 2 ops per rank count: over N = 1..9 every dtype and op comes up per
    transport."""
    doff, ooff = (0, 0) if transport == "shm" else (5, 2)
    dtypes = [DTYPES[(3 * (n - 1) + j + doff) % len(DTYPES)] for j in range(3)]
    ops = [OPS[(2 * (n - 1) + j + ooff) % len(OPS)] for j in range(2)]
    return dtypes, ops


def case_sweep(h, binary, mpirun, transport, n):
    n = int(n)
    dtypes, ops = rotated(n, transport)
    # Factor 7: sizes 8..941192 B whose element counts are odd (not divisible by most N).
    b, e, f = "8", "1M", 7
    sizes = sweep_sizes(b, e, factor=f)
    js = h.path("sweep.jsonl")
    argv = bench(binary, "--np", n, "--transport", transport, "-b", b, "-e", e, "-f", f,
                 "--dtype", ",".join(dtypes), "--op", ",".join(ops), *ITERS, "--timeout", "30s",
                 "--json", js)
    rc, _, _, p = h.run(argv, RUN_TIMEOUT)
    verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sizes, dtypes=dtypes, ops=ops)
    log(f"np {n} over {transport}: dtypes {dtypes} ops {ops}: "
        f"{expected_row_count(sizes, dtypes, ops)} rows exact in {p.wall:.1f} s")


def case_all_types(h, binary, mpirun, transport, n):
    n = int(n)
    b, e, f = "8", "64K", 8
    sizes = sweep_sizes(b, e, factor=f)
    js = h.path("all.jsonl")
    argv = bench(binary, "--np", n, "--transport", transport, "-b", b, "-e", e, "-f", f,
                 "--dtype", "all", "--op", "all", *ITERS, "--timeout", "30s", "--json", js)
    rc, _, _, p = h.run(argv, RUN_TIMEOUT)
    verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sizes, dtypes=DTYPES, ops=OPS)
    log(f"all dtypes x all ops on {n} ranks over {transport}: exact in {p.wall:.1f} s")


EDGE_RUNS = [
    # 12 B of float = 3 elements: fewer elements than ranks (N = 5, 7).
    dict(b="12", e="12", f=2, step=0, dtypes=["float"], ops=OPS),
    # Steps of 12 B: float counts 1, 4, 7, ... 25 and int8/half counts that rarely divide by N.
    dict(b="4", e="100", f=0, step=12, dtypes=["float", "int8", "half"], ops=["sum", "max"]),
    # Zero elements, every dtype and op.
    dict(b="0", e="0", f=2, step=0, dtypes=DTYPES, ops=OPS),
]


def case_edge_counts(h, binary, mpirun, transport, n):
    n = int(n)
    for k, r in enumerate(EDGE_RUNS):
        js = h.path(f"edge{k}.jsonl")
        sweep = ["-i", str(r["step"])] if r["step"] else ["-f", str(r["f"])]
        argv = bench(binary, "--np", n, "--transport", transport, "-b", r["b"], "-e", r["e"],
                     *sweep, "--dtype", ",".join(r["dtypes"]), "--op", ",".join(r["ops"]),
                     *ITERS, "--timeout", "30s", "--json", js)
        sizes = sweep_sizes(r["b"], r["e"], factor=r["f"], step=r["step"])
        rc, _, _, p = h.run(argv, RUN_TIMEOUT, label=f"edge{k}")
        _, results = verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sizes,
                                  dtypes=r["dtypes"], ops=r["ops"])
        counts = sorted({x["count"] for x in results})
        if r["b"] == "0":
            check(counts == [0], f"zero-byte run reported counts {counts}")
        log(f"{n} ranks over {transport}: -b {r['b']} -e {r['e']}: counts {counts} exact")


def case_many_iters(h, binary, mpirun, transport, n):
    """More iterations than the harness's statistics buffer holds samples (4096): the per-
    iteration latency vector is reduced in pieces, and the row still reports every iteration."""
    n, iters = int(n), 9000
    js = h.path("iters.jsonl")
    argv = bench(binary, "--np", n, "--transport", transport, "-b", "8", "-e", "8",
                 "--algo", "recursive_doubling", "-n", str(iters), "-w", "10",
                 "--timeout", "60s", "--json", js)
    rc, _, _, p = h.run(argv, RUN_TIMEOUT)
    _, results = verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=[8],
                              dtypes=["float"], ops=["sum"], iters=iters,
                              algorithm="recursive_doubling")
    lat = results[0]["lat_us"]
    check(0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"],
          f"latency percentiles out of order: {lat}")
    log(f"{iters} iterations on {n} ranks over {transport}: exact, p50 {lat['p50']} us")


def case_placement(h, binary, mpirun, transport, n):
    """--placement out / in: only that half's rows, exact, and the table dashes the other half's
    columns (nccl-tests' positions stay put for scrapers)."""
    n = int(n)
    b, e, f = "1K", "64K", 8
    sizes = sweep_sizes(b, e, factor=f)
    for placement, in_place in (("out", False), ("in", True)):
        js = h.path(f"{placement}.jsonl")
        argv = bench(binary, "--np", n, "--transport", transport, "-b", b, "-e", e, "-f", f,
                     "--placement", placement, *ITERS, "--timeout", "30s", "--json", js)
        rc, _, _, p = h.run(argv, RUN_TIMEOUT, label=placement)
        check(rc == 0, f"exit code {rc}\n{h.describe(p)}")
        _, results = split_records(read_jsonl(js), js)
        for i, r in enumerate(results, 2):
            check_result_row(r, f"{js}:{i}", ranks=n, transport=transport, iters=2)
        check([(r["bytes"], r["in_place"]) for r in results] == [(s, in_place) for s in sizes],
              f"--placement {placement}: rows {[(r['bytes'], r['in_place']) for r in results]}")
        check(all(r["wrong"] == 0 for r in results), f"--placement {placement}: wrong rows")
        lines = [l.split() for l in h.stdout(p).splitlines() if l and not l.startswith("#")]
        check(len(lines) == len(sizes), f"{len(lines)} table rows\n{h.describe(p)}")
        missing = range(5, 9) if in_place else range(9, 13)  # the other half's time..#wrong
        check(all(l[c] == "-" for l in lines for c in missing),
              f"--placement {placement}: the other half's columns are not dashes\n{h.describe(p)}")
    log(f"np {n} over {transport}: --placement out and in measure only their half, exact")


if __name__ == "__main__":
    sys.exit(main(globals()))
