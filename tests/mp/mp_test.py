#!/usr/bin/python3
"""Multi-process end-to-end tests of `ccscope bench allreduce` (ctest label `mp`).

One invocation runs one case:
    mp_test.py --ccscope BUILD/app/ccscope [--mpirun PATH] [--deadline S] CASE [ARGS...]
Cases (see tests/mp/CMakeLists.txt for the instances registered with ctest):
    sweep T N               --np N over transport T, rotating dtypes/ops with N; #wrong 0
    all_types T N           --dtype all --op all on N ranks
    edge_counts T N         counts below/not divisible by N, and 0 elements
    corrupt T N R           CCSCOPE_TESTONLY_CORRUPT_RANK=R is caught: exit 4, wrong > 0
    corrupt_all T N R       ... for every collective and algorithm, every row
    many_iters T N          -n 9000: more latency samples than the statistics buffer
    mpirun_same             mpirun -np 4 (shm inside) gives the rows of --np 4
    torchrun_same T         4 torchrun-style processes give the rows of --np 4
    mpirun_native           mpirun -np 4 --transport mpi runs MPI_Allreduce (algorithm native)
    fault K T N V           --np N, signal K (kill|stop) to rank V mid-sweep: exit 3, diagnosis
    fault_torchrun K T N V  the same with torchrun-style ranks we own (per-rank exit codes)
    badinput NAME           bad input: exit 2, one stderr line, no hang
    token_refused_job_survives  a wrong-token process is refused, the real job still completes
    join_deadline           3 of 4 torchrun-style ranks: exit 3 within the deadline, rank 3 named
    diagnose_healthy N RUNS `ccscope diagnose --np N` RUNS times: exit 0, no FAIL line, layer none
    diagnose_clock_skew     rank 2 reports a clock 5 s ahead (test-only switch): exit 1, bootstrap,
                            culprit rank 2; with --max-clock-skew 10s: exit 0
    diagnose_collective N V rank V skips the allreduce probe (test-only switch): exit 1,
                            application, culprit V, every ring hop bisected and fine
    diagnose_library VAR VAL  --np 2 with VAR=VAL breaking UCX: exit 1, library, the UCX line
    diagnose_mpirun         mpirun -np 2 ccscope diagnose: exit 0, "MPI initialised"
"""

import json
import os
import re
import signal
import socket
import sys
import time
import uuid

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mplib import (DTYPES, OPS, SkipTest, TestFailure, check, children_of,  # noqa: E402
                   count_result_lines, expected_keys, expected_row_count, free_port, log, main,
                   proc_environ, read_jsonl, alive, check_result_row, row_key, split_records,
                   sweep_sizes)

ITERS = ["-n", "2", "-w", "1"]
RUN_TIMEOUT = 120  # seconds for one healthy run on a busy 2-core machine


def bench(binary, *args):
    return [binary, "bench", "allreduce", *[str(a) for a in args]]


def verify_sweep(h, p, rc, json_path, *, transport, ranks, sizes, dtypes, ops, iters=2,
                 algorithm="ring", expect_rc=0):
    """A finished sweep: exit code, one row per (size, dtype, op, placement), all exact."""
    check(rc == expect_rc, f"exit code {rc}, expected {expect_rc}\n{h.describe(p)}")
    recs = read_jsonl(json_path)
    run, results = split_records(recs, json_path)
    check(run.get("ranks") == ranks, f"run record ranks {run.get('ranks')}, expected {ranks}")
    check(run.get("transport") == transport,
          f"run record transport {run.get('transport')!r}, expected {transport!r}")
    want_n = expected_row_count(sizes, dtypes, ops)
    check(len(results) == want_n, f"{len(results)} result rows, expected {want_n} "
          f"({len(sizes)} sizes x {len(dtypes)} dtypes x {len(ops)} ops x 2 placements)")
    for i, r in enumerate(results, 2):
        check_result_row(r, f"{json_path}:{i}", ranks=ranks, transport=transport,
                         algorithm=algorithm, iters=iters)
    got = {row_key(r) for r in results}
    want = expected_keys(sizes, dtypes, ops)
    check(got == want, f"row keys differ from expected: missing {sorted(want - got)[:10]}, "
          f"unexpected {sorted(got - want)[:10]}")
    if expect_rc == 0:
        bad = [r for r in results if r["wrong"] != 0]
        check(not bad, f"{len(bad)} rows with wrong != 0, e.g. "
              f"{[(row_key(r), r['wrong']) for r in bad[:5]]}\n{h.describe(p)}")
        out = h.stdout(p)
        check("# Out of bounds values : 0 OK" in out,
              f"table footer does not say '# Out of bounds values : 0 OK'\n{h.describe(p)}")
    return run, results


