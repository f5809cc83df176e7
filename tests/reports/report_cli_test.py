#!/usr/bin/env python3
"""End-to-end test of `ccscope report` on real runs (ctest label "mp"; with --netns-throttle,
label "netns": needs root, `ip netns` and `tc`).

1. a real run renders to every format; the JUnit file validates (xmllint, tests/reports/junit.xsd);
   every numeric CSV field parses and equals the JSON record.
2. the run compared with itself passes (exit 0).
3. a copy with two rows made 3x slower fails on exactly those two rows (exit 1, JUnit, stdout).
4. one row marked wrong fails only its testcase; a real run with a corrupted rank (CCSCOPE_TESTONLY_CORRUPT_RANK=1) fails exactly the rows with
   wrong > 0.
5. bad input exits 2 with file:line; unknown flags exit 2.
6. --netns-throttle: a tcp run inside a private network namespace, then the same run with a tbf
   rate limit on that namespace's loopback: every large row regresses against the first.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
XSD = os.path.join(HERE, "junit.xsd")
FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def results(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r["type"] == "result"]


def row_name(r):
    return (f"{r['collective']} {r['algorithm']} {r['transport']} {r['bytes']}B {r['dtype']} "
            f"{r['redop']} {'in-place' if r['in_place'] else 'out-of-place'}")


def failed_cases(junit_path):
    out = run(["xmllint", "--xpath", "//testcase[failure]/@name", junit_path]).stdout
    return sorted(part.split('"')[1] for part in out.split("name=")[1:])


def validates(junit_path):
    p = run(["xmllint", "--noout", "--schema", XSD, junit_path])
    return p.returncode == 0, p.stderr


def bench(ccscope, out, extra=(), env=None, prefix=()):
    cmd = [*prefix, ccscope, "bench", "allreduce", "--np", "4", "-b", "8", "-e", "256K", "-n", "10",
           "--timeout", "30s", "--json", out, *extra]
    return run(cmd, env=env)


def csv_round_trip(csv_path, json_rows):
    names = {"bytes_B": "bytes", "count_elements": "count", "algbw_GBps": "algbw_gbps",
             "busbw_GBps": "busbw_gbps", "wrong_elements": "wrong"}
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != len(json_rows):
        return f"{len(rows)} CSV rows for {len(json_rows)} results"
    checked = 0
    for c, j in zip(rows, json_rows):
        for col, text in c.items():
            key = names.get(col, col)
            want = (j["lat_us"][col[4:-3]] if col.startswith("lat_") else j.get(key))
            if isinstance(want, bool) or not isinstance(want, (int, float)):
                continue
            if float(text) != float(want):
                return f"{col}: CSV {text} != JSON {want}"
            checked += 1
    return None if checked >= 17 * len(rows) else f"only {checked} numeric fields checked"


def basic_formats(ccscope, tmp, a):
    p = run([ccscope, "report", a, "--html", f"{tmp}/a.html", "--md", f"{tmp}/a.md", "--csv",
             f"{tmp}/a.csv", "--junit", f"{tmp}/a.xml"])
    check(p.returncode == 0, f"report of a clean run exits 0 (got {p.returncode}) {p.stderr}")
    ok, err = validates(f"{tmp}/a.xml")
    check(ok, f"JUnit validates against junit.xsd {err}")
    err = csv_round_trip(f"{tmp}/a.csv", results(a))
    check(err is None, f"CSV numeric fields round-trip ({err})")
    check(open(f"{tmp}/a.md").read().startswith("## ✅ ccscope report: passed"), "Markdown verdict")


def baseline_checks(ccscope, tmp, a):
    p = run([ccscope, "report", a, "--baseline", a, "--junit", f"{tmp}/self.xml"])
    check(p.returncode == 0 and failed_cases(f"{tmp}/self.xml") == [],
          f"run vs itself passes (exit {p.returncode})")
    lines = open(a).read().splitlines()
    idx = [i for i, l in enumerate(lines) if json.loads(l)["type"] == "result"]
    chosen = [idx[len(idx) // 2], idx[-1]]
    slowed = []
    for i in chosen:
        r = json.loads(lines[i])
        r["time_us"] *= 3
        r["algbw_gbps"] /= 3
        r["busbw_gbps"] /= 3
        for k in ("min", "p50", "p90", "p99", "max", "mean"):
            r["lat_us"][k] *= 3
        lines[i] = json.dumps(r)
        slowed.append(row_name(r))
    with open(f"{tmp}/slow.jsonl", "w") as f:
        f.write("\n".join(lines) + "\n")
    p = run([ccscope, "report", f"{tmp}/slow.jsonl", "--baseline", a, "--junit", f"{tmp}/slow.xml",
             "--md", f"{tmp}/slow.md"])
    check(p.returncode == 1, f"slowed copy exits 1 (got {p.returncode})")
    check(failed_cases(f"{tmp}/slow.xml") == sorted(slowed),
          f"exactly the slowed rows fail: {failed_cases(f'{tmp}/slow.xml')} vs {sorted(slowed)}")
    listed = [l for l in p.stdout.splitlines() if l.strip().startswith("FAIL")]
    check(len(listed) == 2 and all(any(s in l for l in listed) for s in slowed),
          "stdout lists the regressed rows")


def one_wrong_row(ccscope, tmp, a):
    lines = open(a).read().splitlines()
    i = next(k for k, l in enumerate(lines) if json.loads(l)["type"] == "result") + 5
    r = json.loads(lines[i])
    r["wrong"] = 1
    lines[i] = json.dumps(r)
    with open(f"{tmp}/one-wrong.jsonl", "w") as f:
        f.write("\n".join(lines) + "\n")
    p = run([ccscope, "report", f"{tmp}/one-wrong.jsonl", "--junit", f"{tmp}/one-wrong.xml"])
    check(p.returncode == 1 and failed_cases(f"{tmp}/one-wrong.xml") == [row_name(r)],
          f"one wrong row: exit 1 and only its testcase fails (exit {p.returncode})")


def wrong_results(ccscope, tmp):
    c = f"{tmp}/corrupt.jsonl"
    p = bench(ccscope, c, env={"CCSCOPE_TESTONLY_CORRUPT_RANK": "1"})
    check(p.returncode == 4, f"corrupted bench exits 4 (got {p.returncode})")
    wrong = sorted(row_name(r) for r in results(c) if r["wrong"] > 0)
    check(len(wrong) > 0, f"corruption produced wrong rows ({len(wrong)})")
    p = run([ccscope, "report", c, "--junit", f"{tmp}/corrupt.xml"])
    check(p.returncode == 1, f"report of wrong results exits 1 (got {p.returncode})")
    ok, err = validates(f"{tmp}/corrupt.xml")
    check(ok, f"JUnit with failures validates {err}")
    check(failed_cases(f"{tmp}/corrupt.xml") == wrong, "exactly the wrong rows fail")


def bad_input(ccscope, tmp, a):
    bad = f"{tmp}/bad.jsonl"
    with open(a) as src, open(bad, "w") as dst:
        dst.write(src.readline() + src.readline() + '{"type": "result", "bytes": \n')
    p = run([ccscope, "report", bad])
    check(p.returncode == 2 and f"{bad}:3" in p.stderr, f"malformed line: exit 2 + file:line "
          f"(got {p.returncode}: {p.stderr.strip()})")
    p = run([ccscope, "report", f"{tmp}/none.jsonl"])
    check(p.returncode == 2 and "none.jsonl" in p.stderr, "unreadable file: exit 2")
    p = run([ccscope, "report", a, "--no-such-flag"])
    check(p.returncode == 2, f"unknown flag: exit 2 (got {p.returncode})")
    p = run([ccscope, "report", a, "--min-busbw", "1M"])
    check(p.returncode == 2, f"bad limit: exit 2 (got {p.returncode})")


def netns_throttle(ccscope, tmp):
    ns = f"ccscope-report-{os.getpid()}"
    if os.geteuid() != 0 or run(["ip", "netns", "add", ns]).returncode != 0:
        print("SKIP netns throttle: cannot create a network namespace (needs root)")
        sys.exit(77)
    try:
        run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])
        pre = ["ip", "netns", "exec", ns]
        fast, slow = f"{tmp}/tcp-fast.jsonl", f"{tmp}/tcp-slow.jsonl"
        check(bench(ccscope, fast, ["--transport", "tcp"], prefix=pre).returncode == 0, "tcp run")
        p = run([*pre, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "400mbit",
                 "burst", "256kb", "limit", "16mb"])  # a deep queue: slow, never dropping
        check(p.returncode == 0, f"tbf on the namespace loopback {p.stderr}")
        check(bench(ccscope, slow, ["--transport", "tcp"], prefix=pre).returncode == 0,
              "throttled tcp run")
        p = run([ccscope, "report", slow, "--baseline", fast, "--junit", f"{tmp}/tbf.xml"])
        failed = set(failed_cases(f"{tmp}/tbf.xml"))
        large = {row_name(r) for r in results(slow) if r["bytes"] >= 128 * 1024}
        check(p.returncode == 1, f"throttled run exits 1 (got {p.returncode})")
        check(large <= failed, f"every row >= 128K regressed (missing {sorted(large - failed)})")
        print(f"info: throttled rows that regressed: {len(failed)} of {len(results(slow))}:")
        for name in sorted(failed, key=lambda n: int(n.split()[3][:-1])):
            print("      " + name)
    finally:
        run(["ip", "netns", "del", ns])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccscope", required=True)
    ap.add_argument("--netns-throttle", action="store_true")
    args = ap.parse_args()
    if not shutil.which("xmllint"):
        print("SKIP: xmllint not found (apt-get install libxml2-utils)")
        return 77
    tmp = tempfile.mkdtemp(prefix="ccscope-report-")
    try:
        if args.netns_throttle:
            netns_throttle(args.ccscope, tmp)
        else:
            a = f"{tmp}/a.jsonl"
            p = bench(args.ccscope, a)
            check(p.returncode == 0, f"bench run (exit {p.returncode}) {p.stderr[-500:]}")
            basic_formats(args.ccscope, tmp, a)
            baseline_checks(args.ccscope, tmp, a)
            one_wrong_row(args.ccscope, tmp, a)
            wrong_results(args.ccscope, tmp)
            bad_input(args.ccscope, tmp, a)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
