#!/usr/bin/python3
"""Summarises bench/compare_pages.sh: median out-of-place busbw per (collective, library, pages,
ranks, size) over the runs; huge/base per library, and ours/Open MPI on each kind of page.
Usage: pages_summary.py DIR"""
import collections
import json
import pathlib
import statistics
import sys

from compare_summary import human


def load(directory):
    # file name: <collective>.<ours|mpi|memcpy>.<on|off>.np<N>.run<K>.jsonl
    data = collections.defaultdict(list)
    for f in sorted(pathlib.Path(directory).glob("*.jsonl")):
        coll, lib, pages, np_part = f.name.split(".")[:4]
        for line in f.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("type") == "result" and not rec.get("in_place"):
                data[(coll, lib, pages, int(np_part[2:]), rec["bytes"])].append(rec["busbw_gbps"])
    return {k: statistics.median(v) for k, v in data.items()}


def main():
    med = load(sys.argv[1])
    ratio = lambda a, b: f"{a / b:6.2f}" if a and b else "     -"
    val = lambda x: f"{x:7.2f}" if x else "      -"
    for coll in sorted({k[0] for k in med}):
        for n in sorted({k[3] for k in med if k[0] == coll}):
            print(f"\n## {coll}, np={n}: busbw GB/s (median of runs)")
            print(f"{'size':>7} {'ours huge':>9} {'base':>7} {'h/b':>6} | {'MPI huge':>8} {'base':>7} "
                  f"{'h/b':>6} | {'ours/MPI huge':>13} {'base':>6}")
            for s in sorted({k[4] for k in med if k[0] == coll and k[3] == n}):
                g = lambda lib, p: med.get((coll, lib, p, n, s))
                if coll == "memcpy":
                    print(f"{human(s):>7} {val(g('memcpy', 'on')):>9} {val(g('memcpy', 'off'))} "
                          f"{ratio(g('memcpy', 'on'), g('memcpy', 'off'))}")
                    continue
                oh, ob, mh, mb = g("ours", "on"), g("ours", "off"), g("mpi", "on"), g("mpi", "off")
                print(f"{human(s):>7} {val(oh):>9} {val(ob)} {ratio(oh, ob)} | {val(mh):>8} {val(mb)} "
                      f"{ratio(mh, mb)} | {ratio(oh, mh):>13} {ratio(ob, mb)}")


if __name__ == "__main__":
    main()
