"""The synthetic logs of perf/compare.sh analyze: 64 ranks on 8 hosts, about TOTAL_MB in all,
one file per rank (NCCL INFO chatter, training output, Python traceback lines), IB completion
errors on one host and a watchdog timeout on every rank. Seeded: the same logs every time.
Usage: analyze_logs.py DIR TOTAL_MB"""
import os
import random
import sys

RANKS, PER_HOST = 64, 8
BAD_HOST = 3  # the host whose ranks log the IB errors


def chatter_line(rng, hdr, r, i):
    k = rng.randrange(10)
    if k < 4:
        return ("%s NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/IPC/read\n"
                % (hdr, i % 32, r, r % 8, (r + 1) % RANKS, (r + 1) % 8))
    if k < 6:
        return ("[2024-05-01 09:%02d:%02d] [rank%d]: step %d loss %.4f lr 3.0e-4 tokens/s %d\n"
                % (i % 60, i % 60, r, i, rng.random(), rng.randrange(10**5)))
    if k < 7:
        return ("%s NCCL INFO comm 0x7f00%04x rank %d nRanks %d nNodes 8 localRanks 8 "
                "localRank %d MNNVL 0\n" % (hdr, i, r, RANKS, r % 8))
    if k < 8:
        return ("%s NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; "
                "OOB eth0:10.0.%d.%d<0>\n" % (hdr, r // 8, r % 8))
    if k < 9:
        return "%s NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n" % hdr
    return ("  File \"/opt/venv/lib/python3.10/site-packages/torch/nn/modules/module.py\", "
            "line %d, in _call_impl\n" % i)


def write_rank(out, rng, r, per_rank):
    host = "gpu-node-%02d" % (r // PER_HOST)
    hdr = "%s:%d:%d [%d]" % (host, 4000 + r, 4100 + r, r % PER_HOST)
    block = "".join(chatter_line(rng, hdr, r, i) for i in range(4000)).encode()
    with open(os.path.join(out, "rank_%d.log" % r), "wb") as f:
        f.write(("%s NCCL INFO NCCL version 2.21.5+cuda12.4\n" % hdr).encode())
        written = 0
        while written < per_rank:
            f.write(block)
            written += len(block)
        if r // PER_HOST == BAD_HOST:
            f.write(("[2024-05-01 10:00:05] %s transport/net_ib.cc:1696 NCCL WARN NET/IB : Got "
                     "completion from peer 10.0.5.17<42001> with status=12 opcode=0 len=0 "
                     "vendor err 129 (Recv)\n" % hdr).encode())
        f.write(("[2024-05-01 10:10:05] [rank%d]:[E ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog "
                 "caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, "
                 "NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600089 "
                 "milliseconds before timing out.\n" % (r, r)).encode())


def main():
    out, total_mb = sys.argv[1], int(sys.argv[2])
    rng = random.Random(7)
    for r in range(RANKS):
        write_rank(out, rng, r, total_mb * (1 << 20) // RANKS)


if __name__ == "__main__":
    main()
