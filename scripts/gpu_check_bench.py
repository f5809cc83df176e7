"""The bench, nccl and fault steps of scripts/gpu-check.sh: ccscope bench over every collective,
transport and rank count with --device cuda, every collective over NCCL, and the killed-rank check
of tests/mp/faults_test.py, all within the run's time budget."""

import collections
import json
import os
import re
import sys
import time

from gpu_check_lib import run

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "sendrecv",
               "alltoallv")
TRANSPORTS = ("cuda-ipc", "shm", "tcp")
RANKS = (2, 4)
SWEEP = ["--algo", "all", "-b", "1K", "-e", "4M", "-f", "4", "-n", "5", "-w", "2", "-c", "1",
         "--timeout", "20s"]
DEVICE = ["--device", "cuda"]
EXIT_MEANING = {1: "threshold or internal error", 2: "usage or configuration error",
                3: "hang or timeout", 4: "wrong results", 5: "device or library missing"}
FAULT_RESERVE_S = 60  # what the fault step needs after the bench step: two runs of ~20 s
FAULT_DEADLINE_S = 60  # faults_test.py's own deadline per run
RUN_LIMIT_S = 90  # one bench run: --timeout 20s per operation, a hang ends well before


def help_text(r, exe):
    res = run([exe, "bench", "--help"], 30, r.path("bench.log"))
    return res.out + res.err


def collective_names(help_out):
    """Requested name -> the spelling `bench --help` lists (reduce_scatter -> reducescatter)."""
    m = re.search(r"collective\s+TEXT[^\n]*?REQUIRED\s+([^\n]+)", help_out)
    known = {c.strip() for c in m.group(1).split(",")} if m else set()
    names = {}
    for c in COLLECTIVES:
        alt = c.replace("_", "")
        names[c] = c if c in known or not known else (alt if alt in known else c)
    return names, known


def missing_options(help_out):
    missing = [o for o in ("--device",) if o not in help_out]
    if "cuda-ipc" not in help_out:
        missing.append("--transport cuda-ipc")
    return missing


def read_records(path):
    recs = []
    try:
        with open(path, encoding="utf-8") as f:
            for ln in f:
                try:
                    recs.append(json.loads(ln))
                except ValueError:
                    pass  # a run killed mid-line leaves a partial last line
    except OSError:
        pass
    return recs


def one_run(r, exe, coll, name, transport, n, scratch):
    js = os.path.join(scratch, f"{coll}.{transport}.np{n}.jsonl")
    if os.path.exists(js):
        os.remove(js)
    argv = [exe, "bench", name, "--np", str(n), *DEVICE, "--transport", transport, *SWEEP,
            "--json", js]
    if coll == "alltoallv":
        argv += ["--a2av", "moe:8,2"]
    res = run(argv, min(RUN_LIMIT_S, r.left() - FAULT_RESERVE_S), r.path("bench.log"))
    recs = read_records(js)
    with open(r.path("bench.jsonl"), "a", encoding="utf-8") as f:
        f.writelines(json.dumps(x) + "\n" for x in recs)
    rows = [x for x in recs if x.get("type") == "result"]
    wrong = sum(1 for x in rows if isinstance(x.get("wrong"), int) and x["wrong"] > 0)
    entry = {"collective": coll, "transport": transport, "np": n, "rc": res.rc,
             "seconds": round(res.seconds, 1), "rows": len(rows), "wrong": wrong}
    if res.rc == 0 and not res.timed_out:
        entry["status"] = "pass" if rows and not wrong else "fail"
        if entry["status"] == "fail":
            entry["reason"] = f"{wrong} rows with wrong elements" if wrong else "no result rows"
    else:
        entry["status"] = "skip" if res.rc == 5 else "fail"
        what = "timed out" if res.timed_out else f"exit {res.rc} ({EXIT_MEANING.get(res.rc, '?')})"
        entry["reason"] = f"{what}: {res.last_lines(2, res.err) or res.last_lines(2)}"
    return entry


def step_bench(r, a):
    exe = os.path.join(a.build_dir, "app", "ccscope")
    if not os.access(exe, os.X_OK):
        r.record("bench", "fail", 0.0, f"not built: {exe}")
        return
    help_out = help_text(r, exe)
    names, known = collective_names(help_out)
    missing = missing_options(help_out)
    scratch = os.path.join(a.build_dir, "gpu-check-bench")
    os.makedirs(scratch, exist_ok=True)
    runs, slowest, t0 = [], 10.0, time.monotonic()
    for transport in TRANSPORTS:
        for coll in COLLECTIVES:
            for n in RANKS:
                if r.left() - FAULT_RESERVE_S < slowest:
                    runs.append({"collective": coll, "transport": transport, "np": n,
                                 "status": "skip", "reason": "time budget"})
                    continue
                e = one_run(r, exe, coll, names[coll], transport, n, scratch)
                runs.append(e)
                slowest = max(slowest, min(e["seconds"], RUN_LIMIT_S))
    record_bench(r, runs, time.monotonic() - t0, missing, known)


