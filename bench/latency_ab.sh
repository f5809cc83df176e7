#!/usr/bin/env bash
# Two builds of ccscope and Open MPI's own collective over shm, in one invocation: by default the
# 8 B allreduce, or another sweep (BENCH="alltoall -b 1K -e 64K -f 4 -n 200 -w 20"). The three take
# turns, the order rotating from trial to trial so that a slow spell of the VM falls on each
# alike, TRIALS times per np. Prints per np and size the median p50 and back-to-back mean of
# each, and each side's p50 over Open MPI's in the same trial (median, then every trial). For a
# transport change: build the old commit into one directory and the new into another. With BENCH
# given, every run is followed by bench/settle.sh's wait (large sizes free memory that the VM
# hands back to the host, freezing every vCPU for a while).
# Usage: bench/latency_ab.sh OLD_BIN NEW_BIN [TRIALS=6] [NPS="2 4 8"]   (ALGO=auto)
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
old=$1 new=$2 trials=${3:-6} nps=${4:-2 4 8}
for b in "$old" "$new"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
out=$(mktemp -d /tmp/ccscope-latab.XXXXXX)
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/mpirun.sh"
. "$root/bench/settle.sh"
read -r -a sweep <<<"${BENCH:-allreduce -b 8 -e 8 -n 10000 -w 1000}"
args=(bench "${sweep[@]}" -c 0 --placement out --timeout 600s)
for t in $(seq 1 "$trials"); do
  for np in $nps; do
    sides=(old new mpi)
    case $((t % 3)) in 1) sides=(new mpi old) ;; 2) sides=(mpi old new) ;; esac
    for s in "${sides[@]}"; do
      json=$out/$s.np$np.$t.jsonl
      case $s in
        old) "$old" "${args[@]}" --np "$np" --transport shm --algo "${ALGO:-auto}" --json "$json" ;;
        new) "$new" "${args[@]}" --np "$np" --transport shm --algo "${ALGO:-auto}" --json "$json" ;;
        mpi) "${mpirun[@]}" -np "$np" "$new" "${args[@]}" --transport mpi --json "$json" ;;
      esac >/dev/null
      if [ -n "${BENCH:-}" ]; then settle; fi
    done
  done
done
echo "raw results: $out (waited $SETTLED_S s for free page reporting to settle)"
python3 - "$out" <<'PY'
import collections, glob, json, statistics as st, sys
runs = collections.defaultdict(dict)  # (np, bytes, side) -> trial -> (p50, mean)
for path in glob.glob(sys.argv[1] + "/*.jsonl"):
    side, np, trial = path.rsplit("/", 1)[1].split(".")[:3]
    for line in open(path):
        r = json.loads(line)
        if r.get("type") == "result" and not r.get("in_place"):
            runs[(int(np[2:]), r["bytes"], side)][int(trial)] = (r["lat_us"]["p50"], r["time_us"])
print("np  bytes     side  p50 us  mean us  p50/Open MPI's (median; per trial)")
for np, size in sorted({k[:2] for k in runs}):
    mpi = runs[(np, size, "mpi")]
    for side in ("old", "new", "mpi"):
        x = runs[(np, size, side)]
        ratios = [x[t][0] / mpi[t][0] for t in sorted(x) if t in mpi]
        print(f"{np:<3} {size:<9} {side:4} {st.median(v[0] for v in x.values()):7.2f} "
              f"{st.median(v[1] for v in x.values()):8.2f}  {st.median(ratios):.3f}; "
              + " ".join(f"{r:.2f}" for r in ratios))
PY
