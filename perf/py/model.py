"""Summary of perf/compare.sh model: per transport, algorithm and size, the measured np 8 busbw
(median of runs), the model's prediction (fitted to that run's np 2 and 4), and predicted over
measured per run. Usage: model.py DIR MIN. Files: <transport>.np<N>.run<K>.jsonl (bench),
<transport>.pred.run<K>.jsonl (prediction records)."""
import collections
import sys

from perfdata import human, median, num, parse_size, ratios_text, records, results, runs

TOLERANCE = 0.25  # predicted within 25% of measured


def load(directory, n):
    """measured[(transport, algo, size)][run], predicted[...][run]: busbw."""
    measured, predicted = collections.defaultdict(dict), collections.defaultdict(dict)
    for f, fields in runs(directory):
        transport, kind, run = fields[0], fields[1], fields[2]
        if kind == f"np{n}":
            for r in results(f):
                measured[(transport, r["algorithm"], r["bytes"])][run] = r["busbw_gbps"]
        elif kind == "pred":
            for r in records(f):
                if r.get("type") == "prediction" and r["ranks"] == n:
                    predicted[(transport, r["algorithm"], r["bytes"])][run] = r["busbw_gbps"]
    return measured, predicted


def main():
    directory, low = sys.argv[1], parse_size(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
    measured, predicted = load(directory, 8)
    ok = True
    print(f"\n## np 8: predicted (fit of np 2 and 4) vs measured busbw, GB/s; ratio = median of "
          f"per-run predicted/measured; every run's; goal within {TOLERANCE:.0%}")
    print(f"{'transport':>9} {'algo':>5} {'size':>7} {'measured':>9} {'predicted':>9}  ratio")
    for key in sorted(k for k in predicted if k[2] >= low):
        m, p = measured.get(key, {}), predicted[key]
        rs = [p[r] / m[r] for r in sorted(p) if r in m and m[r]]
        good = bool(rs) and abs(median(rs) - 1) <= TOLERANCE
        ok = ok and good
        print(f"{key[0]:>9} {key[1]:>5} {human(key[2]):>7} "
              f"{num(median(list(m.values())) if m else 0, 9)} {num(median(list(p.values())), 9)}"
              f"  {ratios_text(rs)}{'' if good else '  MISSES'}")
    print(f"\ngoal (every size from {human(low)} within {TOLERANCE:.0%}): "
          f"{'met' if ok else 'missed'}")


if __name__ == "__main__":
    main()
