"""What the steps of scripts/gpu-check.sh share: running a command under a timeout (its whole
process group killed when it runs over, so that nothing it started outlives the step), the time
budget, and the summary JSON, rewritten after every step so that a run cut short still leaves a
valid file behind."""

import datetime
import json
import os
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


def run(argv, timeout, log, cwd=None, env=None):
    """Runs argv in its own session with stdin closed; appends the command, its output and its
    exit status to the log file. Never raises for a failing or missing command: rc 127 then."""
    t0 = time.monotonic()
    full_env = dict(os.environ, **(env or {}))
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        try:
            p = subprocess.Popen([str(a) for a in argv], cwd=cwd, env=full_env, stdout=fo,
                                 stderr=fe, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            res = Result(127, 0.0, "", f"cannot run {argv[0]}: {e}", False)
        else:
            timed_out = False
            try:
                rc = p.wait(timeout=max(1.0, timeout))
            except subprocess.TimeoutExpired:
                timed_out = True
                stop_group(p.pid)
                rc = p.wait()
            stop_group(p.pid)  # ranks or daemons it left behind
            res = Result(rc, time.monotonic() - t0, _read_tail(fo), _read_tail(fe), timed_out)
    with open(log, "a", encoding="utf-8") as f:
        extra = " ".join(f"{k}={v}" for k, v in (env or {}).items())
        f.write(f"$ {extra + ' ' if extra else ''}{' '.join(str(a) for a in argv)}\n")
        f.write(res.out)
        if res.err:
            f.write(("" if res.out.endswith("\n") or not res.out else "\n") + res.err)
        state = f"timed out after {timeout:.0f} s, killed" if res.timed_out else f"exit {res.rc}"
        f.write(f"\n# {state}, {res.seconds:.1f} s\n\n")
    return res


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
