#!/usr/bin/env bash
# --bind core against --bind none (the default), A/B by trial, with more ranks than cores (np 4
# and 8): every algorithm and auto taking turns at each size, 64 KiB-4 MiB, four collectives.
# Prints per point and binding: the best algorithm's time (median of trials), how far each
# algorithm's time moves between processes (max/min over trials, median over algorithms), how
# often the fastest algorithm changes between processes, and auto's time over the best's in the
# same process (median of trials). Usage: bench/bind_ab.sh [TRIALS=6]   (BUILD=build by default)
set -euo pipefail
trials=${1:-6}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
out=$(mktemp -d /tmp/ccscope-bind.XXXXXX)
for t in $(seq 1 "$trials"); do
  for bind in none core; do
    for np in 4 8; do
      for c in allreduce allgather alltoall reducescatter; do
        "$bin" bench "$c" -b 16K -e 4M -f 4 -n 20 -w 5 -c 0 --np "$np" --algo all,auto \
          --interleave --placement out --bind "$bind" --json "$out/$c.np$np.$bind.t$t.jsonl" >/dev/null
      done
    done
  done
done
echo "raw results: $out"
python3 - "$out" <<'PY'
import collections, glob, json, re, statistics, sys
t = collections.defaultdict(dict)  # (coll, np, bytes, bind, algo) -> {trial: us}
for f in glob.glob(f"{sys.argv[1]}/*.jsonl"):
    c, n, bind, tr = re.search(r"(\w+)\.np(\d+)\.(\w+)\.t(\d+)\.jsonl$", f).groups()
    for line in open(f):
        r = json.loads(line)
        if r.get("type") != "result" or r["bytes"] < 64 << 10:  # 16 KiB: the cold first size
            continue
        algo = "auto" if r.get("requested_algorithm") == "auto" else r["algorithm"]
        t[(c, int(n), r["bytes"], bind, algo)][int(tr)] = r["time_us"]
print(f"{'collective':13} {'np':>2} {'size':>5}  " + "   ".join(
    f"{b + ': best us, spread, flips, auto/best':>40}" for b in ("none", "core")))
totals = collections.defaultdict(list)
for c, n, b in sorted({k[:3] for k in t}):
    cells = []
    for bind in ("none", "core"):
        algos = {k[4]: v for k, v in t.items() if k[:4] == (c, n, b, bind) and k[4] != "auto"}
        med = {a: statistics.median(v.values()) for a, v in algos.items()}
        best = min(med, key=med.get)
        spread = statistics.median(max(v.values()) / min(v.values()) for v in algos.values())
        trials = set.intersection(*(set(v) for v in algos.values()))
        winners = [min(algos, key=lambda a: algos[a][x]) for x in trials]
        flips = sum(1 for w in winners if w != collections.Counter(winners).most_common(1)[0][0])
        auto = t.get((c, n, b, bind, "auto"), {})
        ratios = [auto[x] / algos[best][x] for x in auto if x in algos[best]]
        ab = statistics.median(ratios) if ratios else float("nan")
        totals[bind].append((med[best], spread, flips, ab))
        cells.append(f"{med[best]:12.1f} {spread:7.2f} {flips:3d}/{len(winners)} {ab:9.2f}")
    print(f"{c:13} {n:>2} {b // 1024:>4}K  " + "   ".join(f"{x:>40}" for x in cells))
for bind, v in totals.items():
    print(f"{bind}: median spread {statistics.median(x[1] for x in v):.2f}, processes whose fastest "
          f"algorithm differs from the usual {sum(x[2] for x in v)}, auto/best > 1.15 at "
          f"{sum(1 for x in v if x[3] > 1.15)} of {len(v)} points")
PY
