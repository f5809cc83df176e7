"""scripts/rdma-check.sh HOST_A HOST_B: ccscope over RC verbs against perftest, UCX and Open MPI
between two hosts with RDMA devices. Run it on HOST_A: mpirun starts every process on both hosts
(which reach each other by ssh, as mpirun needs); rank 0 writes its JSON here. Each of --runs
rounds measures, in this order:

  sendrecv-verbs     ccscope bench sendrecv, one rank per host, --transport verbs, 8 B..8 MiB
  ib_write_bw        perftest, server on HOST_B, client on HOST_A: -a (2 B..8 MiB), --report_gbits
  ib_send_lat        perftest, the same pair, -a
  allreduce-verbs    ccscope bench allreduce, --np-per-host ranks per host, 1 KiB..256 MiB
  allreduce-ucx      the same over --transport ucx (UCX_NET_DEVICES=the port; UCX_TLS unset)
  allreduce-ompi-ucx Open MPI's MPI_Allreduce with --mca pml ucx (--transport mpi --algo native)

Prints per comparison the medians over the runs and ours/theirs as the median of the per-run
ratios with their min-max, then the goal: our sendrecv busbw >= 0.9x ib_write_bw's BW average at
every size from 64 KiB. Writes OUT/rdma-check.json (raw figures, ratios, verdict) and OUT/logs/.
Exit: 0 goal met; 1 goal missed or a measurement failed; 2 bad arguments; 5 no RDMA device here
or a component missing: mpirun, ccscope on either host, or perftest on either host (the rest is
then still measured, the goal not judged).
"""

import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_check_lib import run, stop_group  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CCSCOPE = os.path.join(ROOT, "build", "app", "ccscope")
IB_CLASS = "/sys/class/infiniband"
GOAL, GOAL_FROM = 0.9, 64 << 10
EXIT_FAIL, EXIT_USAGE, EXIT_MISSING = 1, 2, 5
# perftest's units (src/perftest_parameters.c, print_report_bw): --report_gbits divides by
# 125000000 (Gb = 10^9 bits), otherwise by 0x100000 (MiB; the header said "MB/sec" before 24.07).
BYTES_PER_UNIT = {"Gb": 1e9 / 8, "MiB": float(1 << 20), "MB": float(1 << 20)}
LAT_COLUMNS = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9")  # usec
SERIES = ("sendrecv-verbs", "ib_write_bw", "ib_send_lat", "allreduce-verbs", "allreduce-ucx",
          "allreduce-ompi-ucx")
PERFTEST = ("ib_write_bw", "ib_send_lat")
# (key, ours, its field, theirs, its field, unit): every ratio is ours over theirs.
COMPARISONS = (
    ("sendrecv_bw", "sendrecv-verbs", "busbw_gbps", "ib_write_bw", "bw_avg_gbs", "GB/s"),
    ("sendrecv_lat", "sendrecv-verbs", "p50_us", "ib_send_lat", "t_typical", "us, lower is better"),
    ("allreduce_ucx", "allreduce-verbs", "busbw_gbps", "allreduce-ucx", "busbw_gbps", "GB/s"),
    ("allreduce_ompi", "allreduce-verbs", "busbw_gbps", "allreduce-ompi-ucx", "busbw_gbps", "GB/s"),
)
USAGE = ("scripts/rdma-check.sh HOST_A HOST_B [--dev DEV:PORT] [--gid-index N] [--np-per-host K] "
         "[--runs N] [--ucx-errors peer|none] [--out DIR]")


def parse_perftest(text):
    """The result table of an ib_*_bw or ib_*_lat run: {"kind": "bw"|"lat", "unit", "rows":
    {bytes: row}}; bandwidth in GB/s (10^9 B/s), latency in microseconds."""
    kind, unit, rows = None, None, {}
    for line in text.splitlines():
        if "#bytes" in line:
            m = re.search(r"BW average\[(\w+)/sec\]", line)
            if m and m.group(1) in BYTES_PER_UNIT:
                kind, unit = "bw", m.group(1)
            elif "t_typical[usec]" in line:
                kind, unit = "lat", "usec"
            else:
                raise ValueError(f"perftest table not understood: {line.strip()}")
        elif kind and rows and line.startswith("---"):
            break  # the table's closing line
        elif kind and line.split() and line.split()[0].isdigit():
            rows[int(line.split()[0])] = perftest_row(kind, unit, line.split())
    if kind is None:
        raise ValueError("no perftest result table (no '#bytes' header line)")
    return {"kind": kind, "unit": unit, "rows": rows}


