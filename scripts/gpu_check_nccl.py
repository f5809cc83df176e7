"""The nccl-faults step of scripts/gpu-check.sh: NCCL's own collectives with registered buffers
and in CUDA graphs, a wrong NCCL_SOCKET_IFNAME read back from NCCL's log, two ranks on the one
GPU as two NCCL "hosts" (each process its own NCCL_HOSTID), and a SIGKILLed rank among those
two."""

import os
import re
import secrets
import signal
import socket
import subprocess
import time

from gpu_check_bench import read_records
from gpu_check_lib import run, stop_group

SMALL = ["-b", "1K", "-e", "1M", "-f", "4", "-n", "5", "-w", "2", "-c", "1", "--timeout", "20s"]
KILL_TIMEOUT_S = 10  # --timeout of the killed-rank run: the survivor must exit 3 within it + 5 s
CASE_LIMIT_S = 90


def fresh(path):
    """A results file no earlier run left rows in."""
    if os.path.exists(path):
        os.remove(path)
    return path


def rows_of(path):
    return [x for x in read_records(path) if x.get("type") == "result"]


def wrong_rows(rows):
    return sum(1 for x in rows if isinstance(x.get("wrong"), int) and x["wrong"] > 0)


def judged(name, res, rows, extra=None):
    c = {"case": name, "rc": res.rc, "seconds": round(res.seconds, 1), "rows": len(rows),
         "wrong": wrong_rows(rows), **(extra or {})}
    if res.rc == 5:
        c["status"], c["reason"] = "skip", res.last_lines(1, res.err)
    elif res.rc == 0 and rows and not c["wrong"]:
        c["status"] = "pass"
    else:
        c["status"] = "fail"
        c["reason"] = ("timed out" if res.timed_out else
                       f"exit {res.rc}, {len(rows)} rows, {c['wrong']} wrong: "
                       f"{res.last_lines(2, res.err)}")[:400]
    return c


def case_register(r, exe, scratch, mode):
    js = fresh(os.path.join(scratch, f"register{mode}.jsonl"))
    argv = [exe, "bench", "allreduce", "--np", "1", "--transport", "nccl", "--algo", "native",
            "-R", str(mode), *SMALL, "--json", js]
    res = run(argv, min(CASE_LIMIT_S, r.left()), r.path("nccl-faults.log"))
    c = judged(f"register -R {mode}", res, rows_of(js))
    if res.rc == 2 and "needs NCCL 2.27" in res.err:
        c["status"], c["reason"] = "skip", res.last_lines(1, res.err)
    return c


def case_mode(r, exe, scratch, coll, flag, value, name):
    """-G N (timed iterations captured into a CUDA graph, the checked run out of one) or -z 0
    (timed iterations enqueued without waiting, drained once): rows, checked."""
    js = fresh(os.path.join(scratch, f"mode{flag}{value}.{coll}.jsonl"))
    argv = [exe, "bench", coll, "--np", "1", "--transport", "nccl", "--algo", "native", flag,
            str(value), *SMALL, "--json", js]
    res = run(argv, min(CASE_LIMIT_S, r.left()), r.path("nccl-faults.log"))
    return judged(f"{name} {flag} {value}, {coll}", res, rows_of(js))


def case_ifname(r, exe, scratch):
    """Pass: exit 2 or 3 and the analyzer's host-network verdict from NCCL's own log."""
    env = {"NCCL_SOCKET_IFNAME": "ccscope-none0", "CCSCOPE_DUMP_DIR": scratch}
    argv = [exe, "bench", "allreduce", "--np", "1", "--transport", "nccl", "--algo", "native",
            *SMALL]
    res = run(argv, min(CASE_LIMIT_S, r.left()), r.path("nccl-faults.log"), env=env)
    c = {"case": "wrong NCCL_SOCKET_IFNAME", "rc": res.rc, "seconds": round(res.seconds, 1)}
    verdict = re.search(r"diagnosis from NCCL's log \S+: layer host-network: [^\n]*", res.err)
    if res.rc == 5:
        c["status"], c["reason"] = "skip", res.last_lines(1, res.err)
    elif res.rc in (2, 3) and verdict:
        c["status"], c["reason"] = "pass", verdict.group(0)[:300]
    else:
        c["status"] = "fail"
        c["reason"] = f"exit {res.rc}, no host-network verdict: {res.last_lines(3, res.err)}"[:400]
    return c


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_pair(exe, args, scratch, tag):
    """Two ranks launched as torchrun would (RANK, WORLD_SIZE, MASTER_*), each with an
    NCCL_HOSTID of its own, so that NCCL takes them for two hosts."""
    port, token, procs = free_port(), secrets.token_hex(16), []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   CCSCOPE_JOB_TOKEN=token,
                   NCCL_HOSTID=f"ccscope-gpu-check-{rank}", CCSCOPE_DUMP_DIR=scratch)
        out = open(os.path.join(scratch, f"{tag}.r{rank}.out"), "w", encoding="utf-8")
        err = open(os.path.join(scratch, f"{tag}.r{rank}.err"), "w", encoding="utf-8")
        procs.append((subprocess.Popen([exe, "bench", *args], env=env, stdout=out, stderr=err,
                                       stdin=subprocess.DEVNULL, start_new_session=True), out,
                      err))
    return procs


