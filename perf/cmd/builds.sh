# perf/compare.sh builds (sourced by perf/compare.sh): two ccscope builds over the whole size
# range, the "no performance regression" check. docs/performance.md, "Measuring on small shared
# machines", for the turns, settling and dropped first rows.

builds_about() {
  cat <<'TXT'
Two builds of ccscope (say the commit before a change and the change), RUNS times: at each np,
over shm and tcp, allreduce and all-to-all, 8 B to 64 MiB (-f 4, then 64 MiB), OLD and NEW
taking turns (one build's whole sweep, then the other's), which goes first alternating from run
to run; settle after a sweep reaching 4 MiB. Iterations fall as sizes grow and as np rises (the
plan in perf/cmd/builds.sh; the first size of each line after the first is a warm-up, dropped).
Prints per transport, collective, np and size each build's median back-to-back time (time_us)
over the runs, NEW/OLD, the paired ratio, each build's spread ((max-min)/median over the runs),
and flags a point slower beyond spread: NEW's median above OLD's by more than the larger spread
(needs 2 runs or more). Then one line: points compared, how many slower beyond spread, which.
Exits 0 either way (a report).
About 30 minutes for RUNS=5 NPS="2 4 8": one run took 6 min (3.4 of them settling) on the 2-core
machine while it was also compiling.
env: MAX=64M (largest size; smaller for a quick try), ITERS and WARMUP (replace the plan's
counts on every line and np)
TXT
}

# Lines of sizes: first, last, step factor, timed and warm-up iterations at np 2 (divided by
# np/2 at larger np, at least 3 and 1). Each line after the first starts at the previous line's
# last size: that first row is a warm-up, which the summary drops (a fresh process's first size
# is cold).
builds_plan=(
  "8    2K   4 400 40"
  "2K   128K 4 100 10"
  "128K 32M  4 20  3"
  "32M  64M  2 6   2"
)

# builds_bytes SIZE: SIZE (8, 4K, 64M, 1G) in bytes.
builds_bytes() {
  local n=${1%[KMG]}
  case $1 in
    *K) echo $((n << 10)) ;;
    *M) echo $((n << 20)) ;;
    *G) echo $((n << 30)) ;;
    *) echo "$n" ;;
  esac
}

# builds_one BIN JSON NP TRANSPORT COLL FIRST LAST FACTOR ITERS WARMUP: one bench run; a failed
# one is reported and the comparison goes on without it.
builds_one() {
  local bin=$1 json=$2 np=$3 t=$4 coll=$5 rc=0
  "$bin" bench "$coll" -b "$6" -e "$7" -f "$8" -n "$9" -w "${10}" -c 0 --placement out \
    --timeout 300s --np "$np" --transport "$t" --json "$json" >/dev/null || rc=$?
  if [ "$rc" != 0 ]; then
    echo "warning: $bin bench $coll -b $6 -e $7 --np $np --transport $t exited $rc" >&2
  fi
}

# builds_side BIN SIDE RUN NP TRANSPORT COLL: every line of the plan up to MAX, then settle if
# one reached 4 MiB (once per side: the next side's small sizes must not fall in the VM's freezes,
# and settling after every large line would double the duration).
builds_side() {
  local bin=$1 side=$2 run=$3 np=$4 t=$5 coll=$6 max_b k first last factor n w big=0
  max_b=$(builds_bytes "$max")
  for k in "${!builds_plan[@]}"; do
    read -r first last factor n w <<<"${builds_plan[k]}"
    [ "$(builds_bytes "$first")" -lt "$max_b" ] || [ "$k" = 0 ] || continue
    [ "$(builds_bytes "$last")" -le "$max_b" ] || last=$max
    n=${ITERS:-$((n * 2 / np > 3 ? n * 2 / np : 3))}
    w=${WARMUP:-$((w * 2 / np > 1 ? w * 2 / np : 1))}
    builds_one "$bin" "$out/$side.$t.$coll.np$np.run$run.seg$k.jsonl" "$np" "$t" "$coll" \
      "$first" "$last" "$factor" "$n" "$w"
    if [ "$(builds_bytes "$last")" -ge $((4 << 20)) ]; then big=1; fi
  done
  if [ "$big" = 1 ]; then settle; fi
}

builds_main() {
  if [ $# -lt 2 ] || [ $# -gt 4 ]; then usage_error; fi
  old=$1 new=$2
  local runs=${3:-5} nps=${4:-2 4 8} b run np t coll side
  max=${MAX:-64M}
  [[ $runs =~ ^[1-9][0-9]*$ ]] || usage_error
  if ! [[ $nps =~ ^[0-9\ ]*[1-9][0-9\ ]*$ ]]; then usage_error; fi
  [[ $max =~ ^[1-9][0-9]*[KMG]?$ ]] || die "MAX=$max is not a size (8, 4K, 1M, 64M)"
  for b in "$old" "$new"; do need_exec "$b"; done
  out=$(results_dir builds)
  echo "old: $old"
  echo "new: $new"
  for run in $(seq 1 "$runs"); do
    for np in $nps; do
      for t in shm tcp; do
        for coll in allreduce alltoall; do
          for side in $(turns $((run - 1)) old new); do
            b=$old
            [ "$side" = new ] && b=$new
            builds_side "$b" "$side" "$run" "$np" "$t" "$coll"
          done
        done
      done
    done
    echo "run $run of $runs done at $SECONDS s"
  done
  raw_results "$out" settled
  perf_py builds "$out"
}