# --------------------------------------------------------------------------------------------
# 1. --np N over shm and tcp


def rotated(n, transport):
    """3 dtypes and 2 ops per rank count; over N = 1..9 every dtype and op comes up per transport."""
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


def case_edge_counts(h, binary, mpirun, transport, n):
    n = int(n)
    runs = [
        # 12 B of float = 3 elements: fewer elements than ranks (N = 5, 7).
        dict(b="12", e="12", f=2, step=0, dtypes=["float"], ops=OPS),
        # Steps of 12 B: float counts 1, 4, 7, ... 25 and int8/half counts that rarely divide by N.
        dict(b="4", e="100", f=0, step=12, dtypes=["float", "int8", "half"], ops=["sum", "max"]),
        # Zero elements, every dtype and op.
        dict(b="0", e="0", f=2, step=0, dtypes=DTYPES, ops=OPS),
    ]
    for k, r in enumerate(runs):
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


# --------------------------------------------------------------------------------------------
# 2. Corruption hook


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
    rc, out, err, p = h.run(argv, RUN_TIMEOUT, extra_env={"CCSCOPE_TESTONLY_CORRUPT_RANK": victim})
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
        rc, _, _, p = h.run(argv, RUN_TIMEOUT, label=coll,
                            extra_env={"CCSCOPE_TESTONLY_CORRUPT_RANK": victim})
        check(rc == 4, f"{coll}: exit code {rc}, expected 4\n{h.describe(p)}")
        _, results = split_records(read_jsonl(js), js)
        check(results, f"{coll}: no result rows")
        missed = [(r["algorithm"], r["bytes"], r["in_place"]) for r in results if r["wrong"] <= 0]
        check(not missed, f"{coll}: rows where rank {victim}'s corrupted output went unnoticed: "
              f"{missed}")
        algos = sorted({r["algorithm"] for r in results})
        log(f"{coll} on {n} ranks over {transport}: {len(results)} rows, every one caught "
            f"({', '.join(algos)})")


# --------------------------------------------------------------------------------------------
# 3. External launchers


LAUNCH_B, LAUNCH_E, LAUNCH_F = "8", "64K", 8
LAUNCH_DTYPES, LAUNCH_OPS = ["int8", "int32", "half", "double"], ["sum", "max", "avg"]


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
    sizes = sweep_sizes(LAUNCH_B, LAUNCH_E, factor=LAUNCH_F)
    _, results = verify_sweep(h, p, rc, js, transport=transport, ranks=4, sizes=sizes,
                              dtypes=LAUNCH_DTYPES, ops=LAUNCH_OPS)
    return results


def compare_to_reference(ref, results, what):
    def ident(r):
        return (row_key(r), r["count"], r["ranks"], r["transport"], r["algorithm"], r["wrong"])
    a = sorted(ident(r) for r in ref)
    b = sorted(ident(r) for r in results)
    check(a == b, f"{what} rows differ from --np 4: only in --np 4: {sorted(set(a) - set(b))[:8]}; "
          f"only in {what}: {sorted(set(b) - set(a))[:8]}")


def need_mpirun(mpirun):
    if not mpirun or not os.access(mpirun, os.X_OK):
        raise SkipTest("mpirun not found")
    return [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4"]


def case_mpirun_same(h, binary, mpirun):
    launcher = need_mpirun(mpirun)
    ref = reference_np4(h, binary, "shm")
    js = h.path("mpirun.jsonl")
    rc, _, _, p = h.run(launcher + bench(binary, *launch_args("shm", js)), RUN_TIMEOUT,
                        label="mpirun")
    sizes = sweep_sizes(LAUNCH_B, LAUNCH_E, factor=LAUNCH_F)
    run, results = verify_sweep(h, p, rc, js, transport="shm", ranks=4, sizes=sizes,
                                dtypes=LAUNCH_DTYPES, ops=LAUNCH_OPS)
    check(run.get("launcher") == "openmpi",
          f"run record launcher {run.get('launcher')!r}: the processes did not join as MPI ranks")
    compare_to_reference(ref, results, "mpirun -np 4")
    log(f"mpirun -np 4: {len(results)} rows, same as --np 4")


def torchrun_env(rank, world, port, token):
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "CCSCOPE_JOB_TOKEN": token}


def start_torchrun(h, argv, world, label="rank"):
    port = free_port()
    token = uuid.uuid4().hex
    return [h.start(argv, torchrun_env(r, world, port, token), label=f"{label}{r}")
            for r in range(world)], port


