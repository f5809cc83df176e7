#!/usr/bin/env bash
# Benchmark of `ccscope analyze`: generates ~1 GB of synthetic multi-rank logs (64 ranks on 8
# hosts: NCCL INFO chatter, training output, one host with IB retry-exceeded errors, watchdog
# timeouts everywhere) in /tmp, then runs the analyzer on them under /usr/bin/time -v several
# times and prints wall seconds and max RSS per run and the median. Goal: < 60 s, < 500 MB.
# Usage: scripts/bench-analyze.sh [runs]   env: CCSCOPE=path/to/ccscope, BENCH_MB=1024
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CCSCOPE="${CCSCOPE:-$ROOT/build/app/ccscope}"
RUNS="${1:-3}"
TOTAL_MB="${BENCH_MB:-1024}"
DATA="${BENCH_DIR:-/tmp/ccscope-bench-analyze}"
[[ -x "$CCSCOPE" ]] || { echo "bench-analyze: no ccscope binary at $CCSCOPE (set CCSCOPE=)" >&2; exit 2; }

if [[ ! -f "$DATA/.done-$TOTAL_MB" ]]; then
  rm -rf "$DATA" && mkdir -p "$DATA"
  python3 - "$DATA" "$TOTAL_MB" <<'PY'
import os, random, sys
out, total_mb = sys.argv[1], int(sys.argv[2])
ranks, per_host = 64, 8
per_rank = total_mb * (1 << 20) // ranks
rng = random.Random(7)
for r in range(ranks):
    host = "gpu-node-%02d" % (r // per_host)
    hdr = "%s:%d:%d [%d]" % (host, 4000 + r, 4100 + r, r % per_host)
    chunk = []
    for i in range(4000):
        k = rng.randrange(10)
        if k < 4:
            chunk.append("%s NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read\n"
                         % (hdr, i % 32, r, r % 8, (r + 1) % ranks, (r + 1) % 8))
        elif k < 6:
            chunk.append("[2024-05-01 09:%02d:%02d] [rank%d]: step %d loss %.4f lr 3.0e-4 tokens/s %d\n"
                         % (i % 60, i % 60, r, i, rng.random(), rng.randrange(10**5)))
        elif k < 7:
            chunk.append("%s NCCL INFO comm 0x7f00%04x rank %d nRanks %d nNodes 8 localRanks 8 localRank %d MNNVL 0\n"
                         % (hdr, i, r, ranks, r % 8))
        elif k < 8:
            chunk.append("%s NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.%d.%d<0>\n"
                         % (hdr, r // 8, r % 8))
        elif k < 9:
            chunk.append("%s NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n" % hdr)
        else:
            chunk.append("  File \"/opt/venv/lib/python3.10/site-packages/torch/nn/modules/module.py\", line %d, in _call_impl\n" % i)
    block = "".join(chunk).encode()
    with open(os.path.join(out, "rank_%d.log" % r), "wb") as f:
        f.write(("%s NCCL INFO NCCL version 2.21.5+cuda12.4\n" % hdr).encode())
        written = 0
        while written < per_rank:
            f.write(block)
            written += len(block)
        if r // per_host == 3:
            f.write(("[2024-05-01 10:00:05] %s transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                     "from peer 10.0.5.17<42001> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n" % hdr).encode())
        f.write(("[2024-05-01 10:10:05] [rank%d]:[E ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
                 "Timeout(ms)=600000) ran for 600089 milliseconds before timing out.\n" % (r, r)).encode())
PY
  touch "$DATA/.done-$TOTAL_MB"
fi
echo "bench-analyze: $(du -sh "$DATA" | cut -f1) in $(ls "$DATA" | wc -l) files, $RUNS run(s), $CCSCOPE"

secs=(); rss=()
for i in $(seq 1 "$RUNS"); do
  set +e
  /usr/bin/time -v "$CCSCOPE" analyze "$DATA" --json /tmp/ccscope-bench-analyze.json \
    > /tmp/ccscope-bench-analyze.txt 2> /tmp/ccscope-bench-analyze.time
  rc=$?
  set -e
  [[ $rc -le 1 ]] || { cat /tmp/ccscope-bench-analyze.time >&2; exit 1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(k=1;k<=n;k++) s=s*60+t[k]; print s}' /tmp/ccscope-bench-analyze.time)
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' /tmp/ccscope-bench-analyze.time)
  secs+=("$wall"); rss+=("$((kb / 1024))")
  echo "run $i: ${wall} s, max RSS $((kb / 1024)) MB, exit $rc"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median: $(median "${secs[@]}") s, max RSS $(median "${rss[@]}") MB (goal < 60 s, < 500 MB)"
grep -E '^(Layer|Verdict|Hosts|Links):' /tmp/ccscope-bench-analyze.txt || true
