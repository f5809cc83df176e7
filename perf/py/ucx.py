"""Summary of perf/compare.sh ucx: median busbw per (variant, ranks, size), and UCX over our own
transport per size as the median of per-run ratios with every run's ratio. Usage: ucx.py DIR
File names: <variant>.np<N>.run<K>.jsonl, variant shm, ucxsm, tcp, ucxtcp, ompiucxsm, ompiucxtcp."""
import collections
import sys

from perfdata import human, median, num, ranks, ratios_text, results, runs, trial_ratios

GOAL = 0.9          # UCX at least this share of our transport's busbw
GOALS_FROM = 1 << 20


def load(directory):
    """{(variant, np, size): {run: busbw}}."""
    data = collections.defaultdict(dict)
    for f, (variant, np_part, run, *_) in runs(directory):
        for r in results(f):
            data[(variant, ranks(np_part), r["bytes"])][run] = r["busbw_gbps"]
    return data


def table(data, n, sizes):
    ok = True
    print(f"\n## np={n}: out-of-place busbw, GB/s (median of runs); ratio = median of per-run "
          f"ratios; every run's")
    for ours, ucx, ompi in (("shm", "ucxsm", "ompiucxsm"), ("tcp", "ucxtcp", "ompiucxtcp")):
        print(f"{'size':>8} {ours:>8} {ucx:>8} {ompi:>10}  {ucx}/{ours}")
        for s in sizes:
            a, b, c = (data.get((v, n, s), {}) for v in (ours, ucx, ompi))
            r = trial_ratios(b, a)
            print(f"{human(s):>8} {num(median(list(a.values())) if a else 0, 8)} "
                  f"{num(median(list(b.values())) if b else 0, 8)} "
                  f"{num(median(list(c.values())) if c else 0, 10)}  {ratios_text(r)}")
            if s >= GOALS_FROM and r and median(r) < GOAL:
                ok = False
                print(f"   goal missed at {human(s)}: {ucx}/{ours} = {median(r):.2f}x < {GOAL}")
    return ok


def main():
    data = load(sys.argv[1])
    sizes = sorted({k[2] for k in data})
    ok = all([table(data, n, sizes) for n in sorted({k[1] for k in data})])
    print("\nall goals met" if ok else "\nsome goals missed (see above)")


if __name__ == "__main__":
    main()
