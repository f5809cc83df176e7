# perf/compare.sh bind (sourced by perf/compare.sh). docs/performance.md, "Measuring on small
# shared machines".

bind_about() {
  cat <<'TXT'
--bind core against --bind none (the default), A/B by trial, with more ranks than cores (np 4 and
8): every algorithm and auto taking turns at each size, 64 KiB-4 MiB, allreduce, allgather,
alltoall and reducescatter. Prints per point and binding: the best algorithm's time (median of
trials), how far each algorithm's time moves between processes (max/min over trials, median over
algorithms), how often the fastest algorithm changes between processes, and auto's time over the
best's in the same process (median of trials).
TXT
}

bind_main() {
  local trials=${1:-6} out t bind np c
  need_exec "$ccscope"
  out=$(results_dir bind)
  for t in $(seq 1 "$trials"); do
    for bind in none core; do
      for np in 4 8; do
        for c in allreduce allgather alltoall reducescatter; do
          "$ccscope" bench "$c" -b 16K -e 4M -f 4 -n 20 -w 5 -c 0 --np "$np" --algo all,auto \
            --interleave --placement out --bind "$bind" \
            --json "$out/$c.np$np.$bind.t$t.jsonl" >/dev/null
        done
      done
    done
  done
  raw_results "$out"
  perf_py bind "$out"
}
