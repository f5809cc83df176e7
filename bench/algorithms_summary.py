#!/usr/bin/python3
"""Summarises bench/compare_algorithms.sh: medians over runs per (collective, ranks, size,
algorithm), and the goals of issue #3 checked against them. Auto against the best algorithm is
paired: per run, auto's row over the best algorithm's row of the same process, then the median
of those ratios. busbw against Open MPI is the ratio of the medians (the goal), with the same
pairing shown next to it (ours and Open MPI's run k ran back to back). Usage:
algorithms_summary.py DIR

File names: <tag>.<ours|mpi>.np<N>.run<K>[-<first size>].jsonl, tag = collective or <collective>-lat.
Rows below the file's first size (its warm-up row) are dropped. Rows whose requested_algorithm is
"auto" (or, in files from before that field, whose note starts with "auto picked") are
`--algo auto`'s."""
import collections
import json
import pathlib
import re
import statistics
import sys

AUTO_SLACK = 1.15  # auto may be at most 15% slower than the best algorithm
BUSBW_GOAL_FROM = {"alltoall": 64 << 10, "allgather": 1 << 20, "reducescatter": 1 << 20}
STALL_TIMES_P50 = 4  # an iteration this many times its row's p50 or more ...
STALL_FROM_US = 10000  # ... and at least this long is a stall (see stall_note)
MEAN_OVER_P50 = 1.3  # a row whose back-to-back mean is this many times its p50 had stalls there


def human(b):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b // size}{unit}"
    return f"{b}B"


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def load(directory):
    rows = collections.defaultdict(list)  # (tag, np, bytes, algo) -> [(time, busbw, p50)]
    by_run = collections.defaultdict(dict)  # (tag, np, bytes, algo) -> {run: time}
    calib = []
    pick_votes = collections.defaultdict(collections.Counter)  # (tag, np, bytes) -> algorithm
    hists = collections.defaultdict(collections.Counter)  # (tag, np, bytes, algo) -> bucket -> n
    pick_by_run = collections.defaultdict(dict)  # (tag, np, bytes) -> {run: algorithm}
    # (tag, np, bytes, algo) -> [stalled iterations, iterations, rows whose back-to-back mean is
    # MEAN_OVER_P50 times their p50 or more, rows]
    stalls = collections.defaultdict(lambda: [0, 0, 0, 0])
    for f in sorted(pathlib.Path(directory).glob("*.jsonl")):
        tag, variant, np_part, run_part = f.name.split(".")[:4]
        ranks = int(np_part[2:])
        first = parse_size(run_part.split("-")[1]) if "-" in run_part else 0
        run = run_part.split("-")[0]
        for line in f.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("type") != "result" or r.get("in_place") or r["bytes"] < first:
                continue
            note = r.get("note", "")
            auto = r.get("requested_algorithm") == "auto" or note.startswith("auto picked")
            algo = "auto" if auto else r["algorithm"]
            if variant == "mpi":
                algo = "mpi"
            m = re.search(r"calibrated in ([0-9.]+) s", note)
            if m:
                calib.append((float(m.group(1)), ranks))
            if algo == "auto":
                pick_votes[(tag, ranks, r["bytes"])][r["algorithm"]] += 1
                pick_by_run[(tag, ranks, r["bytes"])][run] = r["algorithm"]
            rows[(tag, ranks, r["bytes"], algo)].append(
                (r["time_us"], r["busbw_gbps"], r["lat_us"]["p50"]))
            by_run[(tag, ranks, r["bytes"], algo)][run] = r["time_us"]
            row = stalls[(tag, ranks, r["bytes"], algo)]
            for lower, count in r["lat_us"].get("hist", []):
                hists[(tag, ranks, r["bytes"], algo)][lower] += count
                row[0] += count if lower >= max(STALL_TIMES_P50 * r["lat_us"]["p50"],
                                                STALL_FROM_US) else 0
                row[1] += count
            row[2] += r["time_us"] >= MEAN_OVER_P50 * r["lat_us"]["p50"]
            row[3] += 1
    med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in rows.items()}
    picks = {k: v.most_common(1)[0][0] for k, v in pick_votes.items()}
    return med, calib, picks, by_run, hists, pick_by_run, stalls