def case_torchrun_same(h, binary, mpirun, transport):
    ref = reference_np4(h, binary, transport)
    js = h.path("torchrun.jsonl")
    procs, _ = start_torchrun(h, bench(binary, *launch_args(transport, js)), 4)
    rcs = [h.wait(p, RUN_TIMEOUT) for p in procs]
    for r, (p, rc) in enumerate(zip(procs, rcs)):
        check(rc == 0, f"torchrun-style rank {r} exit code {rc}\n{h.describe(p)}")
    sizes = sweep_sizes(LAUNCH_B, LAUNCH_E, factor=LAUNCH_F)
    run, results = verify_sweep(h, procs[0], 0, js, transport=transport, ranks=4, sizes=sizes,
                                dtypes=LAUNCH_DTYPES, ops=LAUNCH_OPS)
    check(run.get("launcher") == "torchrun",
          f"run record launcher {run.get('launcher')!r}: the processes did not join as torchrun ranks")
    compare_to_reference(ref, results, "torchrun-style")
    log(f"torchrun-style 4 ranks over {transport}: {len(results)} rows, same as --np 4")


def case_mpirun_native(h, binary, mpirun):
    launcher = need_mpirun(mpirun)
    js = h.path("native.jsonl")
    ops = ["sum", "prod", "min", "max"]  # MPI has no avg
    dtypes = [d for d in DTYPES if d not in ("half", "bfloat16")]  # nor 16-bit floats
    rc, _, _, p = h.run(launcher + bench(binary, *launch_args("mpi", js, ops=ops, dtypes=dtypes)),
                        RUN_TIMEOUT, label="mpirun")
    sizes = sweep_sizes(LAUNCH_B, LAUNCH_E, factor=LAUNCH_F)
    run, results = verify_sweep(h, p, rc, js, transport="mpi", ranks=4, sizes=sizes,
                                dtypes=dtypes, ops=ops, algorithm="native")
    check(run.get("launcher") == "openmpi", f"run record launcher {run.get('launcher')!r}")
    log(f"mpirun --transport mpi: {len(results)} rows, algorithm native, exact")


# --------------------------------------------------------------------------------------------
# 4. A rank killed or stopped mid-sweep

FAULT_TIMEOUT_S = 4
FAULT_SLACK_S = 5


def fault_args(transport, js):
    return ["--transport", transport, "-b", "1M", "-e", "64M", "-n", "50", "-w", "1",
            "--timeout", f"{FAULT_TIMEOUT_S}s", "--json", js]


def wait_rows(h, js, n_rows, procs, limit=90):
    end = time.monotonic() + limit
    while count_result_lines(js) < n_rows:
        for p in procs:
            if p.poll() is not None:
                raise TestFailure(f"{p.label} exited with {p.returncode} before {n_rows} rows were "
                                  f"written\n{h.describe(p)}")
        check(time.monotonic() < end, f"fewer than {n_rows} result rows after {limit} s")
        time.sleep(0.01)
    _, rows = split_records(read_jsonl(js, allow_partial_last=True), js)
    return rows


def send(pid, kind):
    os.kill(pid, signal.SIGKILL if kind == "kill" else signal.SIGSTOP)


DIAG = re.compile(r"rank (\d+): diagnosis: (.*)")


def check_diagnosis(stderr, survivors, victim, kind, where):
    """Every surviving rank prints a diagnosis line, and each names the victim."""
    lines = [ln for ln in stderr.splitlines() if "diagnosis:" in ln]
    by_rank = {}
    for ln in lines:
        m = DIAG.search(ln)
        check(m, f"{where}: unparsable diagnosis line: {ln!r}")
        by_rank.setdefault(int(m.group(1)), []).append(m.group(2))
        blamed = re.search(r"\brank (\d+)\b", m.group(2))
        check(blamed and int(blamed.group(1)) == victim,
              f"{where}: diagnosis names the wrong rank (victim was rank {victim}): {ln!r}")
    missing = [r for r in survivors if r not in by_rank]
    check(not missing, f"{where}: surviving ranks {missing} printed no diagnosis naming rank "
          f"{victim}\n--- stderr ---\n{stderr[-4000:]}")
    # The verdict must say what happened to the victim: killed (gone) or stopped (frozen).
    words = ("exited or was killed", "gone") if kind == "kill" else ("stopped responding",
                                                                    "stopped answering")
    check(any(w in d for ds in by_rank.values() for d in ds for w in words),
          f"{where}: no diagnosis says rank {victim} {' / '.join(words)}\n--- stderr ---\n"
          f"{stderr[-4000:]}")


def check_rows_kept(h, js, before):
    recs = read_jsonl(js)  # strict: every line complete, valid JSON
    _, rows = split_records(recs, js)
    check(len(rows) >= 2, f"JSON Lines file holds {len(rows)} result rows after the fault, "
          f"expected the >= 2 finished before it")
    check(rows[:len(before)] == before,
          "rows finished before the fault changed or disappeared from the JSON Lines file")
    bad = [row_key(r) for r in rows if r["wrong"] != 0]
    check(not bad, f"rows finished before the fault have wrong != 0: {bad}")
    return rows


