#!/usr/bin/env bash
# One line of bench/compare_algorithms.sh, many times: ours (every algorithm and auto taking
# turns, --interleave) and Open MPI's own collective over shm, which goes first alternating from
# trial to trial, and after each run a wait until freed memory has gone back to the host
# (bench/settle.sh). For a point where a few runs of the whole invocation leave the verdict to
# noise. Prints per size each algorithm's median busbw and its busbw over Open MPI's in the
# same trial (median, then every trial; for auto also the algorithm it ran).
# Usage: bench/points_vs_mpi.sh COLL NP FROM TO [TRIALS=12]   e.g. allgather 2 16M 64M
#        (-f 4 -n 10 -w 2; ITERS, WARMUP, ALGO=all,auto to change them). FROM is printed too,
#        but a process's first size is cold: start one size below the first that counts.
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
coll=$1 np=$2 from=$3 to=$4 trials=${5:-12}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
out=$(mktemp -d /tmp/ccscope-points.XXXXXX)
. "$root/bench/settle.sh"
. "$root/bench/mpirun.sh"
args=(bench "$coll" -b "$from" -e "$to" -f 4 -n "${ITERS:-10}" -w "${WARMUP:-2}" -c 0
  --placement out --timeout 600s)
settle
for t in $(seq 1 "$trials"); do
  sides=(ours mpi); [ $((t % 2)) -eq 0 ] && sides=(mpi ours)
  for s in "${sides[@]}"; do
    if [ "$s" = ours ]; then
      "$bin" "${args[@]}" --np "$np" --transport shm --algo "${ALGO:-all,auto}" --interleave \
        --json "$out/ours.$t.jsonl" >/dev/null
    else
      "${mpirun[@]}" -np "$np" "$bin" "${args[@]}" --transport mpi --json "$out/mpi.$t.jsonl" \
        >/dev/null
    fi
    settle
  done
done
echo "raw results: $out (waited $SETTLED_S s for free page reporting to settle)"
python3 - "$out" <<'PY'
import collections, glob, json, statistics as st, sys
rows = collections.defaultdict(dict)  # (bytes, algorithm) -> trial -> (busbw, what auto ran)
for path in glob.glob(sys.argv[1] + "/*.jsonl"):
    side, trial = path.rsplit("/", 1)[1].split(".")[:2]
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "result" or r.get("in_place"):
            continue
        auto = r.get("requested_algorithm") == "auto" or r.get("note", "").startswith("auto picked")
        algo = "mpi" if side == "mpi" else "auto" if auto else r["algorithm"]
        rows[(r["bytes"], algo)][int(trial)] = (r["busbw_gbps"], r["algorithm"] if auto else "")
print("bytes     algorithm           busbw GB/s  /Open MPI's (median; per trial)")
for size, algo in sorted(rows):
    x, mpi = rows[(size, algo)], rows[(size, "mpi")]
    ratios = [x[t][0] / mpi[t][0] for t in sorted(x) if t in mpi]
    ran = " ran " + ",".join(x[t][1] for t in sorted(x)) if algo == "auto" else ""
    print(f"{size:<9} {algo:<19} {st.median(v[0] for v in x.values()):10.3f}  "
          f"{st.median(ratios):.3f}; " + " ".join(f"{r:.2f}" for r in ratios) + ran)
PY
