#!/usr/bin/env bash
# Host buffers on huge pages (--hugepages on, the default) against base pages (off): our ring
# allreduce and all-to-all over shm and Open MPI's (vader) on the same buffers, np 2 and 4, and
# the memcpy probe, taking turns RUNS times in one invocation; prints medians and ratios.
# Usage: bench/compare_pages.sh [RUNS=3] [MIN=1M] [MAX=64M]   (BUILD=build by default)
set -euo pipefail
runs=${1:-3}; min=${2:-1M}; max=${3:-64M}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
probe=${BUILD:-$root/build}/bench/ccscope-memcpy-probe
out=$(mktemp -d /tmp/ccscope-pages.XXXXXX)
. "$root/bench/mpirun.sh"
for run in $(seq 1 "$runs"); do
  for np in 2 4; do
    for coll in allreduce alltoall; do
      for pages in on off; do
        args=(bench "$coll" -b "$min" -e "$max" -f 4 -n "${ITERS:-10}" -w 3 -c 0 --timeout 300s
              --hugepages "$pages")
        "$bin" "${args[@]}" --np "$np" --transport shm --json "$out/$coll.ours.$pages.np$np.run$run.jsonl" >/dev/null
        "${mpirun[@]}" -np "$np" "$bin" "${args[@]}" --transport mpi \
          --json "$out/$coll.mpi.$pages.np$np.run$run.jsonl" >/dev/null
      done
    done
  done
  for pages in on off; do
    HUGEPAGES=$pages "$probe" "$min" "$max" 10 > "$out/memcpy.memcpy.$pages.np1.run$run.jsonl"
  done
done
echo "raw results: $out"
python3 "$root/bench/pages_summary.py" "$out"