def case_fault(h, binary, mpirun, kind, transport, n, victim):
    n, victim = int(n), int(victim)
    assert kind in ("kill", "stop") and 0 < victim < n
    js = h.path("fault.jsonl")
    p = h.start(bench(binary, "--np", n, *fault_args(transport, js)), label="launcher")
    before = wait_rows(h, js, 2, [p])
    ranks = {}
    for pid in children_of(p.pid):
        r = proc_environ(pid).get("CCSCOPE_RANK")
        if r is not None:
            ranks[int(r)] = pid
    check(sorted(ranks) == list(range(n)), f"launcher children carry ranks {sorted(ranks)}, "
          f"expected 0..{n - 1}")
    before = wait_rows(h, js, len(before), [p])  # re-read: rows are only ever appended
    t0 = time.monotonic()
    send(ranks[victim], kind)
    log(f"sent SIG{kind.upper()} to rank {victim} (pid {ranks[victim]}) of {n} over {transport} "
        f"after {len(before)} rows")
    survivors = {r: pid for r, pid in ranks.items() if r != victim}
    exited = {}
    limit = FAULT_TIMEOUT_S + FAULT_SLACK_S
    while len(exited) < len(survivors) and time.monotonic() - t0 < limit + 30:
        for r, pid in survivors.items():
            if r not in exited and not alive(pid):
                exited[r] = time.monotonic() - t0
        time.sleep(0.01)
    rc = h.wait(p, max(1.0, 60 - (time.monotonic() - t0)))
    launcher_s = time.monotonic() - t0
    log(f"survivor exit times (s after the signal): "
        f"{ {r: round(t, 2) for r, t in sorted(exited.items())} }; launcher exited {rc} after "
        f"{launcher_s:.1f} s")
    late = {r: t for r, t in exited.items() if t > limit}
    never = [r for r in survivors if r not in exited]
    check(not never and not late, f"surviving ranks must exit within --timeout {FAULT_TIMEOUT_S}s "
          f"+ {FAULT_SLACK_S} s: late {late}, still running {never}\n{h.describe(p)}")
    check(rc == 3, f"launcher exit code {rc}, expected 3\n{h.describe(p)}")
    check_diagnosis(h.stderr(p), sorted(survivors), victim, kind, "launcher stderr")
    rows = check_rows_kept(h, js, before)
    log(f"JSON Lines kept {len(rows)} rows ({len(before)} seen before the signal)")


def case_fault_torchrun(h, binary, mpirun, kind, transport, n, victim):
    n, victim = int(n), int(victim)
    assert kind in ("kill", "stop") and 0 < victim < n
    js = h.path("fault.jsonl")
    procs, _ = start_torchrun(h, bench(binary, *fault_args(transport, js)), n)
    before = wait_rows(h, js, 2, procs)
    t0 = time.monotonic()
    send(procs[victim].pid, kind)
    log(f"sent SIG{kind.upper()} to torchrun-style rank {victim} of {n} over {transport} after "
        f"{len(before)} rows")
    limit = FAULT_TIMEOUT_S + FAULT_SLACK_S
    results = {}
    for r, p in enumerate(procs):
        if r == victim:
            continue
        rc = h.wait(p, max(1.0, limit + 30 - (time.monotonic() - t0)))
        results[r] = (rc, time.monotonic() - t0)
    log(f"survivors (exit code, seconds after the signal): "
        f"{ {r: (rc, round(t, 2)) for r, (rc, t) in results.items()} }")
    if kind == "stop":
        os.kill(procs[victim].pid, signal.SIGCONT)
        os.kill(procs[victim].pid, signal.SIGKILL)
    procs[victim].wait(timeout=10)
    for r, (rc, t) in results.items():
        check(rc == 3 and t <= limit, f"rank {r}: exit code {rc} after {t:.1f} s, expected 3 "
              f"within {limit} s\n{h.describe(procs[r])}")
        check_diagnosis(h.stderr(procs[r]), [r], victim, kind, f"rank {r} stderr")
    rows = check_rows_kept(h, js, before)
    log(f"JSON Lines kept {len(rows)} rows ({len(before)} seen before the signal)")


# --------------------------------------------------------------------------------------------
# 5. Bad input


def hold_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    return s, s.getsockname()[1]


