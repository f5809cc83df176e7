"""What the steps of scripts/gpu-check.sh share: running a command, or several at once, under a
timeout (its whole process group killed when it runs over, so that nothing it started outlives
the step), the time budget, the summary JSON, rewritten after every step so that a run cut short
still leaves a valid file behind, and what CMakeCache.txt and the pip NCCL package say."""

import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

TAIL_CHARS = 200_000  # of a command's output kept in memory; the logs keep all of it


class Result:
    def __init__(self, rc, seconds, out, err, timed_out):
        self.rc, self.seconds, self.out, self.err, self.timed_out = rc, seconds, out, err, timed_out

    def last_lines(self, n=3, text=None):
        lines = [ln.strip() for ln in (text if text is not None else self.err + self.out)
                 .splitlines() if ln.strip()]
        return " | ".join(lines[-n:])


def _read_tail(f):
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - TAIL_CHARS))
    return f.read().decode("utf-8", errors="replace")


def stop_group(pgid):
    """SIGTERM to the process group, SIGKILL to whatever is left a few seconds later."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + grace
        while time.monotonic() < end:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _start(argv, cwd, env, unset):
    """Starts argv in its own session with stdin closed, its output in two temporary files; a
    Result (rc 127) instead when it cannot be started."""
    full_env = dict(os.environ, **(env or {}))
    for k in unset:
        full_env.pop(k, None)
    fo, fe = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    try:
        p = subprocess.Popen([str(a) for a in argv], cwd=cwd, env=full_env, stdout=fo, stderr=fe,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        fo.close()
        fe.close()
        return Result(127, 0.0, "", f"cannot run {argv[0]}: {e}", False)
    return p, fo, fe, time.monotonic()


def _stop(p):
    """SIGTERM to p's process group, p reaped (a zombie would hold stop_group's grace period for
    nothing), then stop_group for whatever of the group is left; p's exit status."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        return p.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        stop_group(p.pid)
        return p.wait()


def _finish(started, rc, timed_out):
    """The Result of a started command that has exited (or was killed)."""
    p, fo, fe, t0 = started
    seconds = time.monotonic() - t0
    stop_group(p.pid)  # ranks or daemons it left behind
    res = Result(rc, seconds, _read_tail(fo), _read_tail(fe), timed_out)
    fo.close()
    fe.close()
    return res


def _log(log, argv, env, unset, res, timeout):
    with open(log, "a", encoding="utf-8") as f:
        extra = ["env"] + [f"-u {k}" for k in unset] if unset else []
        extra += [f"{k}={v}" for k, v in (env or {}).items()]
        f.write(f"$ {' '.join(extra + [str(a) for a in argv])}\n")
        f.write(res.out)
        if res.err:
            f.write(("" if res.out.endswith("\n") or not res.out else "\n") + res.err)
        state = f"timed out after {timeout:.0f} s, killed" if res.timed_out else f"exit {res.rc}"
        f.write(f"\n# {state}, {res.seconds:.1f} s\n\n")


def run(argv, timeout, log, cwd=None, env=None, unset=()):
    """Runs argv in its own session with stdin closed (env added to the environment, the names in
    unset taken out of it); appends the command, its output and its exit status to the log file.
    Never raises for a failing or missing command: rc 127 then."""
    started = _start(argv, cwd, env, unset)
    if isinstance(started, Result):
        res = started
    else:
        p, timed_out = started[0], False
        try:
            rc = p.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = _stop(p)
        res = _finish(started, rc, timed_out)
    _log(log, argv, env, unset, res, timeout)
    return res


def run_many(argvs, timeout, log, env=None, unset=()):
    """Runs every argv at once, as run() runs one, under one shared timeout: those still running
    when it expires are killed (timed out). Each one's seconds end when it was seen to exit. The
    log gets them in the order given, after all have ended."""
    started = [_start(argv, None, env, unset) for argv in argvs]
    ended = {i: s for i, s in enumerate(started) if isinstance(s, Result)}
    deadline = time.monotonic() + max(1.0, timeout)
    while len(ended) < len(started):
        for i, s in enumerate(started):
            if i not in ended and s[0].poll() is not None:
                ended[i] = _finish(s, s[0].returncode, False)
        if len(ended) < len(started) and time.monotonic() >= deadline:
            for i, s in enumerate(started):
                if i not in ended:
                    ended[i] = _finish(s, _stop(s[0]), True)
        time.sleep(0.05)
    results = [ended[i] for i in range(len(started))]
    for argv, res in zip(argvs, results):
        _log(log, argv, env, unset, res, timeout)
    return results


