"""Helpers for the multi-process end-to-end tests (ctest label `mp`).

Standard library only. Every process a test starts carries a per-test marker variable in its
environment (inherited by the ranks that `--np`, mpirun or a torchrun-style start creates), so
the test can find and kill whatever is left, whichever process group or session it ended up in.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

SKIP = 77  # ctest SKIP_RETURN_CODE

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float",
          "double"]
DTYPE_SIZE = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
              "half": 2, "bfloat16": 2, "float": 4, "double": 8}
OPS = ["sum", "prod", "min", "max", "avg"]

MARKER_VAR = "CCSCOPE_MPTEST_MARKER"


class TestFailure(Exception):
    pass


class DeadlineExpired(Exception):
    pass


def log(msg):
    sys.stdout.write(f"[mp {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stdout.flush()


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


# --------------------------------------------------------------------------------------------
# Sizes and expected rows


def parse_size(text):
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = str(text).strip().upper().rstrip("B")
    unit = text[-1] if text and text[-1] in "KMG" else ""
    num = text[:-1] if unit else text
    return int(num) * mult[unit]


def sweep_sizes(minb, maxb, factor=2.0, step=0):
    """The sizes of an nccl-tests style sweep: start at -b, grow by -f (or -i), stop above -e."""
    b, e = parse_size(minb), parse_size(maxb)
    out = []
    while b <= e:
        out.append(b)
        nxt = b + step if step else int(b * factor)
        if nxt <= b:
            break
        b = nxt
    return out


def expected_keys(sizes, dtypes, ops):
    """Set of (bytes, dtype, redop, in_place) a sweep must produce (one row each)."""
    keys = set()
    for s in sizes:
        for d in dtypes:
            es = DTYPE_SIZE[d]
            for o in ops:
                for ip in (False, True):
                    keys.add(((s // es) * es, d, o, ip))
    return keys


def expected_row_count(sizes, dtypes, ops):
    return len(sizes) * len(dtypes) * len(ops) * 2


# --------------------------------------------------------------------------------------------
# JSON Lines


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


def count_result_lines(path):
    """Number of complete result records in a file being written (tolerates a partial tail)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return 0
    n = 0
    for line in data.split(b"\n")[:-1]:
        try:
            if json.loads(line).get("type") == "result":
                n += 1
        except ValueError:
            pass
    return n


def split_records(recs, path="json"):
    check(recs, f"{path}: empty")
    check(recs[0].get("type") == "run", f"{path}: first record is not type 'run': {recs[0]}")
    # Results, each algorithm's sweep closed by its wait profile ("waits"); a failed run ends
    # with its diagnosis record (issue 5); nothing else.
    body = [r for r in recs[1:] if r.get("type") != "diagnosis"]
    tail = recs[1 + len(body):]
    for i, r in enumerate(body, 2):
        check(r.get("type") in ("result", "waits"),
              f"{path}:{i}: expected type 'result' or 'waits', got {r.get('type')}")
    results = [r for r in body if r.get("type") == "result"]
    for r in tail:
        check(r.get("type") == "diagnosis" and "layer" in r and "culprit" in r,
              f"{path}: trailing record is not a diagnosis: {r}")
    return recs[0], results


RESULT_FIELDS = ["collective", "algorithm", "transport", "ranks", "bytes", "count", "dtype",
                 "redop", "in_place", "iters", "time_us", "algbw_gbps", "busbw_gbps", "wrong",
                 "lat_us"]


def check_result_row(r, where, *, ranks, transport, algorithm="ring", iters=None):
    for k in RESULT_FIELDS:
        check(k in r, f"{where}: result row lacks field '{k}': {r}")
    for k in ("min", "p50", "p90", "p99", "max"):
        check(k in r["lat_us"], f"{where}: lat_us lacks '{k}': {r}")
    check(r["collective"] == "allreduce", f"{where}: collective {r['collective']!r}")
    check(r["algorithm"] == algorithm, f"{where}: algorithm {r['algorithm']!r}, expected {algorithm!r}")
    check(r["transport"] == transport, f"{where}: transport {r['transport']!r}, expected {transport!r}")
    check(r["ranks"] == ranks, f"{where}: ranks {r['ranks']}, expected {ranks}")
    check(r["dtype"] in DTYPE_SIZE, f"{where}: unknown dtype {r['dtype']!r}")
    check(r["count"] * DTYPE_SIZE[r["dtype"]] == r["bytes"],
          f"{where}: count {r['count']} x {r['dtype']} != bytes {r['bytes']}")
    if iters is not None:
        check(r["iters"] == iters, f"{where}: iters {r['iters']}, expected {iters}")
    lat = r["lat_us"]
    check(lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"],
          f"{where}: latency percentiles out of order: {lat}")


def row_key(r):
    return (r["bytes"], r["dtype"], r["redop"], r["in_place"])


# --------------------------------------------------------------------------------------------
# Processes


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def proc_environ(pid):
    data = _read(f"/proc/{pid}/environ")
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
    data = _read(f"/proc/{pid}/stat")
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