def perftest_row(kind, unit, fields):
    vals = [float(f) for f in fields[1:]]
    if len(vals) < (4 if kind == "bw" else 1 + len(LAT_COLUMNS)):
        raise ValueError(f"perftest row too short: {' '.join(fields)}")
    if kind == "lat":
        return {"iters": int(vals[0]), **dict(zip(LAT_COLUMNS, vals[1:]))}
    scale = BYTES_PER_UNIT[unit] / 1e9
    return {"iters": int(vals[0]), "bw_peak_gbs": vals[1] * scale, "bw_avg_gbs": vals[2] * scale,
            "msg_rate_mpps": vals[3]}


def parse_ccscope(text):
    """{bytes: {"busbw_gbps", "p50_us"}} from the out-of-place result rows of ccscope's JSON
    Lines (docs/output-format.md)."""
    rows = {}
    for rec in (json.loads(ln) for ln in text.splitlines() if ln.strip()):
        if rec.get("type") == "result" and not rec.get("in_place"):
            rows[rec["bytes"]] = {"busbw_gbps": rec["busbw_gbps"],
                                  "p50_us": rec.get("lat_us", {}).get("p50")}
    return rows


def compare(ours, ours_field, theirs, theirs_field):
    """Runs are lists of {bytes: row} (None: the run failed). Per size we measured: the medians
    over runs and, where both measured it in the same run, ours/theirs as the median of the
    per-run ratios with their min and max (None without theirs)."""
    def value(run, b, f):
        return run[b].get(f) if run and b in run else None
    out = []
    for b in sorted({b for r in ours if r for b in r}):
        mine = [v for v in (value(o, b, ours_field) for o in ours) if v is not None]
        their = [v for v in (value(t, b, theirs_field) for t in theirs) if v is not None]
        pairs = ((value(o, b, ours_field), value(t, b, theirs_field)) for o, t in zip(ours, theirs))
        ratios = [o / t for o, t in pairs if o is not None and t]
        if mine:
            out.append({"bytes": b, "ours": statistics.median(mine), "runs": len(ratios),
                        "theirs": statistics.median(their) if their else None,
                        "ratio": statistics.median(ratios) if ratios else None,
                        "ratio_min": min(ratios, default=None),
                        "ratio_max": max(ratios, default=None)})
    return out


def judge(rows, goal=GOAL, from_bytes=GOAL_FROM):
    """The goal over the sizes from from_bytes: every median ratio >= goal."""
    judged = [r for r in rows if r["bytes"] >= from_bytes and r["ratio"] is not None]
    if not judged:
        return {"verdict": "not judged",
                "line": f"goal not judged: no size from {human(from_bytes)} measured by both"}
    worst = min(judged, key=lambda r: r["ratio"])
    missed = [r["bytes"] for r in judged if r["ratio"] < goal]
    span = (f"{human(judged[0]['bytes'])}..{human(judged[-1]['bytes'])}, {len(judged)} sizes; "
            f"lowest {worst['ratio']:.3f}x at {human(worst['bytes'])}")
    line = (f"goal missed: our sendrecv busbw < {goal}x ib_write_bw at "
            f"{', '.join(map(human, missed))} ({span})" if missed else
            f"goal met: our sendrecv busbw >= {goal}x ib_write_bw ({span})")
    return {"verdict": "fail" if missed else "pass", "goal": goal, "from_bytes": from_bytes,
            "sizes": [r["bytes"] for r in judged], "missed": missed, "line": line}


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def table(rows, ours, ours_field, theirs, theirs_field, unit):
    out = [f"## {ours} {ours_field} vs {theirs} {theirs_field} ({unit}); ratio: ours/theirs",
           f"{'size':>6} {ours:>18} {theirs:>18} {'ratio':>8}  min-max of the runs' ratios (runs)"]
    for r in rows:
        theirs_txt = "-" if r["theirs"] is None else f"{r['theirs']:.3f}"
        ratio, spread = ("-", "-") if r["ratio"] is None else (
            f"{r['ratio']:.3f}x", f"{r['ratio_min']:.3f}-{r['ratio_max']:.3f}")
        out.append(f"{human(r['bytes']):>6} {r['ours']:18.3f} {theirs_txt:>18} {ratio:>8}  "
                   f"{spread} ({r['runs']})")
    return "\n".join(out if rows else out + ["  (nothing measured)"])


