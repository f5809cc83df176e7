#!/usr/bin/env bash
# The one entry point of the A/B and comparison runs: perf/compare.sh <what> [args]. Each <what>
# is perf/cmd/<what>.sh (functions <what>_main and <what>_about, dashes as underscores); what they
# share is perf/lib.sh and, for the summaries, perf/py/perfdata.py.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Name, arguments, what it compares: the --help lines and each subcommand's usage line.
commands=(
  mpi "[RUNS=3] [MIN=4K] [MAX=256M]"
  "our ring allreduce over shm and tcp vs Open MPI vader and tcp, np 2 and 4, plus memcpy"
  algorithms "[RUNS=3] [NPS=\"2 4 8\"]"
  "every algorithm and --algo auto vs Open MPI's collectives over shm; goals checked"
  latency "OLD_BIN NEW_BIN [TRIALS=6] [NPS=\"2 4 8\"]"
  "two ccscope builds A/B plus Open MPI, taking turns: 8 B allreduce p50 (or BENCH=...)"
  builds "OLD_BIN NEW_BIN [RUNS=5] [NPS=\"2 4 8\"]"
  "two ccscope builds, shm and tcp allreduce/alltoall 8 B-64 MiB: slower beyond spread?"
  points "COLL NP FROM TO [TRIALS=12]"
  "one collective at one np, ours (every algorithm, auto) vs Open MPI, many trials"
  pages "[RUNS=3] [MIN=1M] [MAX=64M]"
  "host buffers on huge pages vs base pages: our and Open MPI's allreduce/alltoall, memcpy"
  bind "[TRIALS=6]"
  "--bind core vs --bind none at np 4 and 8, four collectives, every algorithm and auto"
  single-copy "[TRIALS=10] [THRESHOLDS=\"65536 16384 8192\"]"
  "the shm single-copy threshold (first) vs lower ones, np 2/4/8, four collectives"
  flight "[RUNS=9] [NP=2]"
  "allreduce with the flight recorder on vs off, paired, plus the per-operation cost probe"
  handoff "[TRIALS=10] [PAUSE_S=10]"
  "core-to-core handoff probe vs all-to-all np 2 at 64 KiB through slots and by single copy"
  freeze "[SECONDS=8]"
  "whole-VM freezes seen by the freeze probe before and after a 64 MiB np 8 run"
  analyze "[RUNS=3]"
  "ccscope analyze on ~1 GB of synthetic multi-rank logs: wall seconds and max RSS"
  ucx "[RUNS=5] [MIN=1M] [MAX=64M]"
  "our ring allreduce over UCX (sm, tcp) vs our shm and tcp, with Open MPI's pml ucx"
  model "[RUNS=3] [MIN=1M] [MAX=32M]"
  "ccscope model: fitted to shm/tcp allreduce at np 2 and 4, np 8 predicted vs measured"
)

help_all() {
  echo "usage: perf/compare.sh <what> [args]   (perf/compare.sh <what> --help for one)"
  echo "env: BUILD=build directory (default build), CCSCOPE=binary (default \$BUILD/app/ccscope)"
  local i
  for ((i = 0; i < ${#commands[@]}; i += 3)); do
    printf '  %-11s %-45s %s\n' "${commands[i]}" "${commands[i + 1]}" "${commands[i + 2]}"
  done
}

# index_of NAME: the position of NAME's triple in commands, or nothing.
index_of() {
  local i
  for ((i = 0; i < ${#commands[@]}; i += 3)); do
    if [ "${commands[i]}" = "$1" ]; then echo "$i"; fi
  done
}

usage_line() {
  local i
  i=$(index_of "$1")
  echo "usage: perf/compare.sh $1 ${commands[i + 1]}"
  echo "${commands[i + 2]}"
}

# usage_error: the running subcommand's usage on stderr, exit 2 (for its argument checks).
usage_error() {
  usage_line "$what" >&2
  exit 2
}

main() {
  what=${1:---help}
  case $what in
    -h | --help | help)
      help_all
      exit 0
      ;;
  esac
  [ -n "$(index_of "$what")" ] ||
    die "unknown subcommand '$what' (perf/compare.sh --help lists them)"
  shift
  local fn=${what//-/_}
  . "$perf_dir/cmd/$what.sh"
  if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
    usage_line "$what"
    "${fn}_about"
    exit 0
  fi
  "${fn}_main" "$@"
}

main "$@"
