# perf/compare.sh flight (sourced by perf/compare.sh). docs/performance.md, "Flight recorder and
# wait sampler cost".

flight_about() {
  cat <<'TXT'
What the flight recorder costs (with the straggler sampler that reads it): the same allreduce
with CCSCOPE_FLIGHT_RECORDER=1 and =0 back to back, which goes first alternating, RUNS pairs;
small sizes (8 B-1 KiB, ring and recursive doubling, many iterations) and large (1-16 MiB, ring).
Prints per size the median over pairs of on/off (the two halves of a pair see the same phase of a
noisy VM), then the per-operation cost alone (probe ccscope-flight-cost).
TXT
}

flight_main() {
  local runs=${1:-9} np=${2:-2} cost out run part mode flag args
  need_exec "$ccscope"
  cost=$(probe flight-cost)
  out=$(results_dir flight)
  local small=(bench allreduce --np "$np" -b 8 -e 1K -f 8 -n 20000 -w 2000 -c 0
    --algo ring,recursive_doubling)
  local large=(bench allreduce --np "$np" -b 1M -e 16M -f 4 -n 40 -w 4 -c 0)
  for run in $(seq 1 "$runs"); do
    for part in small large; do
      if [ "$part" = small ]; then args=("${small[@]}"); else args=("${large[@]}"); fi
      for mode in $(turns $((run - 1)) on off); do
        flag=1
        [ "$mode" = off ] && flag=0
        CCSCOPE_FLIGHT_RECORDER=$flag "$ccscope" "${args[@]}" \
          --json "$out/$mode.$part.$run.jsonl" >/dev/null
      done
    done
  done
  raw_results "$out"
  perf_py flight "$out"
  "$cost"
}
