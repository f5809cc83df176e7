#!/usr/bin/env python3
"""The algorithm family end to end (ctest label `mp`): every collective with every algorithm
(`--algo all`), dtypes int32, float, bfloat16 and double, every reduction that applies, sizes
whose element counts divide by nothing in particular (4 B .. 2 MiB, factor 9: several pipeline
segments at the top), in and out of place, checked exactly: #wrong must be 0 everywhere.

    family T N      all of the above on N ranks over transport T
    auto T N        `--algo auto` for every collective on N ranks: exact rows, each saying which
                    algorithm it ran and why (predicted times, cheapest first), calibration < 2 s
    interleave T N  `--algo all,auto --interleave`: at every size each algorithm's row (out of
                    place, then in place) in --algo order, each size starting one algorithm
                    further on than the last, before the next size, all exact, the table naming
                    each row's algorithm, one waits record for the whole sweep
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log, read_jsonl  # noqa: E402
from mplib import main, split_records  # noqa: E402

RUN_TIMEOUT = 240
DTYPES = ["int32", "float", "bfloat16", "double"]
OPS = ["sum", "prod", "min", "max", "avg"]
REDUCING = {"allreduce", "reducescatter"}
COLLECTIVES = ["allreduce", "reducescatter", "allgather", "broadcast", "alltoall", "alltoallv",
               "sendrecv"]
# nccl-tests' bus-bandwidth factors
BUSBW_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0,
                "sendrecv": lambda n: 1.0}


def case_family(h, binary, mpirun, transport, n):
    """TRANSPORT may be ucx:TLS (e.g. ucx:tcp,self): --transport ucx with UCX_TLS=TLS, and
    ucx-none:TLS the same with --ucx-errors none."""
    n = int(n)
    total = 0
    env = None
    extra = []
    if transport.startswith(("ucx:", "ucx-none:")):
        kind, tls = transport.split(":", 1)
        transport, env = "ucx", {"UCX_TLS": tls}
        extra = ["--ucx-errors", "none"] if kind == "ucx-none" else []
    for coll in COLLECTIVES:
        js = h.path(f"{coll}.jsonl")
        ops = ["--op", ",".join(OPS)] if coll in REDUCING else []
        argv = [binary, "bench", coll, "--np", str(n), "--transport", transport, "--algo", "all",
                "-b", "4", "-e", "2M", "-f", "9", "--dtype", ",".join(DTYPES), *ops,
                "-n", "1", "-w", "0", "--timeout", "60s", "--json", js, *extra]
        rc, out, _, p = h.run(argv, RUN_TIMEOUT, extra_env=env, label=coll)
        check(rc == 0, f"{coll}: exit code {rc}\n{h.describe(p)}")
        run, results = split_records(read_jsonl(js), js)
        algos = run.get("algorithms", [])
        check(algos, f"{coll}: the run record lists no algorithms: {run}")
        bad = [(r["algorithm"], r["dtype"], r["redop"], r["bytes"], r["in_place"], r["wrong"])
               for r in results if r["wrong"] != 0]
        check(not bad, f"{coll} on {n} ranks over {transport}: rows not exact: {bad[:8]}")
        for a in algos:
            for d in DTYPES:
                got = [r for r in results if r["algorithm"] == a and r["dtype"] == d]
                check(got, f"{coll}: no rows for algorithm {a}, dtype {d}")
                if coll in REDUCING:
                    ops_seen = {r["redop"] for r in got}
                    check(ops_seen == set(OPS), f"{coll} {a} {d}: ops {sorted(ops_seen)}")
        check("# Out of bounds values : 0 OK" in out, f"{coll}: the table footer is not 0 OK")
        want = BUSBW_FACTOR.get(coll, lambda n: (n - 1) / n)(n)
        off = [(r["algorithm"], r["bytes"], r["busbw_factor"], r["algbw_gbps"], r["busbw_gbps"])
               for r in results if abs(r["busbw_factor"] - want) > 1e-9 or
               abs(r["busbw_gbps"] - r["algbw_gbps"] * want) > 1e-6 * max(1.0, r["busbw_gbps"])]
        check(not off, f"{coll} on {n} ranks: busbw is not algbw x {want:.4f}: {off[:4]}")
        total += len(results)
        log(f"{coll} on {n} ranks over {transport}: {len(results)} rows exact "
            f"({', '.join(algos)}) in {p.wall:.1f} s")
    log(f"{total} rows exact on {n} ranks over {transport}")


NOTE = re.compile(r"auto picked (\w+) \(model calibrated in ([0-9.]+) s, (\d+) sizes measured\): "
                  r"(.*)")
PREDICTION = re.compile(r"(\w+) ([0-9.]+) us")


def case_auto(h, binary, mpirun, transport, n):
    n = int(n)
    for coll in COLLECTIVES:
        js = h.path(f"auto-{coll}.jsonl")
        # Two dtypes for the reductions: auto measures per collective, dtype and reduction.
        dtypes = ["float", "int32"] if coll in REDUCING else ["float"]
        argv = [binary, "bench", coll, "--np", str(n), "--transport", transport, "--algo", "auto",
                "-b", "8", "-e", "4M", "-f", "8", "--dtype", ",".join(dtypes), "-n", "2",
                "-w", "1", "--timeout", "60s", "--json", js]
        rc, out, _, p = h.run(argv, RUN_TIMEOUT, label=f"auto-{coll}")
        check(rc == 0, f"{coll}: exit code {rc}\n{h.describe(p)}")
        check("auto: cost model calibrated in" in out, f"{coll}: no calibration line\n{out[:2000]}")
        _, results = split_records(read_jsonl(js), js)
        check(results, f"{coll}: no rows")
        bad = [(r["algorithm"], r["bytes"], r["wrong"]) for r in results if r["wrong"] != 0]
        check(not bad, f"auto {coll} on {n} ranks over {transport}: rows not exact: {bad[:8]}")
        picks = set()
        for r in results:
            m = NOTE.fullmatch(r.get("note", ""))
            check(m, f"{coll} {r['bytes']} B: the row does not say what auto picked: "
                     f"{r.get('note')!r}")
            picked, explained = m.group(1), m.group(4)
            seconds, anchors = float(m.group(2)), int(m.group(3))
            check(r["algorithm"] == picked,
                  f"{coll}: row algorithm {r['algorithm']}, note says {picked}")
            # "model ...; timed at this size in S s: ..." when close candidates were timed at the
            # size: then the fastest timed is the pick, and the model's pick was among those timed.
            model, _, timed_part = explained.partition("; timed at this size in ")
            timed_part = timed_part.partition(" s: ")[2]
            predicted = PREDICTION.findall(model)
            timed = PREDICTION.findall(timed_part)
            check(predicted, f"{coll}: no predictions: {explained}")
            times = [float(t) for _, t in predicted]
            check(times == sorted(times), f"{coll}: predictions not cheapest first: {explained}")
            if timed:
                check(timed[0][0] == picked,
                      f"{coll}: the pick is not the fastest timed: {explained}")
                check([float(t) for _, t in timed] == sorted(float(t) for _, t in timed),
                      f"{coll}: timed candidates not fastest first: {explained}")
                check(predicted[0][0] in [a for a, _ in timed] and len(timed) >= 2,
                      f"{coll}: the model's pick was not timed against another: {explained}")
            else:
                check(predicted[0][0] == picked,
                      f"{coll}: the pick is not the cheapest predicted: {explained}")
            check(seconds < 2.0, f"{coll}: calibration took {seconds} s (goal < 2 s)")
            if coll != "sendrecv" and n > 1:
                check(len(predicted) >= 2, f"{coll}: only one candidate predicted: {explained}")
                check(anchors >= 4, f"{coll}: only {anchors} sizes measured")
            picks.add(picked)
        log(f"auto {coll} on {n} ranks over {transport}: {len(results)} rows exact, "
            f"picked {', '.join(sorted(picks))}")


def case_interleave(h, binary, mpirun, transport, n):
    n = int(n)
    for coll in ["allreduce", "alltoall", "broadcast"]:  # alltoall has no in-place rows
        js = h.path(f"interleave-{coll}.jsonl")
        argv = [binary, "bench", coll, "--np", str(n), "--transport", transport, "--algo",
                "all,auto", "--interleave", "-b", "8", "-e", "1M", "-f", "16", "--dtype",
                "float,int32", "-n", "2", "-w", "1", "--timeout", "60s", "--json", js]
        rc, out, _, p = h.run(argv, RUN_TIMEOUT, label=f"interleave-{coll}")
        check(rc == 0, f"{coll}: exit code {rc}\n{h.describe(p)}")
        records = read_jsonl(js)
        run, results = split_records(records, js)
        algos = run.get("algorithms", [])
        check(len(algos) >= 3 and algos[-1] == "auto", f"{coll}: algorithms {algos}")
        check(run.get("interleaved") is True, f"{coll}: the run record is not marked interleaved")
        bad = [(r["algorithm"], r["bytes"], r["wrong"]) for r in results if r["wrong"] != 0]
        check(not bad, f"interleaved {coll} on {n} ranks over {transport}: not exact: {bad[:8]}")
        # The order rows were produced in: per dtype and size, the algorithms take turns forward
        # and then back, each size starting one algorithm further on than the last (from where
        # the run drew its start); a row is written at the end of its second turn, so rows come
        # in the reverse of the size's order: its first algorithm's row last.
        asked = [r.get("requested_algorithm", r["algorithm"]) for r in results]
        keys = [(r["dtype"], r["bytes"]) for r in results]
        places = [False, True] if any(r["in_place"] for r in results) else [False]
        per_size = len(places) * len(algos)
        check(len(results) == per_size * len(set(keys)),
              f"{coll}: {len(results)} rows for {len(set(keys))} sizes x {len(algos)} algorithms")
        first = (algos.index(asked[0]) + 1) % len(algos) if asked and asked[0] in algos else 0
        for i in range(0, len(results), per_size):
            block = results[i:i + per_size]
            check(len({(r["dtype"], r["bytes"]) for r in block}) == 1,
                  f"{coll}: rows {i}..{i + per_size} mix sizes: {keys[i:i + per_size]}")
            start = first + i // per_size
            turns = [algos[(start + j) % len(algos)] for j in range(len(algos))]
            check(asked[i:i + per_size] == [a for a in reversed(turns) for _ in places],
                  f"{coll}: rows {i}.. are not the algorithms in turn from {turns[0]}, "
                  f"reversed: {asked[i:i + per_size]}")
            check([r["in_place"] for r in block] == places * len(algos),
                  f"{coll}: placements out of order at rows {i}..")
        for r in results:
            if r.get("requested_algorithm") == "auto":
                check(r.get("note", "").startswith(f"auto picked {r['algorithm']} "),
                      f"{coll}: auto row without its pick: {r.get('note')!r}")
        waits = [x for x in records if x.get("type") == "waits"]
        if n > 1:
            check(len(waits) == 1, f"{coll}: {len(waits)} waits records (one sweep: 1)")
        rows = [line.split() for line in out.splitlines() if line and not line.startswith("#")]
        check([row[-1] for row in rows] == asked[::len(places)],
              f"{coll}: the table's last column is not each row's algorithm: "
              f"{[row[-1] for row in rows][:8]}")
        log(f"interleaved {coll} on {n} ranks over {transport}: {len(results)} rows exact, "
            f"{len(algos)} algorithms in turn at {len(set(keys))} sizes")


if __name__ == "__main__":
    sys.exit(main(globals()))
