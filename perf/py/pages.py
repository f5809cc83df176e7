"""Summary of perf/compare.sh pages: median out-of-place busbw per (collective, library, pages,
ranks, size) over the runs; huge over base per library, and ours over Open MPI's on each kind of
page. Usage: pages.py DIR
File names: <collective>.<ours|mpi|memcpy>.<on|off>.np<N>.run<K>.jsonl"""
import collections
import sys

from perfdata import human, median, num, ranks, ratio, results, runs


def load(directory):
    data = collections.defaultdict(list)
    for f, (coll, lib, pages, np_part, *_) in runs(directory):
        for r in results(f):
            data[(coll, lib, pages, ranks(np_part), r["bytes"])].append(r["busbw_gbps"])
    return {k: median(v) for k, v in data.items()}


def row(med, coll, n, s):
    def g(lib, pages):
        return med.get((coll, lib, pages, n, s))

    if coll == "memcpy":
        on, off = g("memcpy", "on"), g("memcpy", "off")
        return f"{human(s):>7} {num(on, 9)} {num(off, 7)} {ratio(on, off)}"
    oh, ob, mh, mb = g("ours", "on"), g("ours", "off"), g("mpi", "on"), g("mpi", "off")
    return (f"{human(s):>7} {num(oh, 9)} {num(ob, 7)} {ratio(oh, ob)} | {num(mh, 8)} "
            f"{num(mb, 7)} {ratio(mh, mb)} | {ratio(oh, mh, 13)} {ratio(ob, mb)}")


def main():
    med = load(sys.argv[1])
    for coll in sorted({k[0] for k in med}):
        for n in sorted({k[3] for k in med if k[0] == coll}):
            print(f"\n## {coll}, np={n}: busbw GB/s (median of runs)")
            print(f"{'size':>7} {'ours huge':>9} {'base':>7} {'h/b':>6} | {'MPI huge':>8} "
                  f"{'base':>7} {'h/b':>6} | {'ours/MPI huge':>13} {'base':>6}")
            for s in sorted({k[4] for k in med if k[0] == coll and k[3] == n}):
                print(row(med, coll, n, s))


if __name__ == "__main__":
    main()
