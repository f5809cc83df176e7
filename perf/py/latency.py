"""Summary of perf/compare.sh latency: per np and size, each side's median p50 and back-to-back
mean, and its p50 over Open MPI's in the same trial. Usage: latency.py DIR
File names: <old|new|mpi>.np<N>.<trial>.jsonl"""
import collections
import sys

from perfdata import median, ranks, ratios_text, results, runs, trial_ratios

SIDES = ("old", "new", "mpi")


def main():
    p50 = collections.defaultdict(dict)  # (np, bytes, side) -> {trial: p50}
    mean = collections.defaultdict(dict)  # (np, bytes, side) -> {trial: back-to-back mean}
    for f, (side, np_part, trial, *_) in runs(sys.argv[1]):
        for r in results(f):
            key = (ranks(np_part), r["bytes"], side)
            p50[key][int(trial)] = r["lat_us"]["p50"]
            mean[key][int(trial)] = r["time_us"]
    print("np  bytes     side  p50 us  mean us  p50/Open MPI's (median; per trial)")
    for n, size in sorted({k[:2] for k in p50}):
        for side in SIDES:
            key = (n, size, side)
            if not p50.get(key):
                continue
            ratios = trial_ratios(p50[key], p50.get((n, size, "mpi"), {}))
            print(f"{n:<3} {size:<9} {side:4} {median(p50[key].values()):7.2f} "
                  f"{median(mean[key].values()):8.2f}  {ratios_text(ratios)}")


if __name__ == "__main__":
    main()
