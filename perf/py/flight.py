"""Summary of perf/compare.sh flight: per algorithm and size, the median p50 with the flight
recorder on and off, and the median over pairs of on/off. Usage: flight.py DIR
File names: <on|off>.<small|large>.<run>.jsonl"""
import collections
import sys

from perfdata import median, results, runs


def main():
    d = collections.defaultdict(dict)  # (algo, bytes) -> {(mode, run): (mean, p50)}
    for f, (mode, _, run, *_) in runs(sys.argv[1]):
        for r in results(f):
            d[(r["algorithm"], r["bytes"])][(mode, run)] = (r["time_us"], r["lat_us"]["p50"])
    print(f"{'algorithm':>18} {'size':>9} {'on p50':>8} {'off p50':>8} | median of per-pair "
          f"on/off: {'mean':>6} {'p50':>6}  (pairs)")
    for (algo, b), v in sorted(d.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        pairs = [(v[("on", r)], v[("off", r)]) for r in sorted({run for _, run in v})
                 if ("on", r) in v and ("off", r) in v]
        if not pairs:
            continue
        mean_ratio = median(on[0] / off[0] for on, off in pairs)
        p50_ratio = median(on[1] / off[1] for on, off in pairs)
        on_p50 = median(on[1] for on, _ in pairs)
        off_p50 = median(off[1] for _, off in pairs)
        print(f"{algo:>18} {b:>9} {on_p50:8.2f} {off_p50:8.2f} | {'':>27}{mean_ratio:6.3f} "
              f"{p50_ratio:6.3f}  ({len(pairs)})")


if __name__ == "__main__":
    main()
