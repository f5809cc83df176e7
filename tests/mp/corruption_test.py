#!/usr/bin/python3
"""Wrong results are caught (ctest label `mp`): the test-only hook CCSCOPE_TESTONLY_CORRUPT_RANK
flips an element of one rank's output, and every checked row must say so, with exit 4.

    corruption_test.py --ccscope BIN [--deadline S] CASE [ARGS...]
    corrupt T N R           allreduce on N ranks over T, rank R corrupts: exit 4, wrong > 0
    corrupt_all T N R       ... for every collective and algorithm, every row
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log, read_jsonl  # noqa: E402
from mplib import (ITERS, RUN_TIMEOUT, bench, main, row_key, split_records,  # noqa: E402
                   sweep_sizes, verify_sweep)

CORRUPT_VAR = "CCSCOPE_TESTONLY_CORRUPT_RANK"


def case_corrupt(h, binary, mpirun, transport, n, victim):
    """The hook flips the low bit of one output element on rank `victim` after the first checked
    run of every size and placement: every row is caught, whatever the dtype and op."""
    n = int(n)
    b, e, f = "64", "4K", 4  # at least 16 elements of every dtype used: every rank reduces
    dtypes, ops = ["int32", "uint8", "float"], ["sum", "max"]
    sizes = sweep_sizes(b, e, factor=f)
    js = h.path("corrupt.jsonl")
    argv = bench(binary, "--np", n, "--transport", transport, "-b", b, "-e", e, "-f", f,
                 "--dtype", ",".join(dtypes), "--op", ",".join(ops), *ITERS, "--timeout", "30s",
                 "--json", js)
    rc, out, err, p = h.run(argv, RUN_TIMEOUT, extra_env={CORRUPT_VAR: victim})
    _, results = verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sizes,
                              dtypes=dtypes, ops=ops, expect_rc=4)
    negative = [row_key(r) for r in results if r["wrong"] < 0]
    check(not negative, f"rows with wrong < 0 (not checked) although -c is the default: {negative}")
    missed = [row_key(r) for r in results if not r["wrong"] > 0]
    check(not missed, f"rows with wrong == 0 although rank {victim} corrupted its output in "
          f"every one: {missed}")
    total = sum(r["wrong"] for r in results)
    check("# Out of bounds values : 0 OK" not in out,
          f"table footer claims 0 wrong values although rows have wrong > 0\n{h.describe(p)}")
    check("wrong" in err, f"stderr does not say that results are wrong\n{h.describe(p)}")
    m = re.search(r"(\d+) wrong element", err)
    if m:
        check(int(m.group(1)) == total,
              f"stderr reports {m.group(1)} wrong elements, the JSON rows sum to {total}")
    log(f"corruption on rank {victim} of {n} over {transport}: exit 4, {total} wrong elements, "
        f"all {len(results)} rows caught")


def case_corrupt_all(h, binary, mpirun, transport, n, victim):
    """Every collective with every algorithm: the hook flips an element of the victim's output
    after the collective, so every checked row must come back wrong, exit 4 each time."""
    n = int(n)
    for coll in ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "alltoallv",
                 "sendrecv"):
        js = h.path(f"corrupt-{coll}.jsonl")
        args = ("--np", n, "--transport", transport, "--algo", "all", "-b", "48", "-e", "4K",
                "-f", "8", "--dtype", "int32", *ITERS, "--timeout", "30s", "--json", js)
        argv = [binary, "bench", coll, *[str(a) for a in args]]
        rc, _, _, p = h.run(argv, RUN_TIMEOUT, label=coll, extra_env={CORRUPT_VAR: victim})
        check(rc == 4, f"{coll}: exit code {rc}, expected 4\n{h.describe(p)}")
        _, results = split_records(read_jsonl(js), js)
        check(results, f"{coll}: no result rows")
        missed = [(r["algorithm"], r["bytes"], r["in_place"]) for r in results if r["wrong"] <= 0]
        check(not missed, f"{coll}: rows where rank {victim}'s corrupted output went unnoticed: "
              f"{missed}")
        algos = sorted({r["algorithm"] for r in results})
        log(f"{coll} on {n} ranks over {transport}: {len(results)} rows, every one caught "
            f"({', '.join(algos)})")


if __name__ == "__main__":
    sys.exit(main(globals()))
