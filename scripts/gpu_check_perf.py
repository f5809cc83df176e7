"""The perf step of scripts/gpu-check.sh: cuda-ipc on the one GPU against its hardware bounds, in
one run, so that every goal of the copy-engine-speed work is measured the same way each time.

  copy       tests/cuda/kernels/cuda_kernel_bench: the device-to-device copy, GB/s counting the
             bytes read and written (C)
  sendrecv   np 2: p50 at 8 B (goal <= 20 us); busbw at 64 MiB and 512 MiB against C / 4 (each
             direction's copy reads and writes its bytes, both directions at once; goal >= 0.85
             from 256 MiB)
  allreduce  np 2 and 4, 16 MiB..1 GiB, every algorithm and auto, out of place: the ring against
             2C / (7n) (per rank and step, a copy of 2 bytes per byte and a reduction of 3: 7(n-1)
             bytes of memory traffic per byte of the collective; busbw is 2(n-1)/n of it); goals:
             ring np 2 at 256 MiB >= 450 GB/s, auto within 10% of the best algorithm at every
             size, ring np 4 at 1 GiB >= 0.7 of its bound
The path cuda-ipc took (stream or host progress) comes from the runs' note records. The step
passes when every goal holds; its record has every figure and ratio either way."""

import json
import os

from gpu_check_bench import read_records
from gpu_check_lib import last_json_object, run

SENDRECV_SMALL = ["-b", "8", "-e", "8", "-n", "2000", "-w", "200"]
SENDRECV_LARGE = ["-b", "64M", "-e", "512M", "-f", "8", "-n", "20", "-w", "5"]
ALLREDUCE = ["-b", "16M", "-e", "1G", "-f", "4", "-n", "10", "-w", "3"]
RUN_LIMIT_S = 150
MIB = 1 << 20


def bench(r, exe, coll, n, algo, sizes, scratch, tag):
    js = os.path.join(scratch, f"{tag}.jsonl")
    if os.path.exists(js):
        os.remove(js)
    argv = [exe, "bench", coll, "--np", str(n), "--device", "cuda", "--transport", "cuda-ipc",
            "--algo", algo, *sizes, "-c", "1", "--timeout", "60s", "--json", js]
    res = run(argv, min(RUN_LIMIT_S, max(10, r.left() - 10)), r.path("perf.log"))
    recs = read_records(js)
    rows = [x for x in recs if x.get("type") == "result" and not x.get("in_place")]
    notes = [x.get("text", "") for x in recs if x.get("type") == "note"]
    return {"tag": tag, "rc": res.rc, "seconds": round(res.seconds, 1), "rows": rows,
            "notes": notes, "wrong": sum(1 for x in rows if (x.get("wrong") or 0) > 0)}


def copy_gbps(r, a):
    """(GB/s or None, the kernel bench's result)."""
    exe = os.path.join(a.build_dir, "tests", "cuda", "kernels", "cuda_kernel_bench")
    res = run([exe, "--bytes", str(256 * MIB)], 120, r.path("perf.log"))
    obj = last_json_object(res.out) if res.rc == 0 else None
    return (obj.get("copy_gbps") if isinstance(obj, dict) else None), res


def by_size(rows, algo=None):
    return {x["bytes"]: x for x in rows if algo is None or x.get("algorithm") == algo
            or x.get("requested_algorithm") == algo}


def goal(name, value, target, ok):
    return {"goal": name, "value": value, "target": target, "met": bool(ok)}


def sendrecv_goals(small, large, c):
    goals = []
    p50 = next((x["lat_us"]["p50"] for x in small["rows"]), None)
    goals.append(goal("sendrecv np 2 p50 at 8 B (us)", p50, "<= 20", p50 is not None and p50 <= 20))
    bound = c / 4 if c else None
    for size, x in sorted(by_size(large["rows"]).items()):
        ratio = x["busbw_gbps"] / bound if bound else None
        target = ">= 0.85 of C/4" if size >= 256 * MIB else "(printed)"
        goals.append(goal(f"sendrecv np 2 busbw at {size // MIB} MiB (GB/s; ratio to C/4)",
                          [x["busbw_gbps"], ratio], target,
                          size < 256 * MIB or (ratio is not None and ratio >= 0.85)))
    return goals


