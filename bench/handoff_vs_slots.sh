#!/usr/bin/env bash
# Is a slow spell of the shm slot path the VM's? Each trial: the core-to-core handoff probe
# (8 KiB dirty block), then all-to-all np 2 at 64 KiB (32 KiB per peer) through the slots
# (CCSCOPE_SHM_SINGLE_COPY_FROM=64K) and by single copy (32K, the default with a core per rank),
# pairwise, out-of-place. One line per trial: handoff us, slots us, single copy us.
# Usage: bench/handoff_vs_slots.sh [TRIALS=10] [PAUSE_S=10]   (BUILD=build by default)
set -euo pipefail
trials=${1:-10}; pause=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
a2a() {
  CCSCOPE_SHM_SINGLE_COPY_FROM=$1 "$build/app/ccscope" bench alltoall -b 64K -e 64K -n 200 -w 20 \
    -c 0 --np 2 --algo pairwise --placement out | awk '!/^#/ && NF > 5 { print $6 }'
}
printf '%6s %12s %9s %12s\n' trial "handoff(us)" "slots(us)" "single(us)"
for t in $(seq 1 "$trials"); do
  h=$("$build/bench/ccscope-handoff-probe" 8192 100000 | sed 's/.*"round_trip_ns":\([0-9.]*\).*/\1/')
  printf '%6d %12.2f %9s %12s\n' "$t" "$(awk -v h="$h" 'BEGIN { print h / 1000 }')" "$(a2a 64K)" "$(a2a 32K)"
  [ "$t" -lt "$trials" ] && sleep "$pause"
done
