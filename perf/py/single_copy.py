"""Summary of perf/compare.sh single-copy: per point, the fastest algorithm at the reference
threshold, its time there, and per lower threshold its time over the reference's in the same
trial (median of trials). Usage: single_copy.py DIR REFERENCE [OTHER...]
File names: <collective>.np<N>.sc<threshold>.t<trial>.jsonl"""
import collections
import sys

from perfdata import median, ranks, results, runs

FIRST_SIZE = 2048  # the sweep's first size is cold, not counted


def load(directory):
    t = collections.defaultdict(dict)  # (coll, np, bytes, algo, threshold) -> {trial: us}
    for f, (c, np_part, sc, trial, *_) in runs(directory):
        for r in results(f):
            if r["bytes"] > FIRST_SIZE:
                key = (c, ranks(np_part), r["bytes"], r["algorithm"], int(sc[2:]))
                t[key][int(trial[1:])] = r["time_us"]
    return t


def row(t, point, ref, others):
    algos = {k[3] for k in t if k[:3] == point}
    med = {a: median(t[point + (a, ref)].values()) for a in algos if t.get(point + (a, ref))}
    if not med:
        return None
    best = min(med, key=med.get)
    cells = []
    for o in others:
        x, y = t[point + (best, ref)], t.get(point + (best, o), {})
        rs = [y[k] / x[k] for k in x if k in y]
        cells.append(f"{median(rs):7.2f}" if rs else f"{'-':>7}")
    c, n, b = point
    return f"{c:13} {n:>2} {b // 1024:>5}K {best:>18} {med[best]:8.1f} " + " ".join(cells)


def main():
    ref, others = int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
    t = load(sys.argv[1])
    print("fastest algorithm at the reference threshold; its time (us, median of trials) and, "
          "per lower threshold, its time there over the reference's in the same trial (median "
          "of trials)")
    print(f"{'collective':13} {'np':>2} {'size':>6} {'algorithm':>18} {ref:>8} " +
          " ".join(f"{o:>7}" for o in others))
    for point in sorted({k[:3] for k in t}):
        line = row(t, point, ref, others)
        if line:
            print(line)


if __name__ == "__main__":
    main()
