"""The lab of the multi-process end-to-end tests (ctest label `mp`): the harness that starts and
reaps a test's processes, the bench command lines, and the checks of a sweep's JSON Lines.

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

from labcommon import (SKIP, DeadlineExpired, SkipTest, TestFailure, alive,
                       all_pids, arm_deadline, case_arguments, cases_in, check, clean_env,
                       disarm_deadline, log, proc_environ, read_bytes, read_jsonl, torchrun_env)

DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float",
          "double"]
DTYPE_SIZE = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
              "half": 2, "bfloat16": 2, "float": 4, "double": 8}
OPS = ["sum", "prod", "min", "max", "avg"]

MARKER_VAR = "CCSCOPE_MPTEST_MARKER"
ITERS = ["-n", "2", "-w", "1"]
RUN_TIMEOUT = 120  # seconds for one healthy run on a busy 2-core machine


# --------------------------------------------------------------------------------------------
# Command lines


def bench(binary, *args):
    return [binary, "bench", "allreduce", *[str(a) for a in args]]


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def need_mpirun(mpirun, n=4):
    """`mpirun ... -np n`, or a skip where there is no mpirun."""
    if not mpirun or not os.access(mpirun, os.X_OK):
        raise SkipTest("mpirun not found")
    return [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(n)]


def start_torchrun(h, argv, world, label="rank"):
    """`world` torchrun-style ranks on this host, one process each."""
    port = free_port()
    token = uuid.uuid4().hex
    return [h.start(argv, torchrun_env(r, world, port, token), label=f"{label}{r}")
            for r in range(world)], port


# --------------------------------------------------------------------------------------------
# Sizes and rows


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
    return {((s // DTYPE_SIZE[d]) * DTYPE_SIZE[d], d, o, ip)
            for s in sizes for d in dtypes for o in ops for ip in (False, True)}


def expected_row_count(sizes, dtypes, ops):
    return len(sizes) * len(dtypes) * len(ops) * 2


def split_records(recs, path="json"):
    """(run record, result rows) of a sweep; everything else must be a waits or diagnosis."""
    check(recs, f"{path}: empty")
    check(recs[0].get("type") == "run", f"{path}: first record is not type 'run': {recs[0]}")
    # Results, each algorithm's sweep closed by its wait profile ("waits"), the lines above the
    # table ("note"); a failed run ends with its diagnosis record; nothing else.
    body = [r for r in recs[1:] if r.get("type") != "diagnosis"]
    tail = recs[1 + len(body):]
    for i, r in enumerate(body, 2):
        check(r.get("type") in ("result", "waits", "note"),
              f"{path}:{i}: expected type 'result', 'waits' or 'note', got {r.get('type')}")
        check(r.get("type") != "note" or isinstance(r.get("text"), str) and r["text"],
              f"{path}:{i}: a note without text: {r}")
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
    check(r["algorithm"] == algorithm,
          f"{where}: algorithm {r['algorithm']!r}, expected {algorithm!r}")
    check(r["transport"] == transport,
          f"{where}: transport {r['transport']!r}, expected {transport!r}")
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


def verify_sweep(h, p, rc, json_path, *, transport, ranks, sizes, dtypes, ops, iters=2,
                 algorithm="ring", expect_rc=0):
    """A finished sweep: exit code, one row per (size, dtype, op, placement), all exact."""
    check(rc == expect_rc, f"exit code {rc}, expected {expect_rc}\n{h.describe(p)}")
    run, results = split_records(read_jsonl(json_path), json_path)
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
        check("# Out of bounds values : 0 OK" in h.stdout(p),
              f"table footer does not say '# Out of bounds values : 0 OK'\n{h.describe(p)}")
    return run, results


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


# --------------------------------------------------------------------------------------------
# The harness


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

    def env(self, extra=None):
        env = clean_env()  # ctest's own launcher must not turn our processes into its ranks
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
        return (read_bytes(p.out_path) or b"").decode(errors="replace")

    @staticmethod
    def stderr(p):
        return (read_bytes(p.err_path) or b"").decode(errors="replace")

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
        return [pid for pid in all_pids() if pid != me
                and proc_environ(pid).get(MARKER_VAR) == self.marker and alive(pid)]

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


def run_case(h, a, cases):
    """Runs one case in harness h; its exit code (0 pass, 1 fail, SKIP)."""
    t0 = time.monotonic()
    what = f"{a.case} {' '.join(a.args)}"
    try:
        cases[a.case](h, os.path.abspath(a.ccscope), a.mpirun, *a.args)
        left = h.leftovers()
        check(not left, f"processes outlived the test's launcher(s): pids {left}")
        log(f"PASS {what} in {time.monotonic() - t0:.1f} s")
        return 0
    except SkipTest as e:
        log(f"SKIP {a.case}: {e}")
        return SKIP
    except TestFailure as e:
        log(f"FAIL {what}: {e}")
    except DeadlineExpired as e:
        log(f"FAIL {what}: {e}")
        for p in h.procs:
            log(f"  {p.label}: {h.describe(p)}")
    return 1


def main(namespace, argv=None):
    """Runs one case_CASE function of namespace (a test script's globals()):
    SCRIPT --ccscope BIN [--mpirun M] [--deadline S] CASE [ARGS...]."""
    cases = cases_in(namespace)
    a = case_arguments(cases, argv)
    binary = os.path.abspath(a.ccscope)
    if not os.access(binary, os.X_OK):
        print(f"ccscope binary {binary} is not executable", file=sys.stderr)
        return 1
    h = Harness(a.case)

    def on_term(signum, frame):
        h.kill_all()
        sys.exit(128 + signum)

    arm_deadline(a.deadline, on_term)
    try:
        rc = run_case(h, a, cases)
    finally:
        disarm_deadline()
        h.kill_all()
    if rc == 0 and not os.environ.get("CCSCOPE_MPTEST_KEEP"):
        shutil.rmtree(h.tmp, ignore_errors=True)
    else:
        log(f"work files kept in {h.tmp}")
    return rc