def stall_note(stalls, point, algos):
    """Where a goal is missed: of each side's timed iterations after a barrier, how many stalled
    (STALL_TIMES_P50 times their row's p50 or more, and STALL_FROM_US at least), and of its rows,
    how many had a back-to-back mean MEAN_OVER_P50 times their p50 or more. On this shared VM,
    both libraries' iterations stall for tens of ms now and then; one such stall says nothing
    about the algorithm, yet two of them in a back-to-back loop can double a row's time."""
    cells = []
    for a in algos:
        stalled, total, slow_rows, rows = stalls.get(point + (a,), (0, 0, 0, 0))
        if total:
            cells.append(f"{'Open MPI' if a == 'mpi' else a} {stalled} of {total} iterations, "
                         f"{slow_rows} of {rows} rows")
    return f"; stalls: {', '.join(cells)}" if cells else ""


def steal_line(directory):
    """The host's steal time over the invocation, from the /proc/stat lines the script saved."""
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
    seconds apart): a process's speed, which differs up to 3x from one run to the next on this
    VM, cancels out of each ratio. None when no run has both."""
    a, b = by_run.get(point + (algo,), {}), by_run.get(point + (best,), {})
    ratios = [a[r] / b[r] for r in a if r in b and b[r] > 0]
    return statistics.median(ratios) if ratios else None


def noise_floor(by_run, pick_by_run):
    """Auto's rows against the picked algorithm's own rows of the same run: the same schedule
    measured twice in one process, seconds apart. What separates them is the measurement's own
    noise, the floor under auto/best."""
    ratios, points = [], []
    for (tag, n, size), runs in pick_by_run.items():
        auto = by_run.get((tag, n, size, "auto"), {})
        same = [auto[r] / by_run[(tag, n, size, algo)][r] for r, algo in runs.items()
                if r in auto and r in by_run.get((tag, n, size, algo), {})]
        ratios += same
        if same and statistics.median(same) > AUTO_SLACK:
            points.append(f"{tag} np {n} {human(size)} {statistics.median(same):.2f}")
    if not ratios:
        return
    over = sum(x > AUTO_SLACK for x in ratios)
    under = sum(x < 1 / AUTO_SLACK for x in ratios)
    print(f"\nnoise floor: auto's rows over the rows of the algorithm it picked, same run (the same "
          f"schedule twice): median {statistics.median(ratios):.3f} over {len(ratios)} runs; "
          f"{over} ({over / len(ratios):.0%}) above {AUTO_SLACK}, {under} "
          f"({under / len(ratios):.0%}) below 1/{AUTO_SLACK}; points whose median over runs is "
          f"above {AUTO_SLACK}: {', '.join(points) if points else 'none'}")


def main():
    med, calib, picks, by_run, hists, pick_by_run, stalls = load(sys.argv[1])
    missed = []
    tags = sorted({k[0] for k in med})
    nps = sorted({k[1] for k in med})

    print("## 8 B allreduce latency, p50 us (median of runs): each iteration timed after a barrier,")
    print("## the slowest rank's time; mean: back-to-back iterations, the time per operation")
    print(f"{'np':>3} {'auto':>8} {'best ours':>22} {'Open MPI':>9} {'auto/MPI':>9}"
          f" {'mean auto':>10} {'mean MPI':>9} {'auto/MPI':>9}")
    for n in nps:
        cands = {k[3]: v for k, v in med.items() if k[0] == "allreduce-lat" and k[1] == n and k[2] == 8}
        if "auto" not in cands or "mpi" not in cands:
            continue
        ours = {a: v for a, v in cands.items() if a not in ("auto", "mpi")}
        best = min(ours, key=lambda a: ours[a][2])
        ratio = cands["auto"][2] / cands["mpi"][2]
        print(f"{n:>3} {cands['auto'][2]:8.2f} {best + f' {ours[best][2]:.2f}':>22} "
              f"{cands['mpi'][2]:9.2f} {ratio:9.2f} {cands['auto'][0]:10.2f} {cands['mpi'][0]:9.2f}"
              f" {cands['auto'][0] / cands['mpi'][0]:9.2f}")
        if ratio > 1.0:
            missed.append(f"8 B allreduce p50 at np {n}: {ratio:.2f}x Open MPI's")
    # Where the p50 falls depends on how the iterations split between modes (with more ranks
    # than cores, one mode per context switch an iteration waits for): the histograms of all
    # runs together, buckets a quarter octave wide, those with 2% of the iterations or more.
    for n in nps:
        for side in ("auto", "mpi"):
            h = hists.get(("allreduce-lat", n, 8, side))
            if not h:
                continue
            total = sum(h.values())
            cells = [f"{lower:g}: {count / total:.0%}" for lower, count in sorted(h.items())
                     if count / total >= 0.02]
            print(f"    np {n} {'Open MPI' if side == 'mpi' else 'auto'} iterations by bucket "
                  f"(from us): " + ", ".join(cells))

    for tag in tags:
        coll = tag.split("-")[0]
        for n in nps:
            sizes = sorted({k[2] for k in med if k[0] == tag and k[1] == n})
            if not sizes:
                continue
            algos = sorted({k[3] for k in med if k[0] == tag and k[1] == n} - {"auto", "mpi"})
            print(f"\n## {tag}, np={n}: busbw GB/s (median of runs); auto/best is auto's time over "
                  f"the best algorithm's in the same run (median of runs), medians the ratio of "
                  f"the two medians, pick/best as auto/best for the algorithm auto picked, timed "
                  f"in its own rows; auto/MPI the ratio of median busbw, paired the median "
                  f"over runs of the ratio within a run (ours and Open MPI's back to back)")
            print(f"{'size':>7} " + " ".join(f"{a[:12]:>12}" for a in algos) +
                  f" {'auto':>8} {'Open MPI':>9} {'auto/best':>9} {'medians':>8} {'pick/best':>9}"
                  f" {'auto/MPI':>8} {'paired':>7}")
            for s in sizes:
                get = lambda a: med.get((tag, n, s, a))
                ours = {a: get(a) for a in algos if get(a)}
                auto, mpi = get("auto"), get("mpi")
                cells = " ".join(f"{ours[a][1]:12.3f}" if a in ours else f"{'-':>12}" for a in algos)
                line = f"{human(s):>7} {cells}"
                line += f" {auto[1]:8.3f}" if auto else f" {'-':>8}"
                line += f" {mpi[1]:9.3f}" if mpi else f" {'-':>9}"
                if auto and ours:
                    best = min(ours, key=lambda a: ours[a][0])
                    slack = paired(by_run, (tag, n, s), "auto", best)
                    pick = picks.get((tag, n, s))
                    pick_slack = paired(by_run, (tag, n, s), pick, best) if pick in ours else None
                    col = lambda x, w: f" {x:{w}.2f}" if x else f" {'-':>{w}}"
                    line += col(slack, 9) + col(auto[0] / ours[best][0], 8) + col(pick_slack, 9)
                    if slack and slack > AUTO_SLACK:
                        missed.append(f"{tag} np {n} {human(s)}: auto {slack:.2f}x the time of "
                                      f"{best} (auto picked {pick}: "
                                      f"{pick_slack if pick_slack else float('nan'):.2f}x)"
                                      + stall_note(stalls, (tag, n, s), ("auto", best, "mpi")))
                else:
                    line += f" {'-':>9} {'-':>8} {'-':>9}"
                if auto and mpi and mpi[1] > 0 and tag == coll:
                    r = auto[1] / mpi[1]
                    # Paired: per run, Open MPI's time over auto's (busbw ours / Open MPI's),
                    # the two processes run back to back; shown, the goal is on the medians.
                    pair_r = paired(by_run, (tag, n, s), "mpi", "auto")
                    line += f" {r:8.2f}" + (f" {pair_r:7.2f}" if pair_r else f" {'-':>7}")
                    if coll in BUSBW_GOAL_FROM and s >= BUSBW_GOAL_FROM[coll] and r < 1.0:
                        missed.append(f"{coll} np {n} {human(s)}: busbw {r:.2f}x Open MPI's"
                                      + stall_note(stalls, (tag, n, s), ("auto", "mpi")))
                print(line)

    noise_floor(by_run, pick_by_run)

    if calib:
        worst = max(calib)
        print(f"\ncalibration of --algo auto: median {statistics.median(c for c, _ in calib):.2f} s, "
              f"max {worst[0]:.2f} s (np {worst[1]})")
        if worst[0] >= 2.0:
            missed.append(f"calibration took {worst[0]:.2f} s at np {worst[1]}")
    steal = steal_line(sys.argv[1])
    if steal is not None:
        print(f"\nsteal time (the host running something else on this VM's vCPUs) during the "
              f"invocation: {steal:.1%} of all CPU time")
    print("\nall goals met" if not missed else "\ngoals missed:\n  " + "\n  ".join(missed))


if __name__ == "__main__":
    main()
