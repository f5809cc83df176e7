"""Summary of perf/compare.sh builds: per transport, collective, np and size, each build's median
back-to-back time (time_us) over the runs, NEW/OLD, the paired ratio (NEW/OLD within each run,
then the median), each build's spread ((max - min) / median over the runs), and a flag where
NEW's median is above OLD's by more than the larger spread (only where each build has 2 runs or
more: one run has no spread); then one line with the count.
Usage: builds.py DIR
File names: <old|new>.<transport>.<collective>.np<N>.run<R>.seg<K>.jsonl; the first row of a
file with K > 0 is a warm-up size (the previous line's last) and is dropped."""
import collections
import sys

from perfdata import human, median, num, ranks, ratios_text, results, runs, trial_ratios


def load(directory):
    """{(transport, collective, np, bytes, side): {run: time_us}} from a result directory."""
    times = collections.defaultdict(dict)
    for f, (side, transport, coll, np_part, run_part, seg_part, *_) in runs(directory):
        rows = sorted(results(f), key=lambda r: r["bytes"])
        if int(seg_part[3:]) > 0:
            rows = rows[1:]
        for r in rows:
            key = (transport, coll, ranks(np_part), r["bytes"], side)
            times[key][int(run_part[3:])] = r["time_us"]
    return times


def spread(values):
    """(max - min) / median of a build's runs at one point (0 for a single run)."""
    m = median(values)
    return (max(values) - min(values)) / m if m else 0.0


def compare(times, point):
    """(line, slower beyond spread?) for one point, or None where a build has no run of it."""
    old, new = times.get(point + ("old",)), times.get(point + ("new",))
    if not old or not new:
        return None
    mo, mn = median(old.values()), median(new.values())
    so, sn = spread(list(old.values())), spread(list(new.values()))
    slower = len(old) > 1 and len(new) > 1 and mo > 0 and mn / mo - 1 > max(so, sn)
    transport, coll, n, size = point
    paired = ratios_text(trial_ratios(new, old)).split(";")[0]
    line = (f"{transport:4} {coll:10} {n:<3} {human(size):>7} {num(mo, 11)} {num(mn, 11)} "
            f"{(mn / mo if mo else 0):7.3f} {paired:>7} {so * 100:6.1f}% {sn * 100:6.1f}% "
            f"{len(old)}/{len(new)}{'  SLOWER beyond spread' if slower else ''}")
    return line, slower


def main():
    times = load(sys.argv[1])
    points = sorted({k[:4] for k in times})
    print("time_us: back-to-back mean per operation, median over runs; spread: (max-min)/median "
          "of a build's runs; slower beyond spread: new/old - 1 > the larger spread")
    print(f"{'tr':4} {'collective':10} {'np':3} {'size':>7} {'old us':>11} {'new us':>11} "
          f"{'new/old':>7} {'paired':>7} {'spr old':>7} {'spr new':>7} runs")
    compared, flagged, missing = 0, [], []
    for point in points:
        result = compare(times, point)
        if result is None:
            missing.append(point)
            continue
        line, slower = result
        print(line)
        compared += 1
        if slower:
            transport, coll, n, size = point
            flagged.append(f"{transport} {coll} np {n} {human(size)}")
    for transport, coll, n, size in missing:
        print(f"missing in one build: {transport} {coll} np {n} {human(size)}")
    single = sum(1 for p in points
                 if min(len(times.get(p + (side,), {})) for side in ("old", "new")) == 1)
    note = f" ({single} with a single run of a build: not flagged)" if single else ""
    print(f"{compared} points compared, {len(flagged)} slower beyond spread{note}"
          + (": " + ", ".join(flagged) if flagged else ""))


if __name__ == "__main__":
    main()