def allreduce_goals(n, every, auto, c):
    goals = []
    bound = 2 * c / (7 * n) if c else None
    rows = every["rows"] + [dict(x, algorithm="auto") for x in auto["rows"]]
    sizes = sorted({x["bytes"] for x in rows})
    for size in sizes:
        at = [x for x in rows if x["bytes"] == size]
        best = max((x for x in at if x["algorithm"] != "auto"), key=lambda x: x["busbw_gbps"],
                   default=None)
        ring = next((x for x in at if x["algorithm"] == "ring"), None)
        picked = next((x for x in at if x["algorithm"] == "auto"), None)
        if ring and bound:
            name = f"allreduce ring np {n} at {size // MIB} MiB (GB/s; ratio to 2C/(7n))"
            value = [ring["busbw_gbps"], ring["busbw_gbps"] / bound]
            if n == 2 and size == 256 * MIB:
                goals.append(goal(name, value, ">= 450 GB/s", ring["busbw_gbps"] >= 450))
            elif n == 4 and size == 1024 * MIB:
                goals.append(goal(name, value, ">= 0.7 of bound", value[1] >= 0.7))
            else:
                goals.append(goal(name, value, "(printed)", True))
        if best and picked:
            ratio = picked["busbw_gbps"] / best["busbw_gbps"] if best["busbw_gbps"] else None
            goals.append(goal(f"allreduce auto np {n} at {size // MIB} MiB (its pick; ratio to "
                              f"the best, {best['algorithm']})",
                              [picked.get("note", "")[:60], ratio], ">= 0.9",
                              ratio is not None and ratio >= 0.9))
    return goals


def step_perf(r, a):
    exe = os.path.join(a.build_dir, "app", "ccscope")
    if not os.access(exe, os.X_OK):
        r.record("perf", "fail", 0.0, f"not built: {exe}")
        return
    scratch = os.path.join(a.build_dir, "gpu-check-perf")
    os.makedirs(scratch, exist_ok=True)
    c, res = copy_gbps(r, a)
    if res.rc == 5:  # no device: nothing here can be measured
        r.record("perf", "skip", res.seconds, f"exit 5: {res.last_lines(2, res.err)}")
        return
    runs = [bench(r, exe, "sendrecv", 2, "ring", SENDRECV_SMALL, scratch, "sendrecv-8B"),
            bench(r, exe, "sendrecv", 2, "ring", SENDRECV_LARGE, scratch, "sendrecv-large")]
    goals = sendrecv_goals(runs[0], runs[1], c)
    for n in (2, 4):
        every = bench(r, exe, "allreduce", n, "all", ALLREDUCE, scratch, f"allreduce-np{n}-all")
        auto = bench(r, exe, "allreduce", n, "auto", ALLREDUCE, scratch, f"allreduce-np{n}-auto")
        runs += [every, auto]
        goals += allreduce_goals(n, every, auto, c)
    paths = sorted({t for x in runs for t in x["notes"] if t.startswith("cuda-ipc:")})
    failed_runs = [f"{x['tag']} exit {x['rc']}" for x in runs if x["rc"] != 0 or x["wrong"]]
    missed = [g["goal"] for g in goals if not g["met"]]
    seconds = sum(x["seconds"] for x in runs)
    for x in runs:
        x.pop("rows")
    detail = (f"copy {c} GB/s; {len(goals) - len(missed)} of {len(goals)} goals met"
              + (f"; missed: {'; '.join(missed)}" if missed else "")
              + (f"; failed runs: {', '.join(failed_runs)}" if failed_runs else "")
              + (f"; {' / '.join(paths)}" if paths else ""))
    status = "pass" if c and not missed and not failed_runs else "fail"
    r.record("perf", status, seconds, detail, copy_gbps=c, goals=goals, runs=runs, paths=paths)
    with open(r.path("perf.json"), "w", encoding="utf-8") as f:
        json.dump({"copy_gbps": c, "goals": goals, "paths": paths}, f, indent=1)
