"""The bench, nccl and fault steps of scripts/gpu-check.sh: ccscope bench over every collective,
transport and rank count with --device cuda, every collective over NCCL, and the killed-rank check
of tests/mp/faults_test.py, all within the run's time budget."""

import collections
import json
import os
import re
import sys
import time

from gpu_check_lib import run, run_many

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
# The concurrency step: a smaller sweep, since N jobs share the one GPU; a collective's second job
# in one batch runs another dtype, so that a message crossing between two jobs shows as wrong
# elements rather than as the bytes the other job expected anyway.
CONCURRENCY_SWEEP = ["--algo", "all", "-b", "1K", "-e", "1M", "-f", "4", "-n", "5", "-w", "1",
                     "-c", "1", "--timeout", "20s"]
CONCURRENCY_DTYPES = ("float", "int32")
BATCH_LIMIT_S = 120  # N jobs at once, each with --timeout 20s per operation
# Unset in each concurrent job, so that its local launcher makes a job token of its own (and
# runs the ranks itself rather than joining a job of the environment's).
JOB_ENV = ("CCSCOPE_JOB_TOKEN", "CCSCOPE_STORE", "CCSCOPE_RANK", "CCSCOPE_LOCAL_RANK",
           "CCSCOPE_WORLD_SIZE")


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


def bench_argv(exe, coll, name, transport, n, sweep, js):
    argv = [exe, "bench", name, "--np", str(n), *DEVICE, "--transport", transport, *sweep,
            "--json", js]
    return argv + (["--a2av", "moe:8,2"] if coll == "alltoallv" else [])


def fresh(path):
    if os.path.exists(path):
        os.remove(path)
    return path


def judged(res, js, **keys):
    """The entry of one bench run: pass = exit 0 with result rows and none with a wrong element
    (the `wrong` count of its JSON Lines rows); skip = exit 5 (no device). Also its records."""
    recs = read_records(js)
    rows = [x for x in recs if x.get("type") == "result"]
    wrong = sum(1 for x in rows if isinstance(x.get("wrong"), int) and x["wrong"] > 0)
    entry = {**keys, "rc": res.rc, "seconds": round(res.seconds, 1), "rows": len(rows),
             "wrong": wrong}
    if res.rc == 0 and not res.timed_out:
        entry["status"] = "pass" if rows and not wrong else "fail"
        if entry["status"] == "fail":
            entry["reason"] = f"{wrong} rows with wrong elements" if wrong else "no result rows"
    else:
        entry["status"] = "skip" if res.rc == 5 else "fail"
        what = "timed out" if res.timed_out else f"exit {res.rc} ({EXIT_MEANING.get(res.rc, '?')})"
        entry["reason"] = f"{what}: {res.last_lines(2, res.err) or res.last_lines(2)}"
    return entry, recs


def one_run(r, exe, coll, name, transport, n, scratch, reserve=FAULT_RESERVE_S):
    js = fresh(os.path.join(scratch, f"{coll}.{transport}.np{n}.jsonl"))
    argv = bench_argv(exe, coll, name, transport, n, SWEEP, js)
    res = run(argv, min(RUN_LIMIT_S, r.left() - reserve), r.path("bench.log"))
    entry, recs = judged(res, js, collective=coll, transport=transport, np=n)
    with open(r.path("bench.jsonl"), "a", encoding="utf-8") as f:
        f.writelines(json.dumps(x) + "\n" for x in recs)
    return entry


def fault_reserve(a):
    """What the steps before fault leave it: none when it is not among the steps."""
    return FAULT_RESERVE_S if "fault" in a.steps else 0


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
    runs, slowest, t0, reserve = [], 10.0, time.monotonic(), fault_reserve(a)
    for transport in TRANSPORTS:
        for coll in COLLECTIVES:
            for n in RANKS:
                if r.left() - reserve < slowest:
                    runs.append({"collective": coll, "transport": transport, "np": n,
                                 "status": "skip", "reason": "time budget"})
                    continue
                e = one_run(r, exe, coll, names[coll], transport, n, scratch, reserve)
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


def batch_jobs(n_jobs, k):
    """(collective, dtype) of each job of run k's batch of n_jobs: the collectives in turn, from
    where run k - 1 left off, so that 7 or more jobs cover every collective in each batch and 4
    cover them all over two runs."""
    jobs, seen = [], collections.Counter()
    for i in range(n_jobs):
        coll = COLLECTIVES[(k * n_jobs + i) % len(COLLECTIVES)]
        jobs.append((coll, CONCURRENCY_DTYPES[seen[coll] % len(CONCURRENCY_DTYPES)]))
        seen[coll] += 1
    return jobs


def one_batch(r, exe, names, n_jobs, n, k, scratch, reserve):
    """n_jobs jobs of bench over cuda-ipc at np n started at once, each with its own JSON."""
    jobs = batch_jobs(n_jobs, k)
    paths = [fresh(os.path.join(scratch, f"job{i}.jsonl")) for i in range(n_jobs)]
    argvs = [bench_argv(exe, coll, names[coll], "cuda-ipc", n, CONCURRENCY_SWEEP, js) +
             ["--dtype", dtype] for (coll, dtype), js in zip(jobs, paths)]
    t0 = time.monotonic()
    results = run_many(argvs, min(BATCH_LIMIT_S, r.left() - reserve), r.path("bench.log"),
                       unset=JOB_ENV)
    entries = [judged(res, js, job=i, collective=coll, dtype=dtype)[0]
               for i, (res, js, (coll, dtype)) in enumerate(zip(results, paths, jobs))]
    by = collections.Counter(e["status"] for e in entries)
    batch = {"run": k + 1, "jobs": n_jobs, "np": n, "seconds": round(time.monotonic() - t0, 1),
             "status": "fail" if by["fail"] else ("pass" if by["pass"] else "skip"),
             "entries": entries}
    if batch["status"] != "pass":
        bad = [e for e in entries if e["status"] != "pass"]
        batch["reason"] = (f"{len(bad)} of {n_jobs} jobs: job {bad[0]['job']} "
                           f"({bad[0]['collective']}): {bad[0]['reason']}")
    return batch


