#!/usr/bin/env bash
# What the flight recorder costs: the same allreduce sweep with recording on and off, alternating
# in one invocation, RUNS times each; prints the median time per size and the on/off ratio.
# Usage: bench/flight_overhead.sh [RUNS=5] [NP=2]
set -euo pipefail
runs=${1:-5}; np=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
out=$(mktemp -d /tmp/ccscope-flight.XXXXXX)
args=(bench allreduce --np "$np" -b 8 -e 16M -f 4 -n 200 -w 20 -c 0)
for run in $(seq 1 "$runs"); do
  CCSCOPE_FLIGHT_RECORDER=1 "$bin" "${args[@]}" --json "$out/on.$run.jsonl" >/dev/null
  CCSCOPE_FLIGHT_RECORDER=0 "$bin" "${args[@]}" --json "$out/off.$run.jsonl" >/dev/null
done
python3 - "$out" <<'PY'
import json, pathlib, statistics, sys, collections
d = collections.defaultdict(list)
for f in pathlib.Path(sys.argv[1]).glob("*.jsonl"):
    mode = f.name.split(".")[0]
    for line in f.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "result" and not r["in_place"]:
            d[(mode, r["bytes"])].append((r["time_us"], r["lat_us"]["p50"]))
sizes = sorted({b for _, b in d})
print(f"{'size':>10} {'on mean':>9} {'off mean':>9} {'ratio':>6} | {'on p50':>8} {'off p50':>8} {'ratio':>6}")
for b in sizes:
    on, off = d[("on", b)], d[("off", b)]
    m_on, m_off = statistics.median(x[0] for x in on), statistics.median(x[0] for x in off)
    p_on, p_off = statistics.median(x[1] for x in on), statistics.median(x[1] for x in off)
    print(f"{b:>10} {m_on:9.2f} {m_off:9.2f} {m_on / m_off:6.3f} | {p_on:8.2f} {p_off:8.2f} {p_on / p_off:6.3f}")
PY
