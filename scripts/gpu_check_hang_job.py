"""The job `scripts/gpu-check.sh --steps hang` looks into: two ranks on the one GPU (an
NCCL_HOSTID each, as NCCL refuses two ranks of one host on one device), five all_reduce steps,
then rank 1 stops calling collectives while rank 0 waits in #6. MODE python: rank 1 sleeps in
its own code; MODE kernel: rank 1 spins inside a CUDA kernel of its own (its SMs busy).
Started by torchrun; prints "stalled" once rank 1 stopped."""
import datetime
import os
import sys
import time

mode = sys.argv[1]
rank = int(os.environ["RANK"])
os.environ["NCCL_HOSTID"] = f"ccscope-hang-host{rank}"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

torch.cuda.set_device(0)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=300),
                        device_id=torch.device("cuda:0"))
x = torch.ones(1 << 20, device="cuda")
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()


def load_batch():
    time.sleep(600)


if rank == 1:
    print("stalled", flush=True)
    if mode == "python":
        load_batch()
    else:
        while True:  # about a second of spinning per call, queued back to back
            torch.cuda._sleep(2_000_000_000)
            torch.cuda.synchronize()
dist.all_reduce(x)
torch.cuda.synchronize()