def check_one_line_error(h, p, rc, must_contain, wall, limit=10.0):
    err = h.stderr(p)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    check(rc == 2, f"exit code {rc}, expected 2\n{h.describe(p)}")
    check(wall <= limit, f"took {wall:.1f} s to report a usage error (limit {limit} s)")
    check(len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}:\n{err}")
    for word in must_contain:
        check(word.lower() in lines[0].lower(),
              f"stderr line does not mention {word!r}: {lines[0]!r}")
    table = [ln for ln in h.stdout(p).splitlines() if ln.strip() and not ln.startswith("#")]
    check(not table, f"a usage error printed result rows on stdout: {table[:3]}")
    log(f"exit 2 in {wall:.2f} s: {lines[0]}")


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


def check_pinned_round_robin(h, p, err, n):
    """Every local rank r said it runs on the r-th allowed CPU, round robin."""
    allowed = sorted(os.sched_getaffinity(0))
    for r in range(n):
        want = f"local rank {r} pinned to CPU {allowed[r % len(allowed)]} (of {len(allowed)} allowed)"
        check(want in err, f"stderr does not say '{want}'\n{h.describe(p)}")
    return allowed


def case_bind(h, binary, mpirun, transport, n):
    """--bind core: local rank r runs on the r-th CPU it may use (round robin), results exact."""
    n = int(n)
    js = h.path("bind.jsonl")
    argv = bench(binary, "--np", n, "--transport", transport, "-b", "1K", "-e", "64K", "-f", 8,
                 "--bind", "core", *ITERS, "--timeout", "30s", "--json", js)
    rc, _, err, p = h.run(argv, RUN_TIMEOUT, extra_env={"CCSCOPE_LOG_LEVEL": "info"})
    verify_sweep(h, p, rc, js, transport=transport, ranks=n, sizes=sweep_sizes("1K", "64K", 8),
                 dtypes=["float"], ops=["sum"])
    allowed = check_pinned_round_robin(h, p, err, n)
    log(f"np {n} over {transport}: --bind core pinned every rank round robin over {allowed}")


def case_bind_mpirun(h, binary, mpirun):
    """--bind core under mpirun: the rank pins itself by the local rank mpirun gives it."""
    launcher = need_mpirun(mpirun) + ["--bind-to", "none"]  # mpirun's own binding stays off
    js = h.path("bind.jsonl")
    argv = launcher + bench(binary, "--transport", "shm", "-b", "1K", "-e", "64K", "-f", 8,
                            "--bind", "core", *ITERS, "--timeout", "30s", "--json", js)
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


