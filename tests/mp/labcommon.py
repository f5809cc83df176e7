"""What the script-driven suites (tests/mp and tests/netns) share: failures and the case
runner's deadline, logging, the launcher environment a rank is started with, /proc lookups, and
reading what ccscope writes (JSON Lines records, `diagnose` probe lines).

Standard library only.
"""

import argparse
import json
import os
import re
import signal
import sys
import time

SKIP = 77  # ctest SKIP_RETURN_CODE

SUITE = "mp"  # the log prefix; tests/netns sets its own

# Variables of whatever launched ctest (mpirun, Slurm, torchrun, an outer ccscope) that would
# turn a test's processes into ranks of that job.
LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "SLURM_", "CCSCOPE_", "TORCHELASTIC_")
LAUNCHER_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "GROUP_RANK", "NODE_RANK")


class TestFailure(Exception):
    pass


class DeadlineExpired(Exception):
    pass


class SkipTest(Exception):
    pass


def log(msg):
    sys.stdout.write(f"[{SUITE} {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stdout.flush()


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


# --------------------------------------------------------------------------------------------
# The case runner


def cases_in(namespace):
    """{CASE: function} of a test script's case_CASE functions."""
    return {k[len("case_"):]: v for k, v in namespace.items()
            if k.startswith("case_") and callable(v)}


def case_arguments(cases, argv=None, mpirun=True):
    """SCRIPT --ccscope BIN [--mpirun M] [--deadline S] CASE [ARGS...]"""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccscope", required=True)
    if mpirun:
        ap.add_argument("--mpirun", default="")
    ap.add_argument("--deadline", type=float, default=120.0)
    ap.add_argument("case", choices=sorted(cases))
    ap.add_argument("args", nargs="*")
    return ap.parse_args(argv)


def arm_deadline(seconds, on_term):
    """SIGALRM after `seconds` raises DeadlineExpired; SIGTERM and SIGINT go to on_term."""
    def on_alarm(signum, frame):
        raise DeadlineExpired(f"test deadline of {seconds:.0f} s expired")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def disarm_deadline():
    signal.setitimer(signal.ITIMER_REAL, 0)


# --------------------------------------------------------------------------------------------
# Launch environment and /proc


def clean_env(also_prefixes=()):
    """os.environ without the launcher variables (and any prefix in also_prefixes)."""
    prefixes = LAUNCHER_PREFIXES + tuple(also_prefixes)
    return {k: v for k, v in os.environ.items()
            if not k.startswith(prefixes) and k not in LAUNCHER_KEYS}


def torchrun_env(rank, world, port, token, addr="127.0.0.1", per_host=None):
    """A torchrun-style rank's variables; per_host ranks to a host (all on one by default)."""
    per = per_host or world
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank % per),
            "LOCAL_WORLD_SIZE": str(per), "GROUP_RANK": str(rank // per),
            "MASTER_ADDR": addr, "MASTER_PORT": str(port), "CCSCOPE_JOB_TOKEN": token}


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def proc_environ(pid):
    data = read_bytes(f"/proc/{pid}/environ")
    if data is None:
        return {}
    env = {}
    for kv in data.split(b"\0"):
        if b"=" in kv:
            k, v = kv.split(b"=", 1)
            env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


def proc_stat(pid):
    """(state, ppid) of a process, or None when it is gone."""
    data = read_bytes(f"/proc/{pid}/stat")
    if data is None:
        return None
    s = data.decode(errors="replace")
    rest = s[s.rfind(")") + 2:].split()
    return rest[0], int(rest[1])


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def children_of(ppid):
    out = []
    for pid in all_pids():
        st = proc_stat(pid)
        if st and st[1] == ppid:
            out.append(pid)
    return out


def rank_pids(launcher_pid, n, limit=20):
    """{rank: pid} of the ranks a `--np` launcher started, once all n are there."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        ranks = {}
        for pid in children_of(launcher_pid):
            r = proc_environ(pid).get("CCSCOPE_RANK")
            if r is not None:
                ranks[int(r)] = pid
        if len(ranks) == n:
            return ranks
        time.sleep(0.05)
    check(False, f"the launcher did not start {n} ranks within {limit} s")


# --------------------------------------------------------------------------------------------
# What ccscope writes


def read_jsonl(path, allow_partial_last=False):
    """Parses a JSON Lines file; every line must be a complete JSON object ending in a newline."""
    check(os.path.exists(path), f"JSON Lines file {path} was not written")
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", errors="strict")
    lines = text.split("\n")
    tail = lines.pop()  # text after the last newline
    if tail and not allow_partial_last:
        raise TestFailure(f"{path}: last line is not terminated by a newline: {tail[:200]!r}")
    recs = []
    for i, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise TestFailure(f"{path}:{i}: not valid JSON ({e}): {line[:200]!r}")
        check(isinstance(rec, dict), f"{path}:{i}: not a JSON object")
        recs.append(rec)
    return recs


def read_records(path):
    """The complete records of a file that may still be being written (or not exist yet)."""
    recs = []
    for line in (read_bytes(path) or b"").split(b"\n")[:-1]:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            recs.append(rec)
    return recs


def result_records(path):
    return [r for r in read_records(path) if r.get("type") == "result"]


def probe_line(out, name):
    """The `ccscope diagnose` report line of one probe: 'PASS bootstrap    clock skew   ...'."""
    for ln in out.splitlines():
        if re.match(r"(PASS|FAIL|SKIP|WARN) +[\w-]+ +" + re.escape(name) + r"( |$)", ln):
            return ln
    return None
