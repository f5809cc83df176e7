# perf/compare.sh ucx (sourced by perf/compare.sh). docs/performance.md, "UCX vs our transports".

ucx_about() {
  cat <<'TXT'
Each run: np 2 and 4, our ring allreduce over our shm and over UCX's shared-memory transports
(UCX_TLS=sm,self), over our tcp and over UCX's tcp (UCX_TLS=tcp,self), each UCX run with peer
error handling (the default) and with --ucx-errors none (which lets UCX 1.13 use tcp's
zero-copy put), and Open MPI's MPI_Allreduce with --mca pml ucx on the same two UCX_TLS. Prints
median out-of-place busbw per size and, per size, ucx over ours as the median of the per-run
ratios and every run's ratio (the spread), with the goal (>= 0.9 from 1 MiB), and our
allreduce over UCX (peer mode) over Open MPI's MPI_Allreduce over UCX.
env: ITERS=10 WARMUP=3
TXT
}

# Open MPI's UCX PML selects only RDMA devices unless told any will do (pml_ucx_tls/devices).
ompi_ucx() {
  local tls=$1 np=$2
  shift 2
  mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any -x UCX_TLS="$tls" -np "$np" "$@"
}

ucx_main() {
  local runs=${1:-5} min=${2:-1M} max=${3:-64M} out run np
  need_exec "$ccscope"
  out=$(results_dir ucx)
  local common=(bench allreduce -b "$min" -e "$max" -n "${ITERS:-10}" -w "${WARMUP:-3}" -c 0
    --timeout 300s)
  for run in $(seq 1 "$runs"); do
    for np in 2 4; do
      "$ccscope" "${common[@]}" --np "$np" --transport shm --json "$out/shm.np$np.run$run.jsonl" \
        >/dev/null
      UCX_TLS=sm,self "$ccscope" "${common[@]}" --np "$np" --transport ucx \
        --json "$out/ucxsm.np$np.run$run.jsonl" >/dev/null
      UCX_TLS=sm,self "$ccscope" "${common[@]}" --np "$np" --transport ucx --ucx-errors none \
        --json "$out/ucxsmnone.np$np.run$run.jsonl" >/dev/null
      "$ccscope" "${common[@]}" --np "$np" --transport tcp --json "$out/tcp.np$np.run$run.jsonl" \
        >/dev/null
      UCX_TLS=tcp,self "$ccscope" "${common[@]}" --np "$np" --transport ucx \
        --json "$out/ucxtcp.np$np.run$run.jsonl" >/dev/null
      UCX_TLS=tcp,self "$ccscope" "${common[@]}" --np "$np" --transport ucx --ucx-errors none \
        --json "$out/ucxtcpnone.np$np.run$run.jsonl" >/dev/null
      ompi_ucx sm,self "$np" "$ccscope" "${common[@]}" --transport mpi --algo native \
        --json "$out/ompiucxsm.np$np.run$run.jsonl" >/dev/null
      ompi_ucx tcp,self "$np" "$ccscope" "${common[@]}" --transport mpi --algo native \
        --json "$out/ompiucxtcp.np$np.run$run.jsonl" >/dev/null
    done
  done
  raw_results "$out"
  perf_py ucx "$out"
}
