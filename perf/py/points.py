"""Summary of perf/compare.sh points: per size each algorithm's median busbw and its busbw over
Open MPI's in the same trial (for auto also what it ran). Usage: points.py DIR
File names: <ours|mpi>.<trial>.jsonl"""
import collections
import sys

from perfdata import is_auto, median, ratios_text, results, runs, trial_ratios


def main():
    busbw = collections.defaultdict(dict)  # (bytes, algorithm) -> {trial: busbw}
    ran = collections.defaultdict(dict)  # (bytes, "auto") -> {trial: the algorithm auto ran}
    for f, (side, trial, *_) in runs(sys.argv[1]):
        for r in results(f):
            auto = is_auto(r)
            algo = "mpi" if side == "mpi" else "auto" if auto else r["algorithm"]
            busbw[(r["bytes"], algo)][int(trial)] = r["busbw_gbps"]
            if auto:
                ran[(r["bytes"], algo)][int(trial)] = r["algorithm"]
    print("bytes     algorithm           busbw GB/s  /Open MPI's (median; per trial)")
    for size, algo in sorted(busbw):
        x = busbw[(size, algo)]
        ratios = trial_ratios(x, busbw.get((size, "mpi"), {}))
        picks = ran.get((size, algo))
        what = " ran " + ",".join(picks[t] for t in sorted(picks)) if picks else ""
        print(f"{size:<9} {algo:<19} {median(x.values()):10.3f}  {ratios_text(ratios)}{what}")


if __name__ == "__main__":
    main()
