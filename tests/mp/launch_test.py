#!/usr/bin/python3
"""External launchers (ctest label `mp`): ranks started by mpirun or torchrun-style variables
give the rows of `--np 4`, and Open MPI's own MPI_Allreduce runs as the baseline.

    launch_test.py --ccscope BIN [--mpirun M] [--deadline S] CASE [ARGS...]
    mpirun_same             mpirun -np 4 (shm inside) gives the rows of --np 4
    torchrun_same T         4 torchrun-style processes give the rows of --np 4
    mpirun_native           mpirun -np 4 --transport mpi runs MPI_Allreduce (algorithm native)
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log  # noqa: E402
from mplib import (DTYPES, ITERS, RUN_TIMEOUT, bench, main, need_mpirun, row_key,  # noqa: E402
                   start_torchrun, sweep_sizes, verify_sweep)

LAUNCH_B, LAUNCH_E, LAUNCH_F = "8", "64K", 8
LAUNCH_DTYPES, LAUNCH_OPS = ["int8", "int32", "half", "double"], ["sum", "max", "avg"]
LAUNCH_SIZES = sweep_sizes(LAUNCH_B, LAUNCH_E, factor=LAUNCH_F)


def launch_args(transport, js, ops=LAUNCH_OPS, dtypes=LAUNCH_DTYPES):
    args = ["-b", LAUNCH_B, "-e", LAUNCH_E, "-f", LAUNCH_F, "--dtype", ",".join(dtypes),
            "--op", ",".join(ops), *ITERS, "--timeout", "30s", "--json", js]
    if transport:
        args = ["--transport", transport] + args
    return args


def reference_np4(h, binary, transport):
    js = h.path("np4.jsonl")
    rc, _, _, p = h.run(bench(binary, "--np", 4, *launch_args(transport, js)), RUN_TIMEOUT,
                        label="np4")
    _, results = verify_sweep(h, p, rc, js, transport=transport, ranks=4, sizes=LAUNCH_SIZES,
                              dtypes=LAUNCH_DTYPES, ops=LAUNCH_OPS)
    return results


def compare_to_reference(ref, results, what):
    def ident(r):
        return (row_key(r), r["count"], r["ranks"], r["transport"], r["algorithm"], r["wrong"])
    a = sorted(ident(r) for r in ref)
    b = sorted(ident(r) for r in results)
    check(a == b, f"{what} rows differ from --np 4: only in --np 4: {sorted(set(a) - set(b))[:8]}; "
          f"only in {what}: {sorted(set(b) - set(a))[:8]}")


def case_mpirun_same(h, binary, mpirun):
    launcher = need_mpirun(mpirun)
    ref = reference_np4(h, binary, "shm")
    js = h.path("mpirun.jsonl")
    rc, _, _, p = h.run(launcher + bench(binary, *launch_args("shm", js)), RUN_TIMEOUT,
                        label="mpirun")
    run, results = verify_sweep(h, p, rc, js, transport="shm", ranks=4, sizes=LAUNCH_SIZES,
                                dtypes=LAUNCH_DTYPES, ops=LAUNCH_OPS)
    check(run.get("launcher") == "openmpi",
          f"run record launcher {run.get('launcher')!r}: the processes did not join as MPI ranks")
    compare_to_reference(ref, results, "mpirun -np 4")
    log(f"mpirun -np 4: {len(results)} rows, same as --np 4")


def case_torchrun_same(h, binary, mpirun, transport):
    ref = reference_np4(h, binary, transport)
    js = h.path("torchrun.jsonl")
    procs, _ = start_torchrun(h, bench(binary, *launch_args(transport, js)), 4)
    rcs = [h.wait(p, RUN_TIMEOUT) for p in procs]
    for r, (p, rc) in enumerate(zip(procs, rcs)):
        check(rc == 0, f"torchrun-style rank {r} exit code {rc}\n{h.describe(p)}")
    run, results = verify_sweep(h, procs[0], 0, js, transport=transport, ranks=4,
                                sizes=LAUNCH_SIZES, dtypes=LAUNCH_DTYPES, ops=LAUNCH_OPS)
    check(run.get("launcher") == "torchrun",
          f"run record launcher {run.get('launcher')!r}: the processes did not join as "
          f"torchrun ranks")
    compare_to_reference(ref, results, "torchrun-style")
    log(f"torchrun-style 4 ranks over {transport}: {len(results)} rows, same as --np 4")


def case_mpirun_native(h, binary, mpirun):
    launcher = need_mpirun(mpirun)
    js = h.path("native.jsonl")
    ops = ["sum", "prod", "min", "max"]  # MPI has no avg
    dtypes = [d for d in DTYPES if d not in ("half", "bfloat16")]  # nor 16-bit floats
    rc, _, _, p = h.run(launcher + bench(binary, *launch_args("mpi", js, ops=ops, dtypes=dtypes)),
                        RUN_TIMEOUT, label="mpirun")
    run, results = verify_sweep(h, p, rc, js, transport="mpi", ranks=4, sizes=LAUNCH_SIZES,
                                dtypes=dtypes, ops=ops, algorithm="native")
    check(run.get("launcher") == "openmpi", f"run record launcher {run.get('launcher')!r}")
    log(f"mpirun --transport mpi: {len(results)} rows, algorithm native, exact")


if __name__ == "__main__":
    sys.exit(main(globals()))
