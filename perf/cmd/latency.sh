# perf/compare.sh latency (sourced by perf/compare.sh). docs/performance.md, "Small-message
# latency".

latency_about() {
  cat <<'TXT'
Two builds of ccscope (build the old commit into one directory, the new into another) and Open
MPI's own collective over shm (launched with NEW_BIN), taking turns, the order rotating from
trial to trial, TRIALS times per np. By default the 8 B allreduce; BENCH="alltoall -b 1K -e 64K
-f 4 -n 200 -w 20" runs another sweep, and then every run is followed by settle (large sizes
free memory that the VM hands back to the host, freezing every vCPU for a while). Prints per np
and size each side's median p50 and back-to-back mean, and its p50 over Open MPI's in the same
trial (median, then every trial). env: ALGO=auto BENCH
TXT
}

latency_main() {
  [ $# -ge 2 ] || usage_error
  local old=$1 new=$2 trials=${3:-6} nps=${4:-2 4 8} out t np s json b sweep
  for b in "$old" "$new"; do need_exec "$b"; done
  out=$(results_dir latab)
  read -r -a sweep <<<"${BENCH:-allreduce -b 8 -e 8 -n 10000 -w 1000}"
  local args=(bench "${sweep[@]}" -c 0 --placement out --timeout 600s)
  local shm=(--transport shm --algo "${ALGO:-auto}")
  for t in $(seq 1 "$trials"); do
    for np in $nps; do
      for s in $(turns "$t" old new mpi); do
        json=$out/$s.np$np.$t.jsonl
        case $s in
          old) "$old" "${args[@]}" --np "$np" "${shm[@]}" --json "$json" ;;
          new) "$new" "${args[@]}" --np "$np" "${shm[@]}" --json "$json" ;;
          mpi) ompi self,vader "$np" "$new" "${args[@]}" --transport mpi --json "$json" ;;
        esac >/dev/null
        if [ -n "${BENCH:-}" ]; then settle; fi
      done
    done
  done
  raw_results "$out" settled
  perf_py latency "$out"
}
