#!/usr/bin/env python3
"""`ccscope hang` end to end, without a GPU: real Python processes with a job's environment
(a rank that waits in a busy loop, a rank asleep in its own code), the RAS replay server with
the real report of a hang, a saved kernel log, a job that opted into Flight Recorder dumps through
its pipe; the exit codes of the README; the node files merged by `ccscope analyze`; and the job
still running afterwards (read-only).

Usage: hang_cli_test.py CCSCOPE"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "data", "ras")
CCSCOPE = sys.argv[1]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def start_rank(rank, code, port, extra=None):
    env = {"PATH": "/usr/bin:/bin", "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    env.update(extra or {})
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def ras_server(*args):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "ras_server.py"), *args],
                         stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().split()[1])
    return p, port


def hang(*args, timeout=30):
    t0 = time.time()
    r = subprocess.run([CCSCOPE, "hang", "--py-spy", "off", *args], capture_output=True, text=True,
                       timeout=timeout)
    return r, time.time() - t0


SPIN = "while True: pass"
SLEEP = "import time\ndef load_batch():\n    time.sleep(120)\nload_batch()"
# A job that opted into on-demand Flight Recorder dumps: PyTorch's heartbeat thread makes the
# pipe <stem><rank>.pipe and, when a byte arrives, writes <TORCH_FR_DUMP_TEMP_FILE><rank>.
FR_JOB = """
import json, os, time
rank = int(os.environ["RANK"])
pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + str(rank) + ".pipe"
os.mkfifo(pipe, 0o666)
fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
last = 6 - rank
while True:
    try:
        got = os.read(fd, 128)
    except BlockingIOError:
        got = b""
    if got:
        entries = [{"collective_seq_id": s, "profiling_name": "nccl:all_reduce", "pg_id": 0,
                    "state": "completed" if s < last else "scheduled"} for s in range(1, last + 1)]
        with open(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank), "w") as f:
            json.dump({"rank": rank, "version": "2.10", "entries": entries}, f)
    time.sleep(0.05 if rank == 0 else 0.2)
"""


def case_ras_text(tmp, port, procs):
    """Two ranks, RAS in text (an NCCL before 2.28.7): exit 3, rank 1, the job untouched."""
    ras, ras_port = ras_server("--text", os.path.join(DATA, "real-2.28.9-opcount-mismatch.txt"),
                               "--json-unknown")
    procs.append(ras)
    r0 = start_rank(0, SPIN, port)
    r1 = start_rank(1, SLEEP, port)
    procs += [r0, r1]
    other = start_rank(0, SLEEP, port + 2)  # another job on the node
    procs.append(other)
    time.sleep(0.8)
    r, _ = hang("--ras", "off", "--kernel-log", "off")
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "choose one with --job" in r.stderr,
          f"several jobs and none chosen: one line, exit 2 ({r.returncode}: {r.stderr!r})")
    other.kill()
    node_a = os.path.join(tmp, "node-a.json")
    r, secs = hang("--job", f"127.0.0.1:{port}", "--ras", f"127.0.0.1:{ras_port}", "--kernel-log",
                   "off", "--json", node_a)
    print(r.stdout)
    check(r.returncode == 3, f"a diagnosed hang exits 3 (got {r.returncode}: {r.stderr.strip()})")
    check(secs < 10, f"within 10 s ({secs:.1f} s)")
    check("Ranks:      1" in r.stdout, "rank 1 is named")
    check("py-spy           skipped" in r.stdout, "a skipped source is listed as skipped")
    check("nvml" in r.stdout and "unavailable" in r.stdout,
          "a source that cannot be read is listed as such")
    check(r0.poll() is None and r1.poll() is None, "the job is still running afterwards")
    snap = json.load(open(node_a))
    check(snap.get("format") == "ccscope.hang" and len(snap["processes"]) == 2,
          "--json holds the snapshot with both ranks")
    ranks = {p["rank"]: p for p in snap["processes"]}
    # The spinner's share depends on the load beside it (ctest -j); the sleeper's stays near 0.
    check(ranks.get(0, {}).get("cpu_percent", 0) > 10 + ranks.get(1, {}).get("cpu_percent", 0),
          "the spinning rank's CPU use is measured")
    check(ranks.get(1, {}).get("state") == "S", "the sleeping rank's state is read")
    check("diagnosis" in snap and snap["diagnosis"]["culprit"]["ranks"] == [1],
          "the verdict is in the JSON")
    return r0, r1, node_a


def case_ras_json_and_merge(tmp, r0, node_a, procs):
    """A second node with only rank 0, RAS in JSON; analyze merges both nodes' files."""
    ras_json, ras_json_port = ras_server(
        "--json", os.path.join(DATA, "variant-2.28.9-opcount-mismatch.json"))
    procs.append(ras_json)
    node_b = os.path.join(tmp, "node-b.json")
    r, _ = hang("--pid", str(r0.pid), "--ras", f"127.0.0.1:{ras_json_port}", "--kernel-log",
                "off", "--json", node_b)
    check(r.returncode == 3 and "json report" in r.stdout,
          f"a JSON RAS report is read (exit {r.returncode})")
    merged = subprocess.run([CCSCOPE, "analyze", "--json", "-", node_a, node_b],
                            capture_output=True, text=True, timeout=30)
    check(merged.returncode == 0, f"analyze merges the node files (exit {merged.returncode})")
    try:
        d = json.loads(merged.stdout)
        check(d["culprit"]["ranks"] == [1] and d["layer"] == "application",
              f"the merged verdict names rank 1, application ({d['layer']}, {d['culprit']})")
    except (ValueError, KeyError) as e:
        check(False, f"analyze --json - printed JSON ({e})")


