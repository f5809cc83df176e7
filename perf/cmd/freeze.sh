# perf/compare.sh freeze (sourced by perf/compare.sh). docs/performance.md, "Measuring on small
# shared machines".

freeze_about() {
  cat <<'TXT'
Whole-VM freezes after a run that frees a lot of memory: ccscope-freeze-probe (one spinner per
CPU, gaps over 4 ms) for SECONDS on a settled machine, then right after an all-algorithm
all-to-all sweep up to 64 MiB at np 8 exits (it frees several GiB), then again after settle. On a
VM whose kernel reports free pages to the host, the second probe sees every vCPU stop at once,
again and again, while the reported counter climbs; the first and third see nothing.
TXT
}

freeze_main() {
  local secs=${1:-8} freeze
  need_exec "$ccscope"
  freeze=$(probe freeze-probe)
  settle
  echo "settled machine:           $("$freeze" "$secs" | tail -1)"
  "$ccscope" bench alltoall -b 4M -e 64M -f 4 -n 10 -w 2 -c 0 --np 8 --transport shm \
    --algo all,auto --interleave --placement out >/dev/null
  echo "right after a 64 MiB run:  $("$freeze" "$secs" | tail -1)"
  SETTLED_S=0
  settle
  echo "settled again (after $SETTLED_S s): $("$freeze" "$secs" | tail -1)"
}
