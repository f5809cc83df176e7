# perf/compare.sh single-copy (sourced by perf/compare.sh). docs/performance.md, "Shared-memory
# single-copy threshold".

single_copy_about() {
  cat <<'TXT'
The shm transport's single-copy threshold (messages from this size go by one process_vm_readv
instead of through the slots) against lower values, A/B: each trial runs every threshold in turn
(CCSCOPE_SHM_SINGLE_COPY_FROM), np 2, 4 and 8, allreduce, alltoall, allgather and reducescatter,
every algorithm taking turns, 2 KiB-256 KiB. The first threshold is the reference. Prints per
point each threshold's time over the reference's in the same trial (median over trials), for the
fastest algorithm at the reference.
TXT
}

single_copy_main() {
  local trials=${1:-10} thresholds=${2:-65536 16384 8192} out t sc np c
  need_exec "$ccscope"
  out=$(results_dir single-copy)
  for t in $(seq 1 "$trials"); do
    for sc in $thresholds; do
      for np in 2 4 8; do
        for c in allreduce alltoall allgather reducescatter; do
          CCSCOPE_SHM_SINGLE_COPY_FROM=$sc "$ccscope" bench "$c" -b 2K -e 256K -f 2 -n 100 -w 10 \
            -c 0 --np "$np" --algo all --interleave --placement out \
            --json "$out/$c.np$np.sc$sc.t$t.jsonl" >/dev/null
        done
      done
    done
  done
  raw_results "$out"
  # shellcheck disable=SC2086 # one argument per threshold
  perf_py single_copy "$out" $thresholds
}