def case_badinput(h, binary, mpirun, name):
    small = ["-b", "8", "-e", "8", "-n", "1", "-w", "0", "--timeout", "10s"]
    holder = None
    # A bad value in an environment variable: refused once, before launching.
    bad_env = {
        "bad_single_copy_env": (bench(binary, "--np", "3", *small),
                                "CCSCOPE_SHM_SINGLE_COPY_FROM", "lots", "lots"),
        "bad_wait_sample_period": (bench(binary, "--np", "3", *small),
                                   "CCSCOPE_WAIT_SAMPLE_PERIOD", "often", "often"),
        "diagnose_bad_single_copy_env": ([binary, "diagnose", "--np", "2", "--timeout", "5s"],
                                         "CCSCOPE_SHM_SINGLE_COPY_FROM", "0", "'0'"),
    }
    if name in bad_env:
        argv, variable, value, word = bad_env[name]
        p = h.start(argv, {variable: value}, label="env")
        rc = h.wait(p, 30)
        check_one_line_error(h, p, rc, [variable, word], p.wall)
        return
    if name == "unknown_collective":
        argv, words = [binary, "bench", "allgatherx", "--np", "3"], ["allgatherx"]
    elif name == "min_gt_max":
        argv, words = bench(binary, "--np", "3", "-b", "1M", "-e", "1K"), ["-b", "-e"]
    elif name == "bad_size":
        argv, words = bench(binary, "--np", "3", "-b", "12Q"), ["12Q"]
    elif name == "bad_dtype":
        argv, words = bench(binary, "--np", "3", "--dtype", "float7"), ["float7"]
    elif name == "np0":
        argv, words = bench(binary, "--np", "0"), ["np"]
    elif name == "unknown_op":
        argv, words = bench(binary, "--np", "3", "--op", "sum,mean"), ["mean"]
    elif name == "unknown_transport":
        argv, words = bench(binary, "--np", "3", "--transport", "carrier-pigeon"), ["carrier-pigeon"]
    elif name == "unknown_algo":
        argv, words = bench(binary, "--np", "3", "--algo", "nosuchalgo", *small), ["nosuchalgo"]
    elif name == "too_large":
        # 8 ranks x 4 interleaved algorithms x 2 buffers x 64 GiB = 4 TiB, more than any test
        # machine has: refused before a page is touched.
        argv = bench(binary, "--np", "8", "-b", "64G", "-e", "64G", "--algo",
                     "ring,tree,rabenseifner,recursive_doubling", "--interleave")
        words = ["-e 64 GiB", "4 interleaved", "8 ranks", "MemAvailable"]
    elif name == "bad_bind":
        argv, words = bench(binary, "--np", "2", "--bind", "socket"), ["--bind", "socket"]
    elif name == "bad_placement":
        argv, words = bench(binary, "--np", "2", "--placement", "sideways"), ["--placement", "sideways"]
    elif name == "placement_in_alltoall":
        argv = [binary, "bench", "alltoall", "--np", "2", "--placement", "in"]
        words = ["alltoall", "in-place"]
    elif name == "bad_hugepages":
        argv, words = bench(binary, "--np", "2", "--hugepages", "maybe"), ["--hugepages", "maybe"]
    elif name == "bad_timeout":
        argv, words = bench(binary, "--np", "3", "--timeout", "5parsecs"), ["5parsecs"]
    elif name == "bad_max_clock_skew":
        argv = [binary, "diagnose", "--np", "2", "--max-clock-skew", "2parsecs"]
        words = ["--max-clock-skew", "2parsecs"]
    elif name == "rank_not_below_world":
        p = h.start(bench(binary, *small), torchrun_env(5, 4, free_port(), "t0k3n"), label="rank5")
        rc = h.wait(p, 30)
        check_one_line_error(h, p, rc, ["RANK", "WORLD_SIZE"], p.wall)
        return
    elif name == "port_in_use":
        holder, port = hold_port()
        argv, words = bench(binary, "--np", "3", "--store-port", port, *small), [str(port)]
    elif name == "master_port_in_use":
        # torchrun-style rank 0 hosts the store on MASTER_PORT, which another process holds.
        holder, port = hold_port()
        p = h.start(bench(binary, *small), torchrun_env(0, 2, port, "t0k3n"), label="rank0")
        rc = h.wait(p, 30)
        check_one_line_error(h, p, rc, [str(port)], p.wall)
        holder.close()
        return
    elif name == "job_token":
        port = free_port()
        r0 = h.start(bench(binary, *small[:-1], "30s"), torchrun_env(0, 2, port, "good-token"),
                     label="rank0")
        wait_listening(h, r0, port)
        r1 = h.start(bench(binary, *small), torchrun_env(1, 2, port, "other-token"), label="rank1")
        rc = h.wait(r1, 30)
        check_one_line_error(h, r1, rc, ["token"], r1.wall, limit=5.0)
        h.kill_all()  # rank 0 is still waiting for a rank 1
        return
    else:
        raise TestFailure(f"unknown bad-input case {name}")
    rc, _, _, p = h.run(argv, 30)
    check_one_line_error(h, p, rc, words, p.wall)
    if holder:
        holder.close()


