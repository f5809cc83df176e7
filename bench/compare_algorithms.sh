#!/usr/bin/env bash
# The algorithm family against Open MPI's collectives (vader shared memory), np 2, 4 and 8 over
# shm, in one invocation: every algorithm and `--algo auto` side by side, Open MPI's own choice
# for the same collective and sizes, RUNS times; prints medians and the ratios issue #3 states
# its goals in (8 B allreduce latency, alltoall/allgather/reduce-scatter busbw, auto vs best).
# Usage: bench/compare_algorithms.sh [RUNS=3] [NPS="2 4 8"]   (BUILD=build by default)
set -euo pipefail
runs=${1:-3}; nps=${2:-2 4 8}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
out=$(mktemp -d /tmp/ccscope-algos.XXXXXX)
# The host's steal time over the invocation (the summary prints it): on a shared VM, the host
# runs something else on our vCPUs now and then.
grep '^cpu ' /proc/stat >"$out/proc-stat-cpu.txt"
. "$root/bench/mpirun.sh"
# collective, a warm-up size, sizes (-b -e -f), timed and warm-up iterations: many iterations
# where one takes microseconds (a handful would measure wake-ups, not the algorithm), 20 where it
# takes up to a few ms, 10 from 16 MiB (5 until the sixth session: a row then lasted 12-60 ms, and
# a hiccup of the VM of a few ms moved it by up to a fifth). Each invocation starts one size below
# the first size reported, and algorithms_summary.py drops that row: the first size a fresh
# process or a fresh algorithm runs is cold (with 8 ranks on 2 cores up to 5x slower than the runs
# after), and it would count against whichever algorithm runs first. (The harness now also warms
# each algorithm's first size for 0.1 s; the dropped row stays as a margin.)
plan=(
  "allreduce     4    16   64K  4 200 20"
  "allreduce     64K  256K 4M   4 20  5"
  "allreduce     4M   16M  64M  4 10  2"
  "alltoall      16K  64K  256K 4 50  5"
  "alltoall      256K 1M   4M   4 20  5"
  "alltoall      4M   16M  64M  4 10  2"
  "allgather     256K 1M   4M   4 20  5"
  "allgather     4M   16M  64M  4 10  2"
  "reducescatter 256K 1M   4M   4 20  5"
  "reducescatter 4M   16M  64M  4 10  2"
)
# ours (every algorithm and auto, taking turns at each size, forward and then back, half the
# iterations each time: --interleave, so that a slow spell of the VM falls on all of them alike)
# and Open MPI's, same arguments: pair RUN NAME NP BIG BENCH-ARGS... (odd RUN: ours first)
# Out-of-place rows only (--placement out, since the seventh session): the goals are stated on
# them, and the in-place half, never read by the summary, took half the time that more runs
# now take instead.
# Which side goes first alternates from one run to the next, and a run whose sweep reaches 4 MiB
# is followed by settle (bench/settle.sh): it frees up to several GiB (2.7 GiB at np 8 and
# 64 MiB, with the algorithms sharing their buffers; 5.5 GiB before), and on a VM that reports
# free pages to the host the next 2-20 s are full of 33-36 ms freezes of every vCPU, which fell
# on whichever run came next (until the eleventh session, always Open MPI's same line or our
# next one).
. "$root/bench/settle.sh"
ours() {  # NP JSON BENCH-ARGS...
  local np=$1 json=$2; shift 2
  "$bin" "$@" --np "$np" --transport shm --algo all,auto --interleave --placement out \
    --json "$json" >/dev/null
}
theirs() {  # NP JSON BENCH-ARGS...
  local np=$1 json=$2; shift 2
  "${mpirun[@]}" -np "$np" "$bin" "$@" --transport mpi --placement out --json "$json" >/dev/null
}
pair() {
  local run=$1 name=$2 np=$3 big=$4; shift 4
  local sides=(ours theirs); [ $((run % 2)) -eq 0 ] && sides=(theirs ours)
  for side in "${sides[@]}"; do
    local tag=ours; [ "$side" = theirs ] && tag=mpi
    "$side" "$np" "$out/${name/@/$tag}.jsonl" "$@"
    if [ "$big" = 1 ]; then settle; fi
  done
}
settle
for run in $(seq 1 "$runs"); do
  for np in $nps; do
    for line in "${plan[@]}"; do
      read -r coll warm b e f n w <<<"$line"
      big=0; case $e in 4M|64M) big=1 ;; esac
      pair "$run" "$coll.@.np$np.run$run-$b" "$np" "$big" bench "$coll" -b "$warm" -e "$e" -f "$f" \
        -n "$n" -w "$w" -c 0 --timeout 600s
    done
  done
done
# 8 B latency: short runs, ours and Open MPI's alternating LAT_RUNS times, so that the slow
# and fast phases of a shared VM fall on both sides alike.
for run in $(seq 1 "${LAT_RUNS:-7}"); do
  for np in $nps; do
    pair "$run" "allreduce-lat.@.np$np.run$run" "$np" 0 bench allreduce -b 8 -e 8 -n 10000 \
      -w 1000 -c 0 --timeout 600s
  done
done
grep '^cpu ' /proc/stat >>"$out/proc-stat-cpu.txt"
echo "raw results: $out (waited $SETTLED_S s for free page reporting to settle)"
python3 "$root/bench/algorithms_summary.py" "$out"
