# Sourced by perf/compare.sh: what the comparisons share (paths, Open MPI's launcher, the result
# directory, settling between runs, the order of turns, medians, the Python summaries).

perf_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$perf_dir/.." && pwd)
build=${BUILD:-$root/build}
ccscope=${CCSCOPE:-$build/app/ccscope}
python=${PYTHON:-python3}

# die MESSAGE: one line on stderr, exit 2 (a usage or set-up error).
die() {
  echo "perf/compare.sh: $*" >&2
  exit 2
}

# need_exec PATH: exit 2 unless PATH is an executable.
need_exec() {
  [ -x "$1" ] || die "not an executable: $1 (build with cmake --build build, or set BUILD=)"
}

# probe NAME: the path of a probe program from perf/probes (target ccscope-NAME), built.
probe() {
  need_exec "$build/perf/ccscope-$1"
  echo "$build/perf/ccscope-$1"
}

# ompi BTLS NP ARGS...: Open MPI's launcher as every comparison runs it: as root, more ranks than
# cores allowed, unbound (as our ranks are), the ob1 PML over BTLS (self,vader is the shared
# memory path that competes with our shm transport; self,tcp the one that competes with tcp).
ompi() {
  local btl=$1 np=$2
  shift 2
  mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl "$btl" \
    -np "$np" "$@"
}

# results_dir NAME: a fresh directory under /tmp for the raw JSON Lines, kept afterwards.
results_dir() {
  mktemp -d "/tmp/ccscope-$1.XXXXXX"
}

# raw_results DIR [settled]: says where the raw results are (and, with settled, how long settle
# waited in all).
raw_results() {
  if [ "${2:-}" = settled ]; then
    echo "raw results: $1 (waited $SETTLED_S s for free page reporting to settle)"
  else
    echo "raw results: $1"
  fi
}

# perf_py NAME ARGS...: runs perf/py/NAME.py (a summary takes the result directory first).
perf_py() {
  local name=$1
  shift
  PYTHONDONTWRITEBYTECODE=1 "$python" "$perf_dir/py/$name.py" "$@"
}

# turns SHIFT SIDE...: the sides rotated left by SHIFT. Callers pass the trial number, so which
# side goes first changes from trial to trial and a slow spell of a shared VM falls on each alike.
turns() {
  local k=$(($1 % ($# - 1)))
  shift
  echo "${@:k+1}" "${@:1:k}"
}

# median NUMBER...: the median (the lower middle one of an even count).
median() {
  printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# settle: wait until the guest kernel has stopped handing freed memory back to the host
# (virtio-balloon free page reporting), so that a timed run does not fall in the whole-VM freezes
# that follow a run which freed a lot of memory (docs/performance.md, "Measuring on small shared
# machines": the reporting starts about 1.3 s after the memory is freed and comes in waves 2 s
# apart). Quiet means the counter unchanged for SETTLE_QUIET_MS (default 2500, longer than the
# gap between waves); gives up after SETTLE_MAX_S (default 60). A no-op where the kernel has no
# free page reporting, or with SETTLE=0. Adds the seconds waited to SETTLED_S.
SETTLED_S=0
settle() {
  local f=/sys/module/page_reporting/parameters/reported_kib
  [ "${SETTLE:-1}" != 0 ] && [ -r "$f" ] || return 0
  local quiet_ms=${SETTLE_QUIET_MS:-2500} max_s=${SETTLE_MAX_S:-60} start=$SECONDS
  local last still_ms=0 v
  last=$(cat "$f")
  while [ "$still_ms" -lt "$quiet_ms" ] && [ $((SECONDS - start)) -lt "$max_s" ]; do
    sleep 0.25
    v=$(cat "$f")
    if [ "$v" = "$last" ]; then still_ms=$((still_ms + 250)); else still_ms=0 last=$v; fi
  done
  SETTLED_S=$((SETTLED_S + SECONDS - start))
}
