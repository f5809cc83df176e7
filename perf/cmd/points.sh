# perf/compare.sh points (sourced by perf/compare.sh). docs/performance.md, "Algorithm family and
# --algo auto".

points_about() {
  cat <<'TXT'
One line of `perf/compare.sh algorithms`, many times, for a point where a few runs leave the
verdict to noise: ours (every algorithm and auto taking turns, --interleave) and Open MPI's own
collective over shm, which side goes first alternating from trial to trial, each run followed by
settle. Prints per size each algorithm's median busbw and its busbw over Open MPI's in the same
trial (median, then every trial; for auto also what it ran). e.g. points allgather 2 16M 64M.
Sizes -f 4; FROM is printed too, but a process's first size is cold: start one size below the
first that counts. env: ITERS=10 WARMUP=2 ALGO=all,auto
TXT
}

points_main() {
  [ $# -ge 4 ] || usage_error
  local coll=$1 np=$2 from=$3 to=$4 trials=${5:-12} out t s
  need_exec "$ccscope"
  out=$(results_dir points)
  local args=(bench "$coll" -b "$from" -e "$to" -f 4 -n "${ITERS:-10}" -w "${WARMUP:-2}" -c 0
    --placement out --timeout 600s)
  settle
  for t in $(seq 1 "$trials"); do
    for s in $(turns $((t - 1)) ours mpi); do
      if [ "$s" = ours ]; then
        "$ccscope" "${args[@]}" --np "$np" --transport shm --algo "${ALGO:-all,auto}" \
          --interleave --json "$out/ours.$t.jsonl" >/dev/null
      else
        ompi self,vader "$np" "$ccscope" "${args[@]}" --transport mpi \
          --json "$out/mpi.$t.jsonl" >/dev/null
      fi
      settle
    done
  done
  raw_results "$out" settled
  perf_py points "$out"
}