class Harness:
    """Owns the processes of one test and guarantees none outlives it."""

    def __init__(self, name):
        self.name = name
        self.marker = f"{name}-{uuid.uuid4().hex}"
        self.tmp = tempfile.mkdtemp(prefix=f"ccscope-mp-{name}-")
        self.procs = []
        self._n = 0

    def path(self, name):
        return os.path.join(self.tmp, name)

    def env(self, extra=None, clean_launch_env=True):
        env = dict(os.environ)
        if clean_launch_env:
            # Whatever ctest was started under must not turn our processes into ranks of it.
            for k in list(env):
                if (k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_", "CCSCOPE_", "TORCHELASTIC_"))
                        or k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                 "MASTER_ADDR", "MASTER_PORT")):
                    del env[k]
        env[MARKER_VAR] = self.marker
        if extra:
            env.update(extra)
        return env

    def start(self, argv, extra_env=None, label=None):
        self._n += 1
        label = label or f"p{self._n}"
        out = self.path(f"{label}.stdout")
        err = self.path(f"{label}.stderr")
        fo, fe = open(out, "wb"), open(err, "wb")
        p = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                             env=self.env(extra_env), start_new_session=True, cwd=self.tmp)
        fo.close()
        fe.close()
        p.label, p.argv, p.out_path, p.err_path = label, argv, out, err
        p.t_start = time.monotonic()
        self.procs.append(p)
        return p

    @staticmethod
    def stdout(p):
        return (_read(p.out_path) or b"").decode(errors="replace")

    @staticmethod
    def stderr(p):
        return (_read(p.err_path) or b"").decode(errors="replace")

    def wait(self, p, timeout):
        """Waits for p; on timeout kills its tree and fails the test."""
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise TestFailure(
                f"{p.label} did not finish within {timeout:.0f} s (killed): {' '.join(p.argv)}\n"
                f"--- stderr tail ---\n{self.stderr(p)[-3000:]}")
        p.wall = time.monotonic() - p.t_start
        return rc

    def run(self, argv, timeout, extra_env=None, label=None):
        p = self.start(argv, extra_env, label)
        rc = self.wait(p, timeout)
        return rc, self.stdout(p), self.stderr(p), p

    def marked_pids(self):
        me = os.getpid()
        out = []
        for pid in all_pids():
            if pid == me:
                continue
            if proc_environ(pid).get(MARKER_VAR) == self.marker and alive(pid):
                out.append(pid)
        return out

    def leftovers(self, grace=3.0):
        """Processes of this test still alive after `grace` seconds."""
        end = time.monotonic() + grace
        while True:
            left = self.marked_pids()
            if not left or time.monotonic() > end:
                return left
            time.sleep(0.05)

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for _ in range(3):
            pids = self.marked_pids()
            if not pids:
                break
            for pid in pids:
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            time.sleep(0.1)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def describe(self, p):
        return (f"command: {' '.join(p.argv)}\n--- stderr ---\n{self.stderr(p)[-4000:]}"
                f"\n--- stdout tail ---\n{self.stdout(p)[-2000:]}")


def main(cases, argv=None):
    """Runs one case: mp_test.py --ccscope BIN [--mpirun M] [--deadline S] CASE [ARGS...]."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccscope", required=True)
    ap.add_argument("--mpirun", default="")
    ap.add_argument("--deadline", type=float, default=120.0)
    ap.add_argument("case", choices=sorted(cases))
    ap.add_argument("args", nargs="*")
    a = ap.parse_args(argv)

    check_bin = os.path.abspath(a.ccscope)
    if not os.access(check_bin, os.X_OK):
        print(f"ccscope binary {check_bin} is not executable", file=sys.stderr)
        return 1
    h = Harness(a.case)

    def on_alarm(signum, frame):
        raise DeadlineExpired()

    def on_term(signum, frame):
        h.kill_all()
        sys.exit(128 + signum)

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.setitimer(signal.ITIMER_REAL, a.deadline)
    t0 = time.monotonic()
    rc = 0
    passed = False
    try:
        cases[a.case](h, check_bin, a.mpirun, *a.args)
        left = h.leftovers()
        check(not left, f"processes outlived the test's launcher(s): pids {left}")
        log(f"PASS {a.case} {' '.join(a.args)} in {time.monotonic() - t0:.1f} s")
        passed = True
    except SkipTest as e:
        log(f"SKIP {a.case}: {e}")
        rc = SKIP
    except TestFailure as e:
        log(f"FAIL {a.case} {' '.join(a.args)}: {e}")
        rc = 1
    except DeadlineExpired:
        log(f"FAIL {a.case} {' '.join(a.args)}: test deadline of {a.deadline:.0f} s expired")
        for p in h.procs:
            log(f"  {p.label}: {h.describe(p)}")
        rc = 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        h.kill_all()
    if passed and not os.environ.get("CCSCOPE_MPTEST_KEEP"):
        shutil.rmtree(h.tmp, ignore_errors=True)
    else:
        log(f"work files kept in {h.tmp}")
    return rc


class SkipTest(Exception):
    pass
