# perf/compare.sh mpi (sourced by perf/compare.sh). docs/performance.md, "Allreduce ring vs
# Open MPI".

mpi_about() {
  cat <<'TXT'
Each run: np 2 and 4, our ring allreduce over shm and tcp, MPI_Allreduce over Open MPI's vader and
tcp BTLs, then the memcpy probe over the same sizes. Prints median out-of-place busbw per size,
ours over Open MPI's, shm over memcpy, and the goals (ours at least Open MPI's from 1 MiB).
env: ITERS=10 WARMUP=3
TXT
}

mpi_main() {
  local runs=${1:-3} min=${2:-4K} max=${3:-256M} memcpy out run np
  need_exec "$ccscope"
  memcpy=$(probe memcpy-probe)
  out=$(results_dir compare)
  local common=(bench allreduce -b "$min" -e "$max" -n "${ITERS:-10}" -w "${WARMUP:-3}" -c 0
    --timeout 300s)
  for run in $(seq 1 "$runs"); do
    for np in 2 4; do
      "$ccscope" "${common[@]}" --np "$np" --transport shm \
        --json "$out/shm.np$np.run$run.jsonl" >/dev/null
      "$ccscope" "${common[@]}" --np "$np" --transport tcp \
        --json "$out/tcp.np$np.run$run.jsonl" >/dev/null
      ompi self,vader "$np" "$ccscope" "${common[@]}" --transport mpi \
        --json "$out/vader.np$np.run$run.jsonl" >/dev/null
      ompi self,tcp "$np" "$ccscope" "${common[@]}" --transport mpi \
        --json "$out/ompitcp.np$np.run$run.jsonl" >/dev/null
    done
    "$memcpy" "$min" "$max" 10 >"$out/memcpy.np1.run$run.jsonl"
  done
  raw_results "$out"
  perf_py mpi "$out"
}
