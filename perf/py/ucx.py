"""Summary of perf/compare.sh ucx: median busbw per (variant, ranks, size), and UCX over our own
transport per size as the median of per-run ratios with every run's ratio. Usage: ucx.py DIR
File names: <variant>.np<N>.run<K>.jsonl, variant shm, ucxsm, ucxsmnone, tcp, ucxtcp, ucxtcpnone,
ompiucxsm, ompiucxtcp (ucx...none: --ucx-errors none). The goal is judged on each UCX variant;
the last column, our collective over UCX (peer mode) over Open MPI's over the same UCX, is
context."""
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
    for ours, ompi in (("shm", "ompiucxsm"), ("tcp", "ompiucxtcp")):
        tls = "sm" if ours == "shm" else "tcp"
        ucxs = [v for v in (f"ucx{tls}", f"ucx{tls}none")
                if any(k[0] == v and k[1] == n for k in data)]
        print(f"{'size':>8} {ours:>8} " + " ".join(f"{u:>10}" for u in ucxs) + f" {ompi:>10}  " +
              "  ".join(f"{u}/{ours}" for u in ucxs) + f"  ucx{tls}/{ompi}")
        for s in sizes:
            a, c = (data.get((v, n, s), {}) for v in (ours, ompi))
            cols = [data.get((u, n, s), {}) for u in ucxs]
            rs = [trial_ratios(b, a) for b in cols]
            print(f"{human(s):>8} {num(median(list(a.values())) if a else 0, 8)} " +
                  " ".join(num(median(list(b.values())) if b else 0, 10) for b in cols) +
                  f" {num(median(list(c.values())) if c else 0, 10)}  " +
                  "  ".join(ratios_text(r) for r in rs) + "  " +
                  ratios_text(trial_ratios(data.get((f"ucx{tls}", n, s), {}), c)))
            for u, r in zip(ucxs, rs):
                if s >= GOALS_FROM and r and median(r) < GOAL:
                    ok = False
                    print(f"   goal missed at {human(s)}: {u}/{ours} = {median(r):.2f}x < {GOAL}")
    return ok


def main():
    data = load(sys.argv[1])
    if not any(k[0].startswith("ucx") for k in data):
        sys.exit(f"ucx.py: no UCX results in {sys.argv[1]}: nothing to judge")
    sizes = sorted({k[2] for k in data})
    ok = all([table(data, n, sizes) for n in sorted({k[1] for k in data})])
    print("\nall goals met" if ok else "\nsome goals missed (see above)")


if __name__ == "__main__":
    main()
