#!/usr/bin/env bash
# What the flight recorder costs (with the straggler sampler that reads it): the same allreduce
# with recording on and off, back to back (alternating which goes first), RUNS pairs; the ratio
# on/off is taken per pair (the two halves of a pair see the same phase of a noisy shared VM)
# and its median printed per size.
# Small sizes: ring and recursive doubling, many iterations; large sizes: ring.
# Usage: bench/flight_overhead.sh [RUNS=9] [NP=2]
set -euo pipefail
runs=${1:-9}; np=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
cost=${BUILD:-$root/build}/bench/ccscope-flight-cost
out=$(mktemp -d /tmp/ccscope-flight.XXXXXX)
small=(bench allreduce --np "$np" -b 8 -e 1K -f 8 -n 20000 -w 2000 -c 0 --algo ring,recursive_doubling)
large=(bench allreduce --np "$np" -b 1M -e 16M -f 4 -n 40 -w 4 -c 0)
for run in $(seq 1 "$runs"); do
  for part in small large; do
    if [ "$part" = small ]; then args=("${small[@]}"); else args=("${large[@]}"); fi
    modes="on off"; [ $((run % 2)) -eq 0 ] && modes="off on"  # neither side always goes first
    for mode in $modes; do
      flag=1; [ "$mode" = off ] && flag=0
      CCSCOPE_FLIGHT_RECORDER=$flag "$bin" "${args[@]}" --json "$out/$mode.$part.$run.jsonl" >/dev/null
    done
  done
done
echo "raw results: $out"
python3 - "$out" <<'PY'
import collections, json, pathlib, statistics, sys
d = collections.defaultdict(dict)  # (algo, bytes) -> {(mode, run): (mean, p50)}
for f in pathlib.Path(sys.argv[1]).glob("*.jsonl"):
    mode, _, run = f.name.split(".")[:3]
    for line in f.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "result" and not r["in_place"]:
            d[(r["algorithm"], r["bytes"])][(mode, run)] = (r["time_us"], r["lat_us"]["p50"])
print(f"{'algorithm':>18} {'size':>9} {'on p50':>8} {'off p50':>8} | median of per-pair on/off: "
      f"{'mean':>6} {'p50':>6}  (pairs)")
for (algo, b), v in sorted(d.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    runs = sorted({run for _, run in v})
    pairs = [(v[("on", r)], v[("off", r)]) for r in runs if ("on", r) in v and ("off", r) in v]
    if not pairs:
        continue
    mean_ratio = statistics.median(on[0] / off[0] for on, off in pairs)
    p50_ratio = statistics.median(on[1] / off[1] for on, off in pairs)
    on_p50 = statistics.median(on[1] for on, _ in pairs)
    off_p50 = statistics.median(off[1] for _, off in pairs)
    print(f"{algo:>18} {b:>9} {on_p50:8.2f} {off_p50:8.2f} | {'':>27}{mean_ratio:6.3f} "
          f"{p50_ratio:6.3f}  ({len(pairs)})")
PY
"$cost"
