"""Summary of perf/compare.sh bind: per point and binding, the best algorithm's time, how far each
algorithm's time moves between processes, how often the fastest algorithm changes between them,
and auto's time over the best's in the same process. Usage: bind.py DIR
File names: <collective>.np<N>.<none|core>.t<trial>.jsonl"""
import collections
import sys

from perfdata import median, ranks, results, runs

FIRST_COUNTED = 64 << 10  # the sweep starts at 16 KiB: a process's first size is cold
AUTO_SLACK = 1.15  # auto/best above this counts against auto


def load(directory):
    t = collections.defaultdict(dict)  # (coll, np, bytes, bind, algo) -> {trial: us}
    for f, (c, np_part, bind, trial, *_) in runs(directory):
        for r in results(f):
            if r["bytes"] < FIRST_COUNTED:
                continue
            algo = "auto" if r.get("requested_algorithm") == "auto" else r["algorithm"]
            t[(c, ranks(np_part), r["bytes"], bind, algo)][int(trial[1:])] = r["time_us"]
    return t


def point(t, key):
    """(best median us, median spread, processes whose fastest differs, trials, auto/best)."""
    algos = {k[4]: v for k, v in t.items() if k[:4] == key and k[4] != "auto"}
    med = {a: median(v.values()) for a, v in algos.items()}
    best = min(med, key=med.get)
    spread = median(max(v.values()) / min(v.values()) for v in algos.values())
    trials = set.intersection(*(set(v) for v in algos.values()))
    winners = [min(algos, key=lambda a: algos[a][x]) for x in trials]
    usual = collections.Counter(winners).most_common(1)[0][0] if winners else None
    flips = sum(1 for w in winners if w != usual)
    auto = t.get(key + ("auto",), {})
    ratios = [auto[x] / algos[best][x] for x in auto if x in algos[best]]
    return med[best], spread, flips, len(winners), median(ratios) if ratios else float("nan")


def main():
    t = load(sys.argv[1])
    print(f"{'collective':13} {'np':>2} {'size':>5}  " + "   ".join(
        f"{b + ': best us, spread, flips, auto/best':>40}" for b in ("none", "core")))
    totals = collections.defaultdict(list)
    for c, n, b in sorted({k[:3] for k in t}):
        cells = []
        for bind in ("none", "core"):
            if not any(k[:4] == (c, n, b, bind) for k in t):
                cells.append("-")
                continue
            best, spread, flips, trials, auto = point(t, (c, n, b, bind))
            totals[bind].append((best, spread, flips, auto))
            cells.append(f"{best:12.1f} {spread:7.2f} {flips:3d}/{trials} {auto:9.2f}")
        print(f"{c:13} {n:>2} {b // 1024:>4}K  " + "   ".join(f"{x:>40}" for x in cells))
    for bind, v in totals.items():
        print(f"{bind}: median spread {median(x[1] for x in v):.2f}, processes whose fastest "
              f"algorithm differs from the usual {sum(x[2] for x in v)}, auto/best > "
              f"{AUTO_SLACK} at {sum(1 for x in v if x[3] > AUTO_SLACK)} of {len(v)} points")


if __name__ == "__main__":
    main()
