#!/usr/bin/env bash
# Whole-VM freezes after a run that frees a lot of memory: ccscope-freeze-probe (one spinner per
# CPU, gaps over 4 ms) for SECONDS on a settled machine, then right after an all-algorithm
# all-to-all sweep up to 64 MiB at np 8 exits (it frees several GiB), then again after settling.
# On a VM whose kernel reports free pages to the host, the second probe sees every vCPU stop at
# once, again and again, while the reported counter climbs; the first and third see nothing.
# Usage: bench/host_freeze.sh [SECONDS=8]   (BUILD=build by default)
set -euo pipefail
secs=${1:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
. "$root/bench/settle.sh"
probe() { "$build/bench/ccscope-freeze-probe" "$secs" | tail -1; }
settle
echo "settled machine:           $(probe)"
"$build/app/ccscope" bench alltoall -b 4M -e 64M -f 4 -n 10 -w 2 -c 0 --np 8 --transport shm \
  --algo all,auto --interleave --placement out >/dev/null
echo "right after a 64 MiB run:  $(probe)"
SETTLED_S=0
settle
echo "settled again (after $SETTLED_S s): $(probe)"
