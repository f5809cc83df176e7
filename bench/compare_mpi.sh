#!/usr/bin/env bash
# Our ring allreduce over shm and tcp against MPI_Allreduce with Open MPI's vader (shared
# memory) and tcp BTLs, plus a memcpy probe, in one invocation; prints medians and ratios.
# Usage: bench/compare_mpi.sh [RUNS=3] [MIN=4K] [MAX=256M]   (BUILD=build by default)
set -euo pipefail
runs=${1:-3}; min=${2:-4K}; max=${3:-256M}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
probe=${BUILD:-$root/build}/bench/ccscope-memcpy-probe
out=$(mktemp -d /tmp/ccscope-compare.XXXXXX)
common=(bench allreduce -b "$min" -e "$max" -n "${ITERS:-10}" -w "${WARMUP:-3}" -c 0 --timeout 300s)
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1)
for run in $(seq 1 "$runs"); do
  for np in 2 4; do
    "$bin" "${common[@]}" --np "$np" --transport shm --json "$out/shm.np$np.run$run.jsonl" >/dev/null
    "$bin" "${common[@]}" --np "$np" --transport tcp --json "$out/tcp.np$np.run$run.jsonl" >/dev/null
    "${mpirun[@]}" -np "$np" --mca btl self,vader "$bin" "${common[@]}" --transport mpi \
      --json "$out/vader.np$np.run$run.jsonl" >/dev/null
    "${mpirun[@]}" -np "$np" --mca btl self,tcp "$bin" "${common[@]}" --transport mpi \
      --json "$out/ompitcp.np$np.run$run.jsonl" >/dev/null
  done
  "$probe" "$min" "$max" 10 > "$out/memcpy.np1.run$run.jsonl"
done
echo "raw results: $out"
python3 "$root/bench/compare_summary.py" "$out"
