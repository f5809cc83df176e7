# perf/compare.sh model (sourced by perf/compare.sh). docs/model.md, "Checked on 2-core VMs".

model_about() {
  cat <<'TXT'
Each run: our ring and tree allreduce over shm and tcp at np 2, 4 and 8 (64 KiB to MAX); the
model fitted to np 2 and 4 (ccscope model fit), then np 8 predicted (ccscope model predict).
Prints, per transport, algorithm and size from MIN, the median measured and predicted np 8
busbw, predicted over measured as the median of the per-run ratios and every run's ratio (the
spread), with the goal (within 25%).
env: ITERS=20 WARMUP=3
TXT
}

model_main() {
  local runs=${1:-3} min=${2:-1M} max=${3:-32M} out run np t
  need_exec "$ccscope"
  out=$(results_dir model)
  local common=(bench allreduce --algo ring,tree -b 64K -e "$max" -f 2 -n "${ITERS:-20}"
    -w "${WARMUP:-3}" --timeout 300s)
  for run in $(seq 1 "$runs"); do
    for t in shm tcp; do
      for np in 2 4 8; do
        "$ccscope" "${common[@]}" --np "$np" --transport "$t" \
          --json "$out/$t.np$np.run$run.jsonl" >/dev/null
      done
      "$ccscope" model fit "$out/$t.np2.run$run.jsonl" "$out/$t.np4.run$run.jsonl" \
        --out "$out/$t.fit.run$run.jsonl" >"$out/$t.fit.run$run.txt"
      "$ccscope" model predict --fit "$out/$t.fit.run$run.jsonl" --ranks 8 -b "$min" -e "$max" \
        --algo ring,tree --json "$out/$t.pred.run$run.jsonl" >/dev/null
    done
  done
  raw_results "$out"
  perf_py model "$out" "$min"
}