def case_kernel_log(tmp):
    """A GPU that fell off the bus, from a saved kernel log."""
    dmesg = os.path.join(tmp, "dmesg.txt")
    with open(dmesg, "w") as f:
        f.write("[    5.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04\n"
                "[ 9001.200000] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, "
                "GPU has fallen off the bus.\n")
    r, _ = hang("--ras", "off", "--kernel-log", dmesg, "--pid", "999999999")
    check(r.returncode == 3 and "Layer:      gpu" in r.stdout,
          f"an Xid in the kernel log makes the verdict gpu (exit {r.returncode})")


def case_flight_recorder(tmp, port, procs):
    """Flight Recorder dumps asked for through the job's pipe."""
    fr = {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE": os.path.join(tmp, "frpipe_"),
          "TORCH_FR_DUMP_TEMP_FILE": os.path.join(tmp, "fr_rank_")}
    f0 = start_rank(0, FR_JOB, port + 1, fr)
    f1 = start_rank(1, FR_JOB, port + 1, fr)
    procs += [f0, f1]
    time.sleep(0.8)
    node_c = os.path.join(tmp, "node-c.json")
    r, _ = hang("--job", f"127.0.0.1:{port + 1}", "--ras", "off", "--kernel-log", "off", "--json",
                node_c)
    snap = json.load(open(node_c))
    frs = [s for s in snap["sources"] if s["name"] == "flight-recorder"]
    check(frs and frs[0]["status"] == "read" and "through the job's pipe" in frs[0]["detail"],
          f"dumps asked for through the pipe are read ({frs})")
    check(r.returncode == 3 and "Ranks:      1" in r.stdout,
          f"the dumps name rank 1 (exit {r.returncode})")
    check(f0.poll() is None and f1.poll() is None, "the job still runs after its dumps")
    return f0


def case_stale_dump(tmp, port, procs):
    """A dump left by an earlier run (older than the process) is not taken for this job's."""
    stale = os.path.join(tmp, "stale_")
    with open(stale + "0", "w") as f:
        json.dump({"rank": 0, "entries": [{"collective_seq_id": 1, "profiling_name": "nccl:x",
                                           "pg_id": 0, "state": "completed"}]}, f)
    hour_ago = time.time() - 3600
    os.utime(stale + "0", (hour_ago, hour_ago))
    p = start_rank(0, SLEEP, port + 3, {"TORCH_FR_DUMP_TEMP_FILE": stale})
    procs.append(p)
    time.sleep(0.5)
    out = os.path.join(tmp, "node-stale.json")
    hang("--job", f"127.0.0.1:{port + 3}", "--ras", "off", "--kernel-log", "off", "--json", out)
    snap = json.load(open(out))
    src = snap["processes"][0].get("fr_source", "") if snap["processes"] else ""
    check("written before this process started" in src and "fr_dump" not in snap["processes"][0],
          f"an older dump is ignored ({src})")
    p.kill()


def case_exit_codes(alive_pid):
    """Nothing to examine; bad arguments; a RAS that does not listen."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    r, _ = hang("--pid", str(gone.pid), "--ras", "off", "--kernel-log", "off")
    check(r.returncode == 5 and "nothing to examine" in r.stdout,
          f"no process and no RAS exits 5 (got {r.returncode})")
    r, _ = hang("--timeout", "0")
    check(r.returncode == 2 and r.stderr.count("\n") == 1,
          f"a bad --timeout is one line and exit 2 (got {r.returncode}: {r.stderr!r})")
    r, _ = hang("--timeout", "1", "--ras", "127.0.0.1:1", "--pid", str(alive_pid), "--kernel-log",
                "off")
    check("no RAS listener at 127.0.0.1:1" in r.stdout, "a RAS that does not listen is named")


def main():
    tmp = tempfile.mkdtemp(prefix="ccscope-hang-")
    port = 41000 + os.getpid() % 20000
    procs = []
    try:
        r0, r1, node_a = case_ras_text(tmp, port, procs)
        case_ras_json_and_merge(tmp, r0, node_a, procs)
        case_kernel_log(tmp)
        for p in (r0, r1):
            p.kill()
            p.wait()
        f0 = case_flight_recorder(tmp, port, procs)
        case_stale_dump(tmp, port, procs)
        case_exit_codes(f0.pid)
    finally:
        for p in procs:
            try:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=5)
            except Exception:
                pass
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