def first_active_port(ib_class):
    """"mlx5_0:1" for the first ACTIVE port (state "4: ACTIVE"), as ccscope's verbs picks."""
    for dev in sorted(os.listdir(ib_class)):
        ports = os.path.join(ib_class, dev, "ports")
        for port in sorted(os.listdir(ports) if os.path.isdir(ports) else [], key=int):
            state = pathlib.Path(ports, port, "state")
            if state.is_file() and state.read_text(encoding="utf-8").startswith("4"):
                return f"{dev}:{port}"
    return None


def mpirun(hosts, np):
    # Unbound, ours and perftest alike (Open MPI pins a job of 2 ranks to cores by default);
    # quiet, so that a failure's last lines are the program's, not mpirun's banner.
    return ["mpirun", "--allow-run-as-root", "-q", "--bind-to", "none", "-H", hosts, "-np", str(np)]


def ccscope_cmd(a, collective, transport, json_path):
    k = 1 if collective == "sendrecv" else a.np_per_host
    cmd = mpirun(f"{a.host_a}:{k},{a.host_b}:{k}", 2 * k) + ["--map-by", "slot"]
    if transport == "mpi":
        cmd += ["--mca", "pml", "ucx"]
    if transport in ("ucx", "mpi"):
        cmd += ["-x", f"UCX_NET_DEVICES={a.dev}"]
        cmd += ["-x", f"UCX_IB_GID_INDEX={a.gid_index}"] if a.gid_index is not None else []
    lo, hi, iters, warm = ("8", "8M", "200", "20") if collective == "sendrecv" else \
        ("1K", "256M", "20", "5")
    cmd += [CCSCOPE, "bench", collective, "-b", lo, "-e", hi, "-n", iters, "-w", warm, "-c", "0",
            "--placement", "out", "--timeout", "60s", "--transport", transport, "--json", json_path]
    if transport == "verbs":
        cmd += ["--rdma-dev", a.dev]
        cmd += ["--gid-index", str(a.gid_index)] if a.gid_index is not None else []
    if transport == "ucx":
        cmd += ["--ucx-errors", a.ucx_errors]
    return cmd + (["--algo", "native"] if transport == "mpi" else [])


def perftest_cmds(a, tool):
    """(server on HOST_B, client on HOST_A connecting to it)."""
    dev, port = a.dev.rsplit(":", 1)
    args = [tool, "-d", dev, "-i", port, "-a", "-F"]
    args += ["-x", str(a.gid_index)] if a.gid_index is not None else []
    args += ["--report_gbits"] if tool == "ib_write_bw" else []  # symmetric: both sides
    return mpirun(a.host_b, 1) + args, mpirun(a.host_a, 1) + args + [a.host_b]


def plan(a, run_no):
    """{series: ("ccscope", cmd, json path) | ("perftest", server, client)} for one round."""
    p = {}
    for name in SERIES:
        if name in PERFTEST:
            p[name] = ("perftest", *perftest_cmds(a, name))
        else:
            coll, transport = name.split("-", 1)
            transport = {"ompi-ucx": "mpi"}.get(transport, transport)
            path = os.path.join(a.out, f"{name}.run{run_no}.jsonl")
            p[name] = ("ccscope", ccscope_cmd(a, coll, transport, path), path)
    return p


def run_ccscope(cmd, path, log):
    if os.path.exists(path):
        os.remove(path)
    res = run(cmd, 1200, log)
    if res.rc != 0:
        return None, f"exit {res.rc}: {res.last_lines(2)}"
    if not os.path.exists(path):
        return None, f"no JSON at {path} (run this script on HOST_A, where rank 0 runs)"
    with open(path, encoding="utf-8") as f:
        return parse_ccscope(f.read()), None


