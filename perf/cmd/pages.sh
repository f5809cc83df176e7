# perf/compare.sh pages (sourced by perf/compare.sh). docs/performance.md, "Huge pages".

pages_about() {
  cat <<'TXT'
--hugepages on (the default) against off: our ring allreduce and all-to-all over shm and Open
MPI's (vader) on the same buffers, np 2 and 4, and the memcpy probe on both kinds of page, taking
turns RUNS times. Prints median busbw, huge over base per library, and ours over Open MPI's on
each kind of page. env: ITERS=10
TXT
}

pages_main() {
  local runs=${1:-3} min=${2:-1M} max=${3:-64M} memcpy out run np coll pages
  need_exec "$ccscope"
  memcpy=$(probe memcpy-probe)
  out=$(results_dir pages)
  for run in $(seq 1 "$runs"); do
    for np in 2 4; do
      for coll in allreduce alltoall; do
        for pages in on off; do
          local args=(bench "$coll" -b "$min" -e "$max" -f 4 -n "${ITERS:-10}" -w 3 -c 0
            --timeout 300s --hugepages "$pages")
          "$ccscope" "${args[@]}" --np "$np" --transport shm \
            --json "$out/$coll.ours.$pages.np$np.run$run.jsonl" >/dev/null
          ompi self,vader "$np" "$ccscope" "${args[@]}" --transport mpi \
            --json "$out/$coll.mpi.$pages.np$np.run$run.jsonl" >/dev/null
        done
      done
    done
    for pages in on off; do
      HUGEPAGES=$pages "$memcpy" "$min" "$max" 10 >"$out/memcpy.memcpy.$pages.np1.run$run.jsonl"
    done
  done
  raw_results "$out"
  perf_py pages "$out"
}
