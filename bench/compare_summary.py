#!/usr/bin/python3
"""Summarises bench/compare_mpi.sh runs: median busbw per (variant, ranks, size) over the runs,
and the ratios the goals are stated in. Usage: compare_summary.py DIR"""
import collections
import json
import pathlib
import statistics
import sys


def load(directory):
    # file name: <variant>.np<N>.run<K>.jsonl
    data = collections.defaultdict(list)
    for f in sorted(pathlib.Path(directory).glob("*.jsonl")):
        variant, np_part, _ = f.name.split(".")[:3]
        ranks = int(np_part[2:])
        for line in f.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("type") != "result" or rec.get("in_place"):
                continue
            data[(variant, ranks, rec["bytes"])].append(rec["busbw_gbps"])
    return {k: statistics.median(v) for k, v in data.items()}


def human(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b // size}{unit}"
    return f"{b}B"


def main():
    med = load(sys.argv[1])
    ranks = sorted({k[1] for k in med if k[0] != "memcpy"})
    sizes = sorted({k[2] for k in med if k[0] != "memcpy"})
    ok = True
    for n in ranks:
        print(f"\n## np={n}: out-of-place busbw, GB/s (median of runs)")
        print(f"{'size':>8} {'ours-shm':>9} {'ompi-vader':>10} {'ratio':>6} | {'ours-tcp':>9} "
              f"{'ompi-tcp':>9} {'ratio':>6} | {'memcpy':>7} {'shm/memcpy':>10}")
        best = max((med.get(("shm", n, s), 0) for s in sizes), default=0)
        for s in sizes:
            row = [med.get((v, n, s)) for v in ("shm", "vader", "tcp", "ompitcp")]
            mc = med.get(("memcpy", 1, s))
            def r(a, b):
                return f"{a / b:6.2f}" if a and b else "     -"
            def v(x, w):
                return f"{x:{w}.2f}" if x is not None else " " * (w - 1) + "-"
            print(f"{human(s):>8} {v(row[0], 9)} {v(row[1], 10)} {r(row[0], row[1])} | "
                  f"{v(row[2], 9)} {v(row[3], 9)} {r(row[2], row[3])} | {v(mc, 7)} {r(row[0], mc):>10}")
            if s >= (1 << 20):
                for a, b, name in ((row[0], row[1], "shm vs vader"), (row[2], row[3], "tcp vs ompi-tcp")):
                    if a and b and a < b:
                        ok = False
                        print(f"   goal missed at {human(s)}: {name} = {a / b:.2f}x")
        last = med.get(("shm", n, sizes[-1]))
        if last and best:
            print(f"   cliff check: busbw at {human(sizes[-1])} = {last / best:.2f}x of our best ({best:.2f})")
    print("\nall goals met" if ok else "\nsome goals missed (see above)")


if __name__ == "__main__":
    main()
