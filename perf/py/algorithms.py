"""Summary of perf/compare.sh algorithms: medians over runs per (collective, ranks, size,
algorithm), and the goals checked against them (docs/performance.md, "Goals met and missed").
Auto against the best algorithm is paired: per run, auto's row over the best algorithm's row of
the same process, then the median of those ratios. busbw against Open MPI is the ratio of the
medians (the goal), with the same pairing shown next to it (ours and Open MPI's run k ran back to
back). Usage: algorithms.py DIR

File names: <tag>.<ours|mpi>.np<N>.run<K>[-<first size>].jsonl, tag a collective or
<collective>-lat. Rows below the file's first size (its warm-up row) are dropped."""
import collections
import pathlib
import re
import sys

from perfdata import human, is_auto, median, parse_size, ranks, results, runs

AUTO_SLACK = 1.15  # auto may be at most 15% slower than the best algorithm
BUSBW_GOAL_FROM = {"alltoall": 64 << 10, "allgather": 1 << 20, "reducescatter": 1 << 20}
STALL_TIMES_P50 = 4  # an iteration this many times its row's p50 or more ...
STALL_FROM_US = 10000  # ... and at least this long is a stall (see stall_note)
MEAN_OVER_P50 = 1.3  # a row whose back-to-back mean is this many times its p50 had stalls there
HIST_SHOWN = 0.02  # latency buckets with this share of the iterations or more are printed


class Data:
    """Every row of a result directory, keyed (tag, np, bytes, algorithm); algorithm "auto" for
    --algo auto's rows, "mpi" for Open MPI's."""

    def __init__(self):
        self.rows = collections.defaultdict(list)  # key -> [(time, busbw, p50)]
        self.by_run = collections.defaultdict(dict)  # key -> {run: time}
        self.calib = []  # (seconds auto's calibration took, np)
        self.pick_votes = collections.defaultdict(collections.Counter)  # (tag, np, bytes) -> algo
        self.pick_by_run = collections.defaultdict(dict)  # (tag, np, bytes) -> {run: algorithm}
        self.hists = collections.defaultdict(collections.Counter)  # key -> bucket -> iterations
        # key -> [stalled iterations, iterations, rows whose back-to-back mean is MEAN_OVER_P50
        # times their p50 or more, rows]
        self.stalls = collections.defaultdict(lambda: [0, 0, 0, 0])

    def add(self, tag, variant, n, run, r):
        algo = "mpi" if variant == "mpi" else "auto" if is_auto(r) else r["algorithm"]
        point, p50 = (tag, n, r["bytes"]), r["lat_us"]["p50"]
        m = re.search(r"calibrated in ([0-9.]+) s", r.get("note", ""))
        if m:
            self.calib.append((float(m.group(1)), n))
        if algo == "auto":
            self.pick_votes[point][r["algorithm"]] += 1
            self.pick_by_run[point][run] = r["algorithm"]
        key = point + (algo,)
        self.rows[key].append((r["time_us"], r["busbw_gbps"], p50))
        self.by_run[key][run] = r["time_us"]
        stall = self.stalls[key]
        for lower, count in r["lat_us"].get("hist", []):
            self.hists[key][lower] += count
            stall[0] += count if lower >= max(STALL_TIMES_P50 * p50, STALL_FROM_US) else 0
            stall[1] += count
        stall[2] += r["time_us"] >= MEAN_OVER_P50 * p50
        stall[3] += 1

    def finish(self):
        self.med = {k: tuple(median(x[i] for x in v) for i in range(3))
                    for k, v in self.rows.items()}
        self.picks = {k: v.most_common(1)[0][0] for k, v in self.pick_votes.items()}
        return self


def load(directory):
    data = Data()
    for f, (tag, variant, np_part, run_part, *_) in runs(directory):
        run, _, first = run_part.partition("-")
        first = parse_size(first) if first else 0
        for r in results(f):
            if r["bytes"] >= first:
                data.add(tag, variant, ranks(np_part), run, r)
    return data.finish()


def stall_note(stalls, point, algos):
    """Where a goal is missed: of each side's timed iterations after a barrier, how many stalled
    (STALL_TIMES_P50 times their row's p50 or more, and STALL_FROM_US at least), and of its rows,
    how many had a back-to-back mean MEAN_OVER_P50 times their p50 or more. On a shared VM, both
    libraries' iterations stall for tens of ms now and then; one such stall says nothing about
    the algorithm, yet two of them in a back-to-back loop can double a row's time."""
    cells = []
    for a in algos:
        stalled, total, slow_rows, rows = stalls.get(point + (a,), (0, 0, 0, 0))
        if total:
            cells.append(f"{'Open MPI' if a == 'mpi' else a} {stalled} of {total} iterations, "
                         f"{slow_rows} of {rows} rows")
    return f"; stalls: {', '.join(cells)}" if cells else ""


