# perf/compare.sh analyze (sourced by perf/compare.sh). docs/performance.md, "Analyzer
# throughput".

analyze_about() {
  cat <<'TXT'
Generates synthetic multi-rank logs (64 ranks on 8 hosts: NCCL INFO chatter, training output, one
host with IB retry-exceeded errors, watchdog timeouts everywhere) in BENCH_DIR, once per size,
then runs `ccscope analyze` on them under /usr/bin/time -v RUNS times; prints wall seconds and max
RSS per run and their medians. Goal: < 60 s, < 500 MB.
env: BENCH_MB=1024 (size of the logs) BENCH_DIR=/tmp/ccscope-bench-analyze
TXT
}

analyze_main() {
  local runs=${1:-3} mb=${BENCH_MB:-1024} data=${BENCH_DIR:-/tmp/ccscope-bench-analyze}
  local i rc wall kb secs=() rss=() tmp=/tmp/ccscope-bench-analyze
  need_exec "$ccscope"
  if [ ! -f "$data/.done-$mb" ]; then
    rm -rf "$data" && mkdir -p "$data"
    perf_py analyze_logs "$data" "$mb"
    touch "$data/.done-$mb"
  fi
  echo "analyze: $(du -sh "$data" | cut -f1) in $(ls "$data" | wc -l) files, $runs run(s), $ccscope"
  for i in $(seq 1 "$runs"); do
    rc=0
    /usr/bin/time -v "$ccscope" analyze "$data" --json "$tmp.json" >"$tmp.txt" 2>"$tmp.time" ||
      rc=$?
    [ "$rc" -le 1 ] || { cat "$tmp.time" >&2; exit 1; } # 1: a diagnosis, not a failure
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0
      for (k = 1; k <= n; k++) s = s * 60 + t[k]; print s }' "$tmp.time")
    kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tmp.time")
    secs+=("$wall")
    rss+=("$((kb / 1024))")
    echo "run $i: $wall s, max RSS $((kb / 1024)) MB, exit $rc"
  done
  echo "median: $(median "${secs[@]}") s, max RSS $(median "${rss[@]}") MB (goal < 60 s, < 500 MB)"
  grep -E '^(Layer|Verdict|Hosts|Links):' "$tmp.txt" || true
}
