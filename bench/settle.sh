# Sourced by the benchmark scripts. settle: wait until the guest kernel has stopped handing freed
# memory back to the host (virtio-balloon free page reporting), so that a timed run does not fall
# in the storm of whole-VM freezes that follows a run which freed a lot of memory: on the
# development VM, each 64 MiB reported stops every vCPU for 32-36 ms, the reporting starts about
# 1.3 s after the memory is freed, and comes in waves 2 s apart (bench/host_freeze.sh,
# docs/performance.md). Quiet means the counter unchanged for SETTLE_QUIET_MS (default 2500:
# longer than the 2 s between waves); gives up after SETTLE_MAX_S (default 60). A no-op where the
# kernel has no free page reporting, or with SETTLE=0. Adds the seconds waited to SETTLED_S.
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
    if [ "$v" = "$last" ]; then still_ms=$((still_ms + 250)); else still_ms=0; last=$v; fi
  done
  SETTLED_S=$((SETTLED_S + SECONDS - start))
}
