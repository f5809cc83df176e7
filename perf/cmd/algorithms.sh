# perf/compare.sh algorithms (sourced by perf/compare.sh). docs/performance.md, "Algorithm family
# and --algo auto"; the iteration counts, turns and settling: "Measuring on small shared machines".

algorithms_about() {
  cat <<'TXT'
The algorithm family against Open MPI's collectives (vader shared memory) over shm, at each NP,
RUNS times: every algorithm and --algo auto taking turns at each size (--interleave), Open MPI's
own choice for the same collective and sizes, which side goes first alternating from run to run;
then the 8 B allreduce latency, LAT_RUNS times. Prints medians and the goals (8 B allreduce
latency, alltoall/allgather/reduce-scatter busbw against Open MPI's, auto against the best
algorithm), and the host's steal time over the invocation. env: LAT_RUNS=7
TXT
}

# collective, a warm-up size, sizes (-b -e -f), timed and warm-up iterations: many iterations
# where one takes microseconds, fewer as they grow to milliseconds. Each line starts one size
# below the first size reported, and the summary drops that row: a process's or algorithm's first
# size is cold and would count against whichever algorithm runs first.
algorithms_plan=(
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

algorithms_ours() { # NP JSON BENCH-ARGS...
  local np=$1 json=$2
  shift 2
  "$ccscope" "$@" --np "$np" --transport shm --algo all,auto --interleave --placement out \
    --json "$json" >/dev/null
}

algorithms_theirs() { # NP JSON BENCH-ARGS...
  local np=$1 json=$2
  shift 2
  ompi self,vader "$np" "$ccscope" "$@" --transport mpi --placement out --json "$json" >/dev/null
}

# algorithms_pair RUN PATH NP BIG BENCH-ARGS...: ours and Open MPI's, odd RUN ours first, into
# PATH.jsonl with its @ replaced by ours or mpi. BIG=1 settles after each side: a sweep reaching
# 4 MiB frees up to several GiB, and the VM's freezes while it hands them back would fall on the
# next run.
algorithms_pair() {
  local run=$1 path=$2 np=$3 big=$4 side tag
  shift 4
  for side in $(turns $((run - 1)) ours theirs); do
    tag=ours
    [ "$side" = theirs ] && tag=mpi
    "algorithms_$side" "$np" "${path/@/$tag}.jsonl" "$@"
    if [ "$big" = 1 ]; then settle; fi
  done
}

algorithms_main() {
  local runs=${1:-3} nps=${2:-2 4 8} out run np line coll warm b e f n w big
  need_exec "$ccscope"
  out=$(results_dir algos)
  grep '^cpu ' /proc/stat >"$out/proc-stat-cpu.txt" # steal time, before and after
  settle
  for run in $(seq 1 "$runs"); do
    for np in $nps; do
      for line in "${algorithms_plan[@]}"; do
        read -r coll warm b e f n w <<<"$line"
        big=0
        case $e in 4M | 64M) big=1 ;; esac
        algorithms_pair "$run" "$out/$coll.@.np$np.run$run-$b" "$np" "$big" bench "$coll" \
          -b "$warm" -e "$e" -f "$f" -n "$n" -w "$w" -c 0 --timeout 600s
      done
    done
  done
  # 8 B latency: short runs, the two sides alternating, so that slow and fast spells fall on both.
  for run in $(seq 1 "${LAT_RUNS:-7}"); do
    for np in $nps; do
      algorithms_pair "$run" "$out/allreduce-lat.@.np$np.run$run" "$np" 0 \
        bench allreduce -b 8 -e 8 -n 10000 -w 1000 -c 0 --timeout 600s
    done
  done
  grep '^cpu ' /proc/stat >>"$out/proc-stat-cpu.txt"
  raw_results "$out" settled
  perf_py algorithms "$out"
}