def run_perftest(server_cmd, client_cmd, log, text_path):
    """The server under mpirun, which takes it down on HOST_B when stopped (under plain ssh it
    would outlive a failed client); then the client, retried while the server starts listening."""
    with open(log + ".server", "w", encoding="utf-8") as slog:
        server = subprocess.Popen(server_cmd, stdout=slog, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(15):
            time.sleep(1)
            res = run(client_cmd, 600, log)
            if res.rc == 0 or server.poll() is not None:
                break
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    finally:
        stop_group(server.pid)
    if res.rc != 0:
        return None, f"client exit {res.rc}: {res.last_lines(2)} (server: {log}.server)"
    with open(text_path, "w", encoding="utf-8") as f:
        f.write(res.out)
    try:
        return parse_perftest(res.out)["rows"], None
    except ValueError as e:
        return None, str(e)


def measure(a, with_perftest):
    raw, errors = {n: [] for n in SERIES}, []
    for run_no in range(1, a.runs + 1):
        for name, step in plan(a, run_no).items():
            if step[0] == "perftest" and not with_perftest:
                continue
            print(f"run {run_no}/{a.runs}: {name}", flush=True)
            log = os.path.join(a.out, "logs", f"{name}.run{run_no}.log")
            if step[0] == "ccscope":
                rows, err = run_ccscope(step[1], step[2], log)
            else:
                rows, err = run_perftest(*step[1:], log, log[:-4] + ".txt")
            raw[name].append(rows)
            errors += [f"run {run_no} {name}: {err}"] if err else []
    return raw, errors


class Parser(argparse.ArgumentParser):
    def error(self, message):
        stop(f"rdma-check: {message} (usage: {USAGE})", EXIT_USAGE)


def stop(line, code, out=None):
    """One line on stderr; with out, a rdma-check.json that says nothing was measured."""
    print(line, file=sys.stderr)
    if out:
        write_json(out, {"verdict": "not measured", "reason": line})
    sys.exit(code)


def parse_args(argv):
    ap = Parser(prog="scripts/rdma-check.sh", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    add = ap.add_argument
    add("host_a", metavar="HOST_A", help="this host: perftest client, rank 0")
    add("host_b", metavar="HOST_B", help="the other host: perftest server")
    add("--dev", metavar="DEV:PORT", help="e.g. mlx5_0:1 (default: this host's first ACTIVE port, "
        "as ccscope picks)")
    add("--gid-index", type=int, metavar="N", help="RoCE: GID index for ccscope, perftest and UCX")
    add("--np-per-host", type=int, default=1, metavar="K", help="allreduce ranks per host")
    add("--runs", type=int, default=5, metavar="N", help="rounds of every measurement")
    add("--ucx-errors", choices=("peer", "none"), default="peer")
    add("--out", metavar="DIR", default=os.environ.get("OUT") or f"{ROOT}/build/rdma-check")
    a = ap.parse_args(argv)
    if a.dev is not None and not re.fullmatch(r"[\w.-]+:\d+", a.dev):
        ap.error(f"--dev {a.dev}: expected DEVICE:PORT, e.g. mlx5_0:1")
    for opt, v, least in (("--gid-index", a.gid_index, 0), ("--np-per-host", a.np_per_host, 1),
                          ("--runs", a.runs, 1)):
        if v is not None and v < least:
            ap.error(f"{opt} {v}: must be at least {least}")
    if a.host_a == a.host_b:
        ap.error(f"HOST_A and HOST_B are both {a.host_a}: the check is between two hosts")
    a.out = os.path.abspath(a.out)
    return a


def preflight_local(a):
    devs = sorted(os.listdir(IB_CLASS)) if os.path.isdir(IB_CLASS) else []
    if not devs:
        stop(f"rdma-check: no RDMA device on this host ({IB_CLASS} is absent or empty): "
             "nothing to measure", EXIT_MISSING, a.out)
    a.dev = a.dev or first_active_port(IB_CLASS)
    if a.dev is None:
        stop(f"rdma-check: no ACTIVE port on {', '.join(devs)}: `ccscope diagnose --np 2` says "
             "why", EXIT_MISSING, a.out)
    if not shutil.which("mpirun"):
        stop("rdma-check: mpirun not found: Open MPI's mpirun starts every process",
             EXIT_MISSING, a.out)
    if not os.access(CCSCOPE, os.X_OK):
        stop(f"rdma-check: {CCSCOPE} is not built (scripts/build.sh)", EXIT_MISSING, a.out)


def preflight_hosts(a):
    """Both hosts at once, through mpirun: the device, ccscope at the same path, perftest."""
    probe = (f'printf "host=%s devs=%s perftest=%s ccscope=%s memlock=%s\\n" "$(hostname)" '
             f'"$(ls {IB_CLASS} 2>/dev/null | tr "\\n" ,)" "$(command -v ib_write_bw >/dev/null '
             f'&& command -v ib_send_lat >/dev/null && echo yes || echo no)" '
             f'"$(test -x {shlex.quote(CCSCOPE)} && echo yes || echo no)" "$(ulimit -l)"')
    cmd = mpirun(f"{a.host_a},{a.host_b}", 2) + ["--map-by", "node", "sh", "-c", probe]
    res = run(cmd, 120, os.path.join(a.out, "logs", "preflight.log"))
    hosts = [dict(kv.split("=", 1) for kv in ln.split()) for ln in res.out.splitlines()
             if ln.startswith("host=")]
    if res.rc != 0 or len(hosts) != 2:
        stop(f"rdma-check: mpirun could not start on {a.host_a} and {a.host_b}: "
             f"{res.last_lines(2)}", EXIT_FAIL, a.out)
    dev = a.dev.rsplit(":", 1)[0]
    for h in hosts:
        if dev not in h["devs"].split(","):
            stop(f"rdma-check: {h['host']} has no {dev} (devices: {h['devs'] or 'none'})",
                 EXIT_MISSING, a.out)
        if h["ccscope"] != "yes":
            stop(f"rdma-check: {h['host']} has no {CCSCOPE} (mpirun starts it at that path)",
                 EXIT_MISSING, a.out)
    return hosts


def write_json(out, obj):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "rdma-check.json"), "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def summarize(raw, no_perftest):
    comps = {c[0]: compare(raw[c[1]], c[2], raw[c[3]], c[4]) for c in COMPARISONS}
    for c in COMPARISONS:
        print("\n" + table(comps[c[0]], *c[1:]))
    if no_perftest:
        return comps, {"verdict": "not judged", "line": f"goal not judged: {no_perftest}"}
    return comps, judge(comps["sendrecv_bw"])


def main(argv=None):
    a = parse_args(argv)
    preflight_local(a)
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    hosts = preflight_hosts(a)
    for h in hosts:
        print(f"{h['host']}: devices {h['devs'].rstrip(',')}, perftest {h['perftest']}, "
              f"ulimit -l {h['memlock']}; measuring over {a.dev}")
    lacking = [h["host"] for h in hosts if h["perftest"] != "yes"]
    no_perftest = lacking and (f"perftest (ib_write_bw, ib_send_lat; package perftest) missing "
                               f"on {', '.join(lacking)}")
    if no_perftest:
        print(f"rdma-check: {no_perftest}: measuring ours only")
    raw, errors = measure(a, not no_perftest)
    comps, verdict = summarize(raw, no_perftest)
    print("\n" + verdict["line"] + "".join(f"\nfailed: {e}" for e in errors))
    write_json(a.out, {"hosts": hosts, "dev": a.dev, "runs": a.runs, "gid_index": a.gid_index,
                       "np_per_host": a.np_per_host, "ucx_errors": a.ucx_errors,
                       "commands": {n: [shlex.join(c) for c in s[1:] if isinstance(c, list)]
                                    for n, s in plan(a, 1).items()},
                       "raw": raw, "comparisons": comps,
                       "verdict": verdict, "errors": errors})
    ok = verdict["verdict"] == "pass" and not errors
    return EXIT_MISSING if no_perftest else (0 if ok else EXIT_FAIL)


if __name__ == "__main__":
    sys.exit(main())
