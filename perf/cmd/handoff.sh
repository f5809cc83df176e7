# perf/compare.sh handoff (sourced by perf/compare.sh). docs/performance.md, "Measuring on small
# shared machines".

handoff_about() {
  cat <<'TXT'
Is a slow spell of the shm slot path the VM's? Each trial: the core-to-core handoff probe (8 KiB
dirty block, ccscope-handoff-probe), then all-to-all np 2 at 64 KiB (32 KiB per peer) through the
slots (CCSCOPE_SHM_SINGLE_COPY_FROM=64K) and by single copy (32K), pairwise, out-of-place, then
PAUSE_S seconds. One line per trial: handoff us, slots us, single copy us.
TXT
}

# handoff_a2a THRESHOLD: the time column of one all-to-all row.
handoff_a2a() {
  CCSCOPE_SHM_SINGLE_COPY_FROM=$1 "$ccscope" bench alltoall -b 64K -e 64K -n 200 -w 20 -c 0 \
    --np 2 --algo pairwise --placement out | awk '!/^#/ && NF > 5 { print $6 }'
}

handoff_main() {
  local trials=${1:-10} pause=${2:-10} handoff t ns
  need_exec "$ccscope"
  handoff=$(probe handoff-probe)
  printf '%6s %12s %9s %12s\n' trial "handoff(us)" "slots(us)" "single(us)"
  for t in $(seq 1 "$trials"); do
    ns=$("$handoff" 8192 100000 | sed 's/.*"round_trip_ns":\([0-9.]*\).*/\1/')
    printf '%6d %12.2f %9s %12s\n' "$t" "$(awk -v h="$ns" 'BEGIN { print h / 1000 }')" \
      "$(handoff_a2a 64K)" "$(handoff_a2a 32K)"
    if [ "$t" -lt "$trials" ]; then sleep "$pause"; fi
  done
}