def steal_share(directory):
    """The host's steal time over the invocation, from the /proc/stat lines the run saved."""
    path = pathlib.Path(directory) / "proc-stat-cpu.txt"
    if not path.exists():
        return None
    lines = [list(map(int, x.split()[1:])) for x in path.read_text().splitlines()
             if x.startswith("cpu ")]
    if len(lines) < 2:
        return None
    delta = [b - a for a, b in zip(lines[0], lines[-1])]
    total = sum(delta[:8])  # user nice system idle iowait irq softirq steal
    return delta[7] / total if total else None


def paired(by_run, point, algo, best):
    """Median over runs of algo's time / best's time in the same run (the same process, rows
    seconds apart): a process's speed, which differs up to 3x from one run to the next on a
    shared VM, cancels out of each ratio. None when no run has both."""
    a, b = by_run.get(point + (algo,), {}), by_run.get(point + (best,), {})
    ratios = [a[r] / b[r] for r in a if r in b and b[r] > 0]
    return median(ratios) if ratios else None


def noise_floor(d):
    """Auto's rows against the picked algorithm's own rows of the same run: the same schedule
    measured twice in one process, seconds apart. What separates them is the measurement's own
    noise, the floor under auto/best."""
    ratios, points = [], []
    for (tag, n, size), picked in d.pick_by_run.items():
        auto = d.by_run.get((tag, n, size, "auto"), {})
        same = [auto[r] / d.by_run[(tag, n, size, algo)][r] for r, algo in picked.items()
                if r in auto and r in d.by_run.get((tag, n, size, algo), {})]
        ratios += same
        if same and median(same) > AUTO_SLACK:
            points.append(f"{tag} np {n} {human(size)} {median(same):.2f}")
    if not ratios:
        return
    over = sum(x > AUTO_SLACK for x in ratios)
    under = sum(x < 1 / AUTO_SLACK for x in ratios)
    print(f"\nnoise floor: auto's rows over the rows of the algorithm it picked, same run (the "
          f"same schedule twice): median {median(ratios):.3f} over {len(ratios)} runs; "
          f"{over} ({over / len(ratios):.0%}) above {AUTO_SLACK}, {under} "
          f"({under / len(ratios):.0%}) below 1/{AUTO_SLACK}; points whose median over runs is "
          f"above {AUTO_SLACK}: {', '.join(points) if points else 'none'}")


def latency_table(d, nps, missed):
    print("## 8 B allreduce latency, p50 us (median of runs): each iteration timed after a "
          "barrier,")
    print("## the slowest rank's time; mean: back-to-back iterations, the time per operation")
    print(f"{'np':>3} {'auto':>8} {'best ours':>22} {'Open MPI':>9} {'auto/MPI':>9}"
          f" {'mean auto':>10} {'mean MPI':>9} {'auto/MPI':>9}")
    for n in nps:
        cands = {k[3]: v for k, v in d.med.items() if k[:3] == ("allreduce-lat", n, 8)}
        if "auto" not in cands or "mpi" not in cands:
            continue
        auto, mpi = cands["auto"], cands["mpi"]
        ours = {a: v for a, v in cands.items() if a not in ("auto", "mpi")}
        best = min(ours, key=lambda a: ours[a][2])
        ratio = auto[2] / mpi[2]
        print(f"{n:>3} {auto[2]:8.2f} {best + f' {ours[best][2]:.2f}':>22} {mpi[2]:9.2f} "
              f"{ratio:9.2f} {auto[0]:10.2f} {mpi[0]:9.2f} {auto[0] / mpi[0]:9.2f}")
        if ratio > 1.0:
            missed.append(f"8 B allreduce p50 at np {n}: {ratio:.2f}x Open MPI's")


def latency_hists(d, nps):
    """Where the p50 falls depends on how the iterations split between modes (with more ranks
    than cores, one mode per context switch an iteration waits for): the histograms of all runs
    together, buckets a quarter octave wide, those with HIST_SHOWN of the iterations or more."""
    for n in nps:
        for side in ("auto", "mpi"):
            h = d.hists.get(("allreduce-lat", n, 8, side))
            if not h:
                continue
            total = sum(h.values())
            cells = [f"{lower:g}: {count / total:.0%}" for lower, count in sorted(h.items())
                     if count / total >= HIST_SHOWN]
            print(f"    np {n} {'Open MPI' if side == 'mpi' else 'auto'} iterations by bucket "
                  f"(from us): " + ", ".join(cells))