def record_bench(r, runs, seconds, missing, known):
    by = collections.Counter(e["status"] for e in runs)
    rows = sum(e.get("rows", 0) for e in runs)
    wrong = sum(e.get("wrong", 0) for e in runs)
    r.summary["bench_rows"], r.summary["bench_wrong"] = rows, wrong
    notes = [f"{by['pass']} passed, {by['fail']} failed, {by['skip']} skipped of {len(runs)} "
             f"runs; {rows} rows, {wrong} with wrong elements"]
    if missing:
        notes.append(f"bench --help lacks {', '.join(missing)}")
    reasons = collections.Counter(e["reason"] for e in runs if e["status"] != "pass")
    if reasons:
        reason, count = reasons.most_common(1)[0]
        notes.append(f"most common ({count}x): {reason}")
    status = "fail" if by["fail"] else ("pass" if by["pass"] else "skip")
    r.record("bench", status, seconds, "; ".join(notes), runs=runs,
             collectives_listed=sorted(known))


def step_nccl(r, a):
    """Every collective over --transport nccl at np 1 on the one GPU; then one allreduce at np 2,
    which NCCL may refuse on one device ("Duplicate GPU"): recorded, not judged."""
    exe = os.path.join(a.build_dir, "app", "ccscope")
    if not os.access(exe, os.X_OK):
        r.record("nccl", "fail", 0.0, f"not built: {exe}")
        return
    help_out = help_text(r, exe)
    names, _ = collective_names(help_out)  # a build without nccl: every run exits 5 (skip)
    scratch = os.path.join(a.build_dir, "gpu-check-nccl")
    os.makedirs(scratch, exist_ok=True)
    runs, t0 = [], time.monotonic()
    for coll in COLLECTIVES:
        if r.left() - FAULT_RESERVE_S < 15:
            runs.append({"collective": coll, "transport": "nccl", "np": 1, "status": "skip",
                         "reason": "time budget"})
            continue
        runs.append(one_run(r, exe, coll, names[coll], "nccl", 1, scratch))
    two = None
    if r.left() - FAULT_RESERVE_S >= 20:
        two = one_run(r, exe, "allreduce", names["allreduce"], "nccl", 2, scratch)
    by = collections.Counter(e["status"] for e in runs)
    status = "fail" if by["fail"] else ("pass" if by["pass"] else "skip")
    detail = f"np 1: {by['pass']} passed, {by['fail']} failed, {by['skip']} skipped"
    if two:
        detail += f"; np 2 on one GPU: {two['status']}" + (
            f" ({two.get('reason', '')[:200]})" if two["status"] != "pass" else "")
    r.record("nccl", status, time.monotonic() - t0, detail, runs=runs, np2=two)


def step_fault(r, a):
    exe = os.path.join(a.build_dir, "app", "ccscope")
    if not os.access(exe, os.X_OK):
        r.record("fault", "fail", 0.0, f"not built: {exe}")
        return
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "tests", "mp", "faults_test.py")
    cases, t0 = [], time.monotonic()
    for transport in ("cuda-ipc", "shm"):
        if r.left() < 25:
            cases.append({"transport": transport, "status": "skip", "reason": "time budget"})
            continue
        deadline = min(FAULT_DEADLINE_S, max(10, int(r.left()) - 5))
        argv = [sys.executable, script, "--ccscope", exe, "--deadline", str(deadline),
                "fault", "kill", transport, "4", "2"]
        res = run(argv, deadline + 15, r.path("faults.log"),
                  env={"CCSCOPE_FAULT_EXTRA_ARGS": " ".join(DEVICE)})
        cases.append(fault_case(transport, res))
    by = collections.Counter(c["status"] for c in cases)
    status = "fail" if by["fail"] else ("pass" if by["pass"] else "skip")
    detail = "; ".join(f"{c['transport']}: {c['status']}" +
                       (f" ({c['reason']})" if c.get("reason") else "") for c in cases)
    r.record("fault", status, time.monotonic() - t0, f"kill rank 2 of 4, --device cuda: {detail}",
             cases=cases)


def fault_case(transport, res):
    text = res.out + res.err
    verdict = [ln.strip() for ln in text.splitlines() if re.search(r"\b(PASS|FAIL|SKIP)\b", ln)]
    c = {"transport": transport, "rc": res.rc, "seconds": round(res.seconds, 1)}
    if res.rc == 0:
        c["status"] = "pass"
        times = re.search(r"survivor exit times[^\n]*", text)
        c["reason"] = times.group(0) if times else ""
    elif res.rc == 77:
        c["status"], c["reason"] = "skip", (verdict[-1] if verdict else "skipped")
    elif re.search(r"exited with 5 before", text):
        exit5 = [ln.strip() for ln in text.splitlines() if "rror" in ln or "CUDA" in ln]
        c["status"] = "skip"
        c["reason"] = "ccscope exit 5 (device missing)" + (f": {exit5[-1]}" if exit5 else "")
    else:
        c["status"] = "fail"
        c["reason"] = ("timed out" if res.timed_out else
                       (verdict[-1] if verdict else res.last_lines(2)))[:400]
    return c