class Runner:
    """The time budget and the summary. Steps report through record(); the summary file is
    rewritten each time."""

    def __init__(self, out_dir, budget_s):
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + budget_s
        self.summary = {
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(), "gpu": "unknown", "budget_s": budget_s, "steps": [],
            "kernel_bench": None, "bench_rows": 0, "bench_wrong": 0, "verdict": "incomplete"}
        self.write()

    def path(self, name):
        return os.path.join(self.out_dir, name)

    def left(self):
        return self.deadline - time.monotonic()

    def record(self, name, status, seconds, detail, **extra):
        assert status in ("pass", "fail", "skip"), status
        step = {"name": name, "status": status, "seconds": round(seconds, 1), "detail": detail,
                **extra}
        self.summary["steps"].append(step)
        print(f"gpu-check: {name:<13} {status:<4} {seconds:6.1f} s  {detail}", flush=True)
        self.write()
        return step

    def write(self):
        self.summary["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        tmp = self.path("gpu-check.json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.summary, f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path("gpu-check.json"))

    def finish(self, error=None):
        steps = self.summary["steps"]
        if error:
            self.summary["error"] = error
        failed = [s["name"] for s in steps if s["status"] == "fail"]
        self.summary["verdict"] = "fail" if failed or error else "pass"
        self.write()
        counts = {k: sum(s["status"] == k for s in steps) for k in ("pass", "fail", "skip")}
        print(f"gpu-check: verdict {self.summary['verdict']}: {counts['pass']} passed, "
              f"{counts['fail']} failed, {counts['skip']} skipped in "
              f"{self.summary['elapsed_s']:.0f} s; summary {self.path('gpu-check.json')}",
              flush=True)


def cache_value(build_dir, key):
    """KEY's value in build_dir/CMakeCache.txt, or "" when it is not there."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            for ln in f:
                if ln.startswith(key + ":"):
                    return ln.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def pip_nccl():
    """(library, include dir) of the pip package nvidia-nccl-* in the python3 on PATH, whose
    lib/ holds only libnccl.so.2, which find_library(nccl) does not look for."""
    py = shutil.which("python3")
    if not py or os.environ.get("GPU_CHECK_NCCL") == "0":
        return None
    code = "import nvidia.nccl as m; print(list(m.__path__)[0])"
    try:
        d = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=30,
                           check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    lib, inc = os.path.join(d, "lib", "libnccl.so.2"), os.path.join(d, "include")
    if d and os.path.exists(lib) and os.path.exists(os.path.join(inc, "nccl.h")):
        return lib, inc
    return None


def junit_counts(path):
    """(passed, failed, skipped, first skip reason, failed test names) of a CTest JUnit file."""
    root = ET.parse(path).getroot()
    passed = failed = skipped = 0
    reason, failures = "", []
    for tc in root.iter("testcase"):
        status = tc.get("status", "")
        if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
            failed += 1
            failures.append(tc.get("name", "?"))
        elif tc.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
            reason = reason or skip_reason(tc.findtext("system-out") or "")
        else:
            passed += 1
    return passed, failed, skipped, reason, failures


def skip_reason(text):
    """GoogleTest prints `file:line: Skipped` and then the GTEST_SKIP message."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.rstrip().endswith("Skipped") and i + 1 < len(lines) and lines[i + 1].strip():
            return lines[i + 1].strip()
    return ""


def last_json_object(text):
    """The last line of text that parses as a JSON object, or None."""
    for ln in reversed(text.splitlines()):
        ln = ln.strip()
        if ln.startswith("{"):
            try:
                obj = json.loads(ln)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None