def busbw_header(tag, n, algos):
    print(f"\n## {tag}, np={n}: busbw GB/s (median of runs); auto/best is auto's time over "
          f"the best algorithm's in the same run (median of runs), medians the ratio of "
          f"the two medians, pick/best as auto/best for the algorithm auto picked, timed "
          f"in its own rows; auto/MPI the ratio of median busbw, paired the median "
          f"over runs of the ratio within a run (ours and Open MPI's back to back)")
    print(f"{'size':>7} " + " ".join(f"{a[:12]:>12}" for a in algos) +
          f" {'auto':>8} {'Open MPI':>9} {'auto/best':>9} {'medians':>8} {'pick/best':>9}"
          f" {'auto/MPI':>8} {'paired':>7}")


def col(x, width):
    return f" {x:{width}.2f}" if x else f" {'-':>{width}}"


def auto_cells(d, point, ours, auto, missed):
    """auto/best (paired), the ratio of the medians, and pick/best; a miss where auto/best is
    above AUTO_SLACK."""
    if not (auto and ours):
        return f" {'-':>9} {'-':>8} {'-':>9}"
    best = min(ours, key=lambda a: ours[a][0])
    slack = paired(d.by_run, point, "auto", best)
    pick = d.picks.get(point)
    pick_slack = paired(d.by_run, point, pick, best) if pick in ours else None
    if slack and slack > AUTO_SLACK:
        tag, n, s = point
        missed.append(f"{tag} np {n} {human(s)}: auto {slack:.2f}x the time of {best} (auto "
                      f"picked {pick}: {pick_slack if pick_slack else float('nan'):.2f}x)"
                      + stall_note(d.stalls, point, ("auto", best, "mpi")))
    return col(slack, 9) + col(auto[0] / ours[best][0], 8) + col(pick_slack, 9)


def mpi_cells(d, point, auto, mpi, missed):
    """auto/MPI busbw (the goal, on the medians) and the paired ratio within a run."""
    tag, n, s = point
    if not (auto and mpi and mpi[1] > 0) or "-" in tag:
        return ""
    r = auto[1] / mpi[1]
    pair_r = paired(d.by_run, point, "mpi", "auto")  # Open MPI's time over auto's
    if tag in BUSBW_GOAL_FROM and s >= BUSBW_GOAL_FROM[tag] and r < 1.0:
        missed.append(f"{tag} np {n} {human(s)}: busbw {r:.2f}x Open MPI's"
                      + stall_note(d.stalls, point, ("auto", "mpi")))
    return f" {r:8.2f}" + (f" {pair_r:7.2f}" if pair_r else f" {'-':>7}")


def busbw_table(d, tag, n, missed):
    keys = [k for k in d.med if k[:2] == (tag, n)]
    if not keys:
        return
    algos = sorted({k[3] for k in keys} - {"auto", "mpi"})
    busbw_header(tag, n, algos)
    for s in sorted({k[2] for k in keys}):
        point = (tag, n, s)
        ours = {a: d.med[point + (a,)] for a in algos if point + (a,) in d.med}
        auto, mpi = d.med.get(point + ("auto",)), d.med.get(point + ("mpi",))
        cells = " ".join(f"{ours[a][1]:12.3f}" if a in ours else f"{'-':>12}" for a in algos)
        line = f"{human(s):>7} {cells}"
        line += f" {auto[1]:8.3f}" if auto else f" {'-':>8}"
        line += f" {mpi[1]:9.3f}" if mpi else f" {'-':>9}"
        line += auto_cells(d, point, ours, auto, missed)
        print(line + mpi_cells(d, point, auto, mpi, missed))


def footer(d, directory, missed):
    if d.calib:
        worst = max(d.calib)
        print(f"\ncalibration of --algo auto: median {median(c for c, _ in d.calib):.2f} s, "
              f"max {worst[0]:.2f} s (np {worst[1]})")
        if worst[0] >= 2.0:
            missed.append(f"calibration took {worst[0]:.2f} s at np {worst[1]}")
    steal = steal_share(directory)
    if steal is not None:
        print(f"\nsteal time (the host running something else on this VM's vCPUs) during the "
              f"invocation: {steal:.1%} of all CPU time")
    print("\nall goals met" if not missed else "\ngoals missed:\n  " + "\n  ".join(missed))


def main():
    d = load(sys.argv[1])
    missed = []
    nps = sorted({k[1] for k in d.med})
    latency_table(d, nps, missed)
    latency_hists(d, nps)
    for tag in sorted({k[0] for k in d.med}):
        for n in nps:
            busbw_table(d, tag, n, missed)
    noise_floor(d)
    footer(d, sys.argv[1], missed)


if __name__ == "__main__":
    main()