def wait_listening(h, p, port, limit=20):
    end = time.monotonic() + limit
    while True:
        check(p.poll() is None, f"rank 0 exited early with {p.returncode}\n{h.describe(p)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            check(time.monotonic() < end, f"rank 0 does not listen on {port} after {limit} s")
            time.sleep(0.05)


def case_token_refused_job_survives(h, binary, mpirun):
    """A process with the wrong token is refused; the job's own rank 1 then joins and finishes."""
    port = free_port()
    js = h.path("token.jsonl")
    argv = bench(binary, "-b", "8", "-e", "1K", "-f", "4", *ITERS, "--timeout", "30s",
                 "--json", js)
    r0 = h.start(argv, torchrun_env(0, 2, port, "good-token"), label="rank0")
    wait_listening(h, r0, port)
    bad = h.start(argv, torchrun_env(1, 2, port, "other-token"), label="intruder")
    rc = h.wait(bad, 30)
    check(rc == 2, f"intruder exit code {rc}, expected 2\n{h.describe(bad)}")
    good = h.start(argv, torchrun_env(1, 2, port, "good-token"), label="rank1")
    rc1, rc0 = h.wait(good, RUN_TIMEOUT), h.wait(r0, RUN_TIMEOUT)
    check(rc0 == 0 and rc1 == 0, f"after refusing an intruder the job failed: rank 0 {rc0}, "
          f"rank 1 {rc1}\n{h.describe(r0)}\n{h.describe(good)}")
    verify_sweep(h, r0, rc0, js, transport="shm", ranks=2, sizes=sweep_sizes("8", "1K", 4),
                 dtypes=["float"], ops=["sum"])
    log("intruder refused with exit 2; the job completed with rank 1")


def case_join_deadline(h, binary, mpirun):
    """3 of 4 torchrun-style ranks start: they stop within the deadline, naming rank 3."""
    timeout = 3
    port, token = free_port(), uuid.uuid4().hex
    argv = bench(binary, "-b", "8", "-e", "8", "--timeout", f"{timeout}s")
    t0 = time.monotonic()
    procs = [h.start(argv, torchrun_env(r, 4, port, token), label=f"rank{r}") for r in range(3)]
    res = [(h.wait(p, 60), time.monotonic() - t0) for p in procs]
    log(f"ranks 0..2 (exit code, seconds): {[(rc, round(t, 2)) for rc, t in res]}")
    for r, (rc, t) in enumerate(res):
        check(rc == 3 and t <= timeout + 5, f"rank {r}: exit code {rc} after {t:.1f} s, expected "
              f"3 within {timeout + 5} s\n{h.describe(procs[r])}")
    err0 = h.stderr(procs[0])
    named = [ln for ln in err0.splitlines() if "join" in ln and re.search(r"\b3\b", ln)]
    check(named, f"rank 0 (the store) does not name rank 3 as not joined:\n{err0}")
    log(f"rank 0: {named[0]}")


# --------------------------------------------------------------------------------------------
# 6. ccscope diagnose


def run_diagnose(h, binary, np_, *args, env=None, label=None, timeout=RUN_TIMEOUT, launcher=None):
    """`ccscope diagnose --np N` (or N ranks under `launcher`): (exit code, rank 0's report, its
    --json record, process)."""
    js = h.path(f"{label or 'diag'}.json")
    argv = [binary, "diagnose", "--json", js, *[str(a) for a in args]]
    argv = launcher + argv if launcher else argv[:2] + ["--np", str(np_)] + argv[2:]
    rc, out, _, p = h.run(argv, timeout, extra_env=env, label=label)
    rec = None
    try:
        with open(js) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        pass
    check(rc in (0, 1, 3), f"diagnose exit code {rc}\n{h.describe(p)}")
    check(isinstance(rec, dict), f"no diagnosis record in {js}\n{h.describe(p)}")
    return rc, out, rec, p


def probe_line(out, name):
    """The report line of one probe: 'PASS bootstrap    clock skew   ...'."""
    for ln in out.splitlines():
        if re.match(r"(PASS|FAIL|SKIP) +[\w-]+ +" + re.escape(name) + r"( |$)", ln):
            return ln
    return None


def case_diagnose_healthy(h, binary, mpirun, n, runs):
    for i in range(int(runs)):
        rc, out, rec, p = run_diagnose(h, binary, n, label=f"healthy{i}")
        fails = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
        check(rc == 0 and not fails and rec.get("layer") == "none",
              f"run {i + 1}: exit {rc}, layer {rec.get('layer')}, FAIL lines {fails}\n{h.describe(p)}")
        skew = probe_line(out, "clock skew")
        check(skew and skew.startswith("PASS") and "bound 2 s" in skew,
              f"run {i + 1}: no passing clock-skew line with its bound\n{out}")
        ucx = probe_line(out, "ucx init") or ""
        check(re.match(r"PASS .*UCX \S+ initialised on every rank", ucx) or "built without UCX" in ucx,
              f"run {i + 1}: ucx init line {ucx!r}\n{out}")
        for name, want in (("nccl init", "SKIP"), ("mpi init", "SKIP"), ("allreduce over tcp", "PASS"),
                           ("allreduce over shm", "PASS")):
            line = probe_line(out, name) or ""
            check(line.startswith(want), f"run {i + 1}: {name} line {line!r}, expected {want}\n{out}")
    log(f"{runs} healthy diagnose runs on {n} ranks: exit 0; last clock line: {skew}; {ucx}")


def case_diagnose_clock_skew(h, binary, mpirun):
    env = {"CCSCOPE_TESTONLY_CLOCK_OFFSET": "2:5"}
    rc, out, rec, p = run_diagnose(h, binary, 3, env=env, label="skewed")
    line = probe_line(out, "clock skew") or ""
    check(rc == 1 and rec.get("layer") == "bootstrap",
          f"exit {rc}, layer {rec.get('layer')}: expected 1, bootstrap\n{h.describe(p)}")
    check((rec.get("culprit") or {}).get("ranks") == [2],
          f"culprit {rec.get('culprit')}, expected ranks [2]")
    check(line.startswith("FAIL") and "rank 2" in line and "5.0" in line and "ahead" in line,
          f"clock-skew line does not name rank 2, 5 s ahead: {line!r}")
    log(f"skewed clock: {line}")
    rc, out, rec, p = run_diagnose(h, binary, 3, "--max-clock-skew", "10s", env=env, label="allowed")
    line = probe_line(out, "clock skew") or ""
    check(rc == 0 and line.startswith("PASS") and "bound 10 s" in line,
          f"--max-clock-skew 10s: exit {rc}, {line!r}\n{h.describe(p)}")
    log(f"--max-clock-skew 10s: {line}")


def case_diagnose_library(h, binary, mpirun, variable, value):
    """A UCX variable that breaks its initialisation: exit 1, layer library, the UCX line."""
    rc, out, rec, p = run_diagnose(h, binary, 2, env={variable: value}, label="baducx")
    line = probe_line(out, "ucx init") or ""
    if "built without UCX" in line:
        raise SkipTest("ccscope was built without UCX")
    evidence = [e.get("text", "") for e in rec.get("evidence") or []]
    check(rc == 1 and rec.get("layer") == "library",
          f"exit {rc}, layer {rec.get('layer')}: expected 1, library\n{h.describe(p)}")
    check(line.startswith("FAIL") and value in line, f"ucx init line does not name {value}: {line!r}")
    # The verdict is the first failing library probe: ucx init, or the environment check that
    # already sees a device name that does not exist; the ucx init line fails either way.
    if rec.get("verdict", "").startswith("ucx init"):
        check(any(re.search(r"UCX\s+(WARN|ERROR)", e) and value in e for e in evidence),
              f"no UCX log line naming {value} in the evidence: {evidence}")
    else:
        check(any(variable in e and value in e for e in evidence), f"evidence {evidence}")
    check((rec.get("culprit") or {}).get("ranks") == [0, 1], f"culprit {rec.get('culprit')}")
    log(f"{variable}={value}: {rec.get('verdict')}; evidence {evidence[0]!r}")


def case_diagnose_mpirun(h, binary, mpirun):
    """`mpirun -np 2 ccscope diagnose`: MPI is up, every probe passes, mpirun exits 0."""
    launcher = need_mpirun(mpirun)[:-1] + ["2"]
    rc, out, rec, p = run_diagnose(h, binary, 2, launcher=launcher, label="mpirun")
    line = probe_line(out, "mpi init") or ""
    check(rc == 0 and rec.get("layer") == "none",
          f"exit {rc}, layer {rec.get('layer')}\n{h.describe(p)}")
    check(line.startswith("PASS") and "MPI initialised" in line, f"mpi init line {line!r}\n{out}")
    log(line)


def case_diagnose_collective(h, binary, mpirun, n, victim):
    """Rank `victim` skips the allreduce probe (test-only switch): the others fail waiting, the
    ring is bisected over a fresh transport, every hop is fine: exit 1, layer application,
    culprit the rank that skipped."""
    env = {"CCSCOPE_TESTONLY_DIAG_SKIP_COLLECTIVE": str(victim)}
    t0 = time.monotonic()
    rc, out, rec, p = run_diagnose(h, binary, n, "--timeout", "2s", env=env, label="skip")
    took = time.monotonic() - t0
    coll, hops = probe_line(out, "allreduce over tcp") or "", probe_line(out, "ring hops over tcp") or ""
    check(rc == 1 and rec.get("layer") == "application",
          f"exit {rc}, layer {rec.get('layer')}: expected 1, application\n{h.describe(p)}")
    check((rec.get("culprit") or {}).get("ranks") == [int(victim)],
          f"culprit {rec.get('culprit')}, expected ranks [{victim}]\n{out}")
    check(coll.startswith("FAIL") and f"rank(s) {victim} finished their side" in coll, f"allreduce line {coll!r}")
    check(hops.startswith("PASS") and "every hop delivers" in hops, f"ring hops line {hops!r}\n{out}")
    check(took < 30, f"took {took:.1f} s with --timeout 2s")
    log(f"{coll}\n{hops}\n({took:.1f} s)")


CASES = {
    "diagnose_collective": case_diagnose_collective,
    "diagnose_library": case_diagnose_library,
    "diagnose_mpirun": case_diagnose_mpirun,
    "diagnose_healthy": case_diagnose_healthy,
    "diagnose_clock_skew": case_diagnose_clock_skew,
    "join_deadline": case_join_deadline,
    "sweep": case_sweep,
    "all_types": case_all_types,
    "edge_counts": case_edge_counts,
    "many_iters": case_many_iters,
    "host_pages": case_host_pages,
    "placement": case_placement,
    "bind": case_bind,
    "bind_mpirun": case_bind_mpirun,
    "single_copy_env": case_single_copy_env,
    "corrupt": case_corrupt,
    "corrupt_all": case_corrupt_all,
    "mpirun_same": case_mpirun_same,
    "torchrun_same": case_torchrun_same,
    "mpirun_native": case_mpirun_native,
    "fault": case_fault,
    "fault_torchrun": case_fault_torchrun,
    "badinput": case_badinput,
    "token_refused_job_survives": case_token_refused_job_survives,
}

if __name__ == "__main__":
    sys.exit(main(CASES))