def finish_pair(procs, limit):
    end, codes = time.monotonic() + limit, []
    for p, out, err in procs:
        try:
            codes.append(p.wait(timeout=max(1.0, end - time.monotonic())))
        except subprocess.TimeoutExpired:
            stop_group(p.pid)
            codes.append(None)
        out.close()
        err.close()
    return codes


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def case_pair(r, exe, scratch):
    js = fresh(os.path.join(scratch, "pair.jsonl"))
    args = ["allreduce", "--transport", "nccl", "--algo", "all", *SMALL, "--json", js]
    t0 = time.monotonic()
    codes = finish_pair(start_pair(exe, args, scratch, "pair"), min(CASE_LIMIT_S, r.left()))
    rows = rows_of(js)
    c = {"case": "np 2 on one GPU, NCCL_HOSTID per rank", "rc": codes,
         "seconds": round(time.monotonic() - t0, 1), "rows": len(rows), "wrong": wrong_rows(rows)}
    errs = " | ".join(read(os.path.join(scratch, f"pair.r{k}.err")).strip()[-300:]
                      for k in (0, 1))
    if 5 in codes:
        c["status"], c["reason"] = "skip", errs[:400]
    elif "Duplicate GPU" in errs:  # the lead does not hold: NCCL's refusal, recorded
        c["status"], c["reason"] = "skip", f"NCCL refused two ranks on one GPU: {errs}"[:400]
    elif codes == [0, 0] and rows and not c["wrong"]:
        c["status"] = "pass"
    else:
        c["status"], c["reason"] = "fail", f"exit codes {codes}: {errs}"[:400]
    return c


def case_kill(r, exe, scratch):
    """Rank 1 SIGKILLed once rank 0 streamed a row: rank 0 must exit 3 within --timeout + 5 s
    of the kill, naming rank 1 as the culprit."""
    js = fresh(os.path.join(scratch, "kill.jsonl"))
    # The first size streams its row at once; the larger ones keep both ranks busy past the kill.
    args = ["allreduce", "--transport", "nccl", "--algo", "native", "-b", "1M", "-e", "256M",
            "-n", "500", "-w", "1", "-c", "0", "--timeout", f"{KILL_TIMEOUT_S}s", "--json", js]
    procs = start_pair(exe, args, scratch, "kill")
    c = {"case": "SIGKILL rank 1 of 2"}
    try:
        end = time.monotonic() + 40
        while (time.monotonic() < end and not rows_of(js) and
               all(p.poll() is None for p, _, _ in procs)):
            time.sleep(0.2)
        victim = procs[1][0]
        if victim.poll() is not None:
            c["status"] = "fail"
            c["reason"] = (f"rank 1 exited {victim.returncode} before the kill: "
                           f"{read(os.path.join(scratch, 'kill.r1.err')).strip()[-300:]}")
            return c
        if not rows_of(js):
            c["note"] = "killed before any row"
        victim.kill()
        killed = time.monotonic()
    finally:
        codes = finish_pair(procs, KILL_TIMEOUT_S + 30)
    after = time.monotonic() - killed
    err0 = read(os.path.join(scratch, "kill.r0.err"))
    c.update({"rc": codes, "survivor_exit_s": round(after, 1)})
    if codes[0] == 5:
        c["status"], c["reason"] = "skip", err0.strip()[-300:]
    elif (codes[0] == 3 and after <= KILL_TIMEOUT_S + 5 and
          re.search(r"culprit: ranks \[1\]", err0)):
        c["status"] = "pass"
        diag = re.search(r"diagnosis: [^\n]*", err0)
        c["reason"] = diag.group(0)[:300] if diag else ""
    else:
        c["status"] = "fail"
        c["reason"] = f"rank 0 exit {codes[0]} {after:.1f} s after the kill: {err0[-300:]}"
    return c


def step_nccl_faults(r, a):
    exe = os.path.join(a.build_dir, "app", "ccscope")
    if not os.access(exe, os.X_OK):
        r.record("nccl-faults", "fail", 0.0, f"not built: {exe}")
        return
    scratch = os.path.join(a.build_dir, "gpu-check-nccl-faults")
    os.makedirs(scratch, exist_ok=True)
    cases, t0 = [], time.monotonic()
    plan = [("register -R 1", lambda: case_register(r, exe, scratch, 1), 15),
            ("register -R 2", lambda: case_register(r, exe, scratch, 2), 15),
            ("CUDA graphs, allreduce",
             lambda: case_mode(r, exe, scratch, "allreduce", "-G", 4, "CUDA graphs"), 15),
            ("CUDA graphs, alltoall",
             lambda: case_mode(r, exe, scratch, "alltoall", "-G", 4, "CUDA graphs"), 15),
            ("non-blocking, allreduce",
             lambda: case_mode(r, exe, scratch, "allreduce", "-z", 0, "non-blocking"), 15),
            ("wrong NCCL_SOCKET_IFNAME", lambda: case_ifname(r, exe, scratch), 10),
            ("np 2 on one GPU", lambda: case_pair(r, exe, scratch), 25)]
    for name, fn, need in plan:
        if r.left() < need:
            cases.append({"case": name, "status": "skip", "reason": "time budget"})
            continue
        cases.append(fn())
    # A killed rank needs two ranks to run at all: only where the pair ran. Its worst case:
    # 40 s for a first row, then --timeout + 30 s for the survivor.
    pair = cases[-1]
    if pair["status"] == "pass" and r.left() >= KILL_TIMEOUT_S + 75:
        cases.append(case_kill(r, exe, scratch))
    else:
        cases.append({"case": "SIGKILL rank 1 of 2", "status": "skip",
                      "reason": "time budget" if pair["status"] == "pass" or
                      pair.get("reason") == "time budget" else "the two-rank run did not pass"})
    statuses = [c["status"] for c in cases]
    status = "fail" if "fail" in statuses else ("pass" if "pass" in statuses else "skip")
    detail = "; ".join(f"{c['case']}: {c['status']}" for c in cases)
    r.record("nccl-faults", status, time.monotonic() - t0, detail, cases=cases)
