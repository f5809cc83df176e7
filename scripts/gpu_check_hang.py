"""The hang step of scripts/gpu-check.sh: a real torchrun job on the one GPU in which rank 1
stops calling collectives (asleep in its own code, then spinning in a CUDA kernel of its own);
`ccscope hang` must name rank 1 and the layer (application, then gpu) within 10 s and leave the
job running."""
import json
import os
import signal
import subprocess
import sys
import time

from gpu_check_lib import run

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = (("python", "application"), ("kernel", "gpu"))


def _torch_python():
    for py in (sys.executable, "python3"):
        try:
            if subprocess.run([py, "-c", "import torch, torch.distributed"], capture_output=True,
                              timeout=60).returncode == 0:
                return py
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def _case(r, exe, py, mode, layer):
    log = open(r.path(f"hang-{mode}.log"), "w")
    env = dict(os.environ, TORCH_NCCL_TRACE_BUFFER_SIZE="2000",
               TORCH_NCCL_DEBUG_INFO_PIPE_FILE=r.path(f"hang-{mode}-pipe_"),
               TORCH_FR_DUMP_TEMP_FILE=r.path(f"hang-{mode}-fr_"))
    job = subprocess.Popen([py, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                            os.path.join(HERE, "gpu_check_hang_job.py"), mode],
                           stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                           start_new_session=True)
    case = {"mode": mode, "expected_layer": layer}
    try:
        end = time.monotonic() + min(120, max(10, r.left() - 30))
        stalled = False
        while time.monotonic() < end and job.poll() is None and not stalled:
            line = job.stdout.readline()
            stalled = "stalled" in line
        if not stalled:
            case.update(status="fail", reason="the job did not reach its stall")
            return case
        time.sleep(3)  # rank 0 is inside all_reduce #6 by now
        out = r.path(f"hang-{mode}.json")
        t0 = time.monotonic()
        res = run([exe, "hang", "--timeout", "10", "--json", out], 30, r.path("hang.log"))
        case["seconds"] = round(time.monotonic() - t0, 1)
        case["exit"] = res.rc
        case["job_running_after"] = job.poll() is None
        try:
            d = json.load(open(out))["diagnosis"]
            case.update(layer=d["layer"], ranks=d["culprit"]["ranks"], verdict=d["verdict"])
        except (OSError, ValueError, KeyError) as e:
            case.update(status="fail", reason=f"no diagnosis in {out}: {e}")
            return case
        ok = (res.rc == 3 and case["ranks"] == [1] and case["layer"] == layer and
              case["seconds"] <= 10.5 and case["job_running_after"])
        case["status"] = "pass" if ok else "fail"
        return case
    finally:
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        job.wait()
        log.close()


def step_hang(r, a):
    exe = os.path.join(a.build_dir, "app", "ccscope")
    t0 = time.monotonic()
    if not os.access(exe, os.X_OK):
        r.record("hang", "fail", 0.0, f"not built: {exe}")
        return
    py = _torch_python()
    if py is None:
        r.record("hang", "skip", 0.0, "no Python with PyTorch here")
        return
    cases = []
    for mode, layer in CASES:
        if r.left() < 60:
            cases.append({"mode": mode, "status": "skip", "reason": "time budget"})
            continue
        cases.append(_case(r, exe, py, mode, layer))
    statuses = {c["status"] for c in cases}
    status = "fail" if "fail" in statuses else ("pass" if "pass" in statuses else "skip")
    detail = "; ".join(f"{c['mode']}: {c['status']}" +
                       (f" ({c.get('layer')}, ranks {c.get('ranks')}, {c.get('seconds')} s)"
                        if "layer" in c else f" ({c.get('reason', '')})") for c in cases)
    r.record("hang", status, time.monotonic() - t0, detail, cases=cases)