def step_concurrency(r, a):
    """--concurrency-runs rounds of a batch per N of --concurrency and np 2 and 4, a round at a
    time (a budget cut leaves each batch run once before any twice); stops at the first batch
    whose jobs all exit 5 (no device)."""
    exe = os.path.join(a.build_dir, "app", "ccscope")
    if not os.access(exe, os.X_OK):
        r.record("concurrency", "fail", 0.0, f"not built: {exe}")
        return
    names, known = collective_names(help_text(r, exe))
    unrun = sorted(known - set(names.values()))
    scratch = os.path.join(a.build_dir, "gpu-check-concurrency")
    os.makedirs(scratch, exist_ok=True)
    batches, slowest, t0, reserve, no_device = [], 15.0, time.monotonic(), fault_reserve(a), ""
    for k in range(a.concurrency_runs):
        for n_jobs in a.concurrency:
            for n in RANKS:
                if no_device or r.left() - reserve < slowest:
                    batches.append({"run": k + 1, "jobs": n_jobs, "np": n, "status": "skip",
                                    "reason": no_device or "time budget"})
                    continue
                b = one_batch(r, exe, names, n_jobs, n, k, scratch, reserve)
                batches.append(b)
                slowest = max(slowest, min(b["seconds"], BATCH_LIMIT_S))
                if all(e["rc"] == 5 for e in b["entries"]):
                    no_device = "device missing: " + b["entries"][0]["reason"]
    record_concurrency(r, a, batches, time.monotonic() - t0, unrun)


def record_concurrency(r, a, batches, seconds, unrun):
    by = collections.Counter(b["status"] for b in batches)
    entries = [e for b in batches for e in b.get("entries", [])]
    jobs = collections.Counter(e["status"] for e in entries)
    rows, wrong = sum(e["rows"] for e in entries), sum(e["wrong"] for e in entries)
    notes = [f"{by['pass']} passed, {by['fail']} failed, {by['skip']} skipped of {len(batches)} "
             f"batches (N {','.join(map(str, a.concurrency))} x np 2, 4 x {a.concurrency_runs} "
             f"runs); jobs: {jobs['pass']} passed, {jobs['fail']} failed, {jobs['skip']} "
             f"skipped; {rows} rows, {wrong} with wrong elements"]
    failed = [b for b in batches if b["status"] == "fail"]
    reasons = collections.Counter(b["reason"] for b in batches if b["status"] != "pass")
    if failed:
        b = failed[0]
        notes.append(f"first failure, run {b['run']} N {b['jobs']} np {b['np']}: {b['reason']}")
    elif reasons:
        reason, count = reasons.most_common(1)[0]
        notes.append(f"most common ({count}x): {reason}")
    if unrun:
        notes.append(f"bench --help lists collectives not run here: {', '.join(unrun)}")
    status = "fail" if by["fail"] else ("pass" if by["pass"] else "skip")
    r.record("concurrency", status, seconds, "; ".join(notes), batches=batches,
             job_env_unset=list(JOB_ENV))


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
    runs, t0, reserve = [], time.monotonic(), fault_reserve(a)
    for coll in COLLECTIVES:
        if r.left() - reserve < 15:
            runs.append({"collective": coll, "transport": "nccl", "np": 1, "status": "skip",
                         "reason": "time budget"})
            continue
        runs.append(one_run(r, exe, coll, names[coll], "nccl", 1, scratch, reserve))
    two = None
    if r.left() - reserve >= 20:
        two = one_run(r, exe, "allreduce", names["allreduce"], "nccl", 2, scratch, reserve)
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
                       (f", slowest survivor {c['slowest_survivor_s']} s"
                        if c.get("slowest_survivor_s") is not None and c["status"] != "pass"
                        else "") +
                       (f" ({c['reason']})" if c.get("reason") else "") for c in cases)
    r.record("fault", status, time.monotonic() - t0, f"kill rank 2 of 4, --device cuda: {detail}",
             cases=cases)


def survivor_times(text):
    """faults_test.py's `survivor exit times (s after the signal): {0: 0.12, ...}; launcher exited
    3 after 0.2 s` as ({rank: seconds}, launcher seconds); ({}, None) when it did not get there."""
    m = re.search(r"survivor exit times[^{]*\{([^}]*)\}(?:; launcher exited (-?\d+) after "
                  r"([\d.]+) s)?", text)
    if not m:
        return {}, None
    times = {k: float(v) for k, v in re.findall(r"(\d+): ([\d.]+)", m.group(1))}
    return times, (float(m.group(3)) if m.group(3) else None)


def fault_case(transport, res):
    text = res.out + res.err
    verdict = [ln.strip() for ln in text.splitlines() if re.search(r"\b(PASS|FAIL|SKIP)\b", ln)]
    c = {"transport": transport, "rc": res.rc, "seconds": round(res.seconds, 1)}
    times, launcher = survivor_times(text)
    if times or launcher is not None:
        c["survivor_exit_s"], c["launcher_exit_s"] = times, launcher
        c["slowest_survivor_s"] = max(times.values()) if times else None
    if res.rc == 0:
        c["status"] = "pass"
        found = re.search(r"survivor exit times[^\n]*", text)
        c["reason"] = found.group(0) if found else ""
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
