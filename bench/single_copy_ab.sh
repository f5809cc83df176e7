#!/usr/bin/env bash
# The shm transport's single-copy threshold (messages from this size go by one process_vm_readv
# instead of through the ring's 8 KiB slots) against lower values, A/B: each trial runs every
# threshold in turn, np 2, 4 and 8, four collectives, every algorithm taking turns, 2 KiB-256 KiB.
# Prints, per point, each threshold's time over the default's in the same trial (median over
# trials) for the fastest algorithm at the default. Usage: bench/single_copy_ab.sh [TRIALS=10]
# [THRESHOLDS="65536 16384 8192"] (the first is the reference; BUILD=build by default).
set -euo pipefail
trials=${1:-10}; thresholds=${2:-65536 16384 8192}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD:-$root/build}/app/ccscope
out=$(mktemp -d /tmp/ccscope-single-copy.XXXXXX)
for t in $(seq 1 "$trials"); do
  for sc in $thresholds; do
    for np in 2 4 8; do
      for c in allreduce alltoall allgather reducescatter; do
        CCSCOPE_SHM_SINGLE_COPY_FROM=$sc "$bin" bench "$c" -b 2K -e 256K -f 2 -n 100 -w 10 -c 0 \
          --np "$np" --algo all --interleave --placement out \
          --json "$out/$c.np$np.sc$sc.t$t.jsonl" >/dev/null
      done
    done
  done
done
echo "raw results: $out"
python3 - "$out" $thresholds <<'PY'
import collections, glob, json, re, statistics, sys
out, ref, others = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3:]]
t = collections.defaultdict(dict)  # (coll, np, bytes, algo, threshold) -> {trial: us}
for f in glob.glob(f"{out}/*.jsonl"):
    c, n, sc, tr = re.search(r"(\w+)\.np(\d+)\.sc(\d+)\.t(\d+)\.jsonl$", f).groups()
    for line in open(f):
        r = json.loads(line)
        if r.get("type") == "result" and r["bytes"] > 2048:  # the first size is cold
            t[(c, int(n), r["bytes"], r["algorithm"], int(sc))][int(tr)] = r["time_us"]
points = sorted({k[:3] for k in t})
print("fastest algorithm at the default; its time (us, median of trials) and, per lower "
      "threshold, its time there over the default's in the same trial (median of trials)")
print(f"{'collective':13} {'np':>2} {'size':>6} {'algorithm':>18} {ref:>8} " +
      " ".join(f"{o:>7}" for o in others))
for c, n, b in points:
    algos = {k[3] for k in t if k[:3] == (c, n, b)}
    med = {a: statistics.median(t[(c, n, b, a, ref)].values()) for a in algos if t.get((c, n, b, a, ref))}
    best = min(med, key=med.get)
    cells = []
    for o in others:
        x, y = t[(c, n, b, best, ref)], t.get((c, n, b, best, o), {})
        rs = [y[k] / x[k] for k in x if k in y]
        cells.append(f"{statistics.median(rs):7.2f}" if rs else f"{'-':>7}")
    print(f"{c:13} {n:>2} {b // 1024:>5}K {best:>18} {med[best]:8.1f} " + " ".join(cells))
PY
