"""Summary of perf/compare.sh mpi: median busbw per (variant, ranks, size) over the runs, and the
ratios the goals are stated in. Usage: mpi.py DIR
File names: <variant>.np<N>.run<K>.jsonl, variant shm, tcp, vader, ompitcp or memcpy."""
import collections
import sys

from perfdata import human, median, num, ranks, ratio, results, runs

GOALS_FROM = 1 << 20  # ours at least Open MPI's busbw from this size


def load(directory):
    data = collections.defaultdict(list)
    for f, (variant, np_part, *_) in runs(directory):
        for r in results(f):
            data[(variant, ranks(np_part), r["bytes"])].append(r["busbw_gbps"])
    return {k: median(v) for k, v in data.items()}


def table(med, n, sizes):
    """One rank count's table; returns whether every goal was met."""
    ok = True
    print(f"\n## np={n}: out-of-place busbw, GB/s (median of runs)")
    print(f"{'size':>8} {'ours-shm':>9} {'ompi-vader':>10} {'ratio':>6} | {'ours-tcp':>9} "
          f"{'ompi-tcp':>9} {'ratio':>6} | {'memcpy':>7} {'shm/memcpy':>10}")
    for s in sizes:
        shm, vader, tcp, otcp = (med.get((v, n, s)) for v in ("shm", "vader", "tcp", "ompitcp"))
        mc = med.get(("memcpy", 1, s))
        print(f"{human(s):>8} {num(shm, 9)} {num(vader, 10)} {ratio(shm, vader)} | "
              f"{num(tcp, 9)} {num(otcp, 9)} {ratio(tcp, otcp)} | {num(mc, 7)} "
              f"{ratio(shm, mc):>10}")
        if s < GOALS_FROM:
            continue
        for a, b, name in ((shm, vader, "shm vs vader"), (tcp, otcp, "tcp vs ompi-tcp")):
            if a and b and a < b:
                ok = False
                print(f"   goal missed at {human(s)}: {name} = {a / b:.2f}x")
    best = max((med.get(("shm", n, s), 0) for s in sizes), default=0)
    last = med.get(("shm", n, sizes[-1]))
    if last and best:
        print(f"   cliff check: busbw at {human(sizes[-1])} = {last / best:.2f}x of our best "
              f"({best:.2f})")
    return ok


def main():
    med = load(sys.argv[1])
    ours = [k for k in med if k[0] != "memcpy"]
    sizes = sorted({k[2] for k in ours})
    ok = all([table(med, n, sizes) for n in sorted({k[1] for k in ours})])
    print("\nall goals met" if ok else "\nsome goals missed (see above)")


if __name__ == "__main__":
    main()
