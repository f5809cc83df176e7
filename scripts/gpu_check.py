"""scripts/gpu-check.sh: the one command for a machine with one NVIDIA GPU. Configures and builds
ccscope in build/gpu against the dependency pack (scripts/pack-gpu-deps.sh), then runs, each
timed and each with its own status (pass, fail, or skip with the reason):

  configure, build  cmake (Ninja where it is found), RelWithDebInfo, sm_90; the build's -j is nproc
  relocate          with --no-build: a build tree made elsewhere (scripts/pack-gpu-build.sh)
                    gets links at the absolute paths it was made at; its libraries are checked
  gpu-info          nvidia-smi -L and the GPU's name, driver, memory, compute capability
  ctest             ctest -R '^gpu\\.' -j nproc (the GoogleTest binaries under tests/cuda/), from
                    JUnit, --ctest-runs times: pass = no run with a failing test
  kernel-bench      tests/cuda/kernels/cuda_kernel_bench: pass when both ratios are >= 0.85
  sanitizer         compute-sanitizer --tool memcheck on tests/cuda/kernels/cuda_kernels_test
  bench             ccscope bench, every collective x (cuda-ipc, shm, tcp) x (np 2, 4), --device
                    cuda, --algo all, 1K..4M: pass = exit 0; rows and wrong rows from the JSON
  concurrency       N jobs at once (each N of --concurrency) of ccscope bench over cuda-ipc,
                    --device cuda, --algo all, 1K..1M, at np 2 and 4, the collectives in turn
                    (N >= 7: every one in each batch), each job with its own launcher's job token,
                    --concurrency-runs times: pass = every job exits 0 with no wrong row
  nccl              every collective over --transport nccl at np 1 (--algo all: our schedules and
                    NCCL's own); one allreduce at np 2 on the one GPU, recorded (NCCL may refuse
                    two ranks on one device)
  fault             tests/mp/faults_test.py `fault kill T 4 2` with --device cuda over cuda-ipc
                    and shm: the survivors exit 3 within --timeout + 5 s, naming the victim
  nccl-faults       NCCL's allreduce with -R 1 and -R 2; allreduce and alltoall in CUDA graphs
                    (-G 4, checked); allreduce with -z 0 (checked); a wrong NCCL_SOCKET_IFNAME (exit 2 or 3 and the
                    host-network verdict from NCCL's log); np 2 with an NCCL_HOSTID per rank;
                    then rank 1 of those two SIGKILLed: rank 0 exits 3 within --timeout + 5 s,
                    naming rank 1
  hang              a torchrun job of two ranks on the one GPU where rank 1 stops calling
                    collectives, asleep in its own code, then spinning in a CUDA kernel of its
                    own: `ccscope hang` exits 3 naming rank 1 and the layer (application, gpu)
                    within 10 s, the job still running (skipped without PyTorch)
  perf              cuda-ipc against its hardware bounds (scripts/gpu_check_perf.py): the D2D
                    copy; sendrecv p50 at 8 B and busbw at 64 MiB and 512 MiB; allreduce, every
                    algorithm and auto, at np 2 and 4, 16 MiB..1 GiB; each as a ratio to its
                    bound, and the path cuda-ipc took: pass = every goal met (perf.json)

The whole run keeps to a time budget (default 420 s): a step that would not fit is skipped with
the reason "time budget". Writes $OUT/gpu-check.json (default build/gpu-check/) after every
step, and next to it build.log, gpu.log, ctest-gpu.xml (the first failing ctest run's, else the
last's), bench.jsonl, bench.log (the concurrency jobs' output too), faults.log, nccl-faults.log, hang.log,
hang-<mode>.json/log, perf.log and perf.json.
Exits 0 once the summary is written, 1 when the build could not even be configured, or a carried
build tree could not be linked to its paths (relocate).

Environment: GPU_CHECK_CUDA_ARCHITECTURES (default 90), GPU_CHECK_CMAKE_ARGS (more configure
arguments, shell words), GPU_CHECK_DEPS (the pack, default build/gpu-deps), GPU_CHECK_BUDGET_S,
GPU_CHECK_BUILD_LOCK (a file that flock serializes builds on, default /tmp/ccscope-build.lock
where flock exists; empty: none), GPU_CHECK_NCCL (0: do not look for the pip NCCL package).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_check_bench  # noqa: E402
import gpu_check_hang  # noqa: E402
import gpu_check_nccl  # noqa: E402
import gpu_check_perf  # noqa: E402
import gpu_check_relocate  # noqa: E402
from gpu_check_lib import (Runner, cache_value, junit_counts, last_json_object,  # noqa: E402
                           pip_nccl, run, skip_reason)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = ("configure", "build", "gpu-info", "ctest", "kernel-bench", "sanitizer", "bench",
         "concurrency", "nccl", "fault", "nccl-faults", "hang", "perf")
KERNELS = "tests/cuda/kernels"
MIN_RATIO = 0.85


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="scripts/gpu-check.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-build", action="store_true",
                    help="reuse the configured and built build directory (configure and build "
                    "skipped); one made at other paths is linked to them first (relocate)")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="comma-separated steps to run (default: all, in the order above)")
    ap.add_argument("--budget", type=float,
                    default=float(os.environ.get("GPU_CHECK_BUDGET_S", "420")),
                    help="seconds for the whole run (default 420)")
    ap.add_argument("--ctest-runs", type=positive, default=1, metavar="N",
                    help="run the ctest step's ctest N times; it fails if any run has a failing "
                    "test (default 1)")
    ap.add_argument("--concurrency", type=job_counts, default=[4, 8], metavar="N,...",
                    help="the concurrency step's numbers of jobs at once (default 4,8)")
    ap.add_argument("--concurrency-runs", type=positive, default=3, metavar="N",
                    help="how many times the concurrency step runs each batch (default 3)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "gpu"),
                    help="the build tree (default build/gpu); with --no-build also one made "
                    "elsewhere, e.g. build/gpu-carry of scripts/pack-gpu-build.sh")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "build",
                                                                          "gpu-check"))
    a = ap.parse_args(argv)
    a.steps = [s for s in a.steps.split(",") if s]
    unknown = [s for s in a.steps if s not in STEPS]
    if unknown:
        ap.error(f"unknown steps {unknown}; known: {', '.join(STEPS)}")
    if a.no_build:
        a.steps = [s for s in a.steps if s not in ("configure", "build")]
    a.build_dir = os.path.abspath(a.build_dir)
    a.out = os.path.abspath(a.out)
    return a


def positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def job_counts(text):
    try:
        return [positive(x) for x in text.split(",") if x.strip()] or [4, 8]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"a comma-separated list of job counts: {e}") from e


def configure_args(a, deps):
    cached = cache_value(a.build_dir, "CMAKE_GENERATOR")
    gen = cached or ("Ninja" if shutil.which("ninja") else "Unix Makefiles")
    archs = os.environ.get("GPU_CHECK_CUDA_ARCHITECTURES", "90")
    args = ["cmake", "-S", ROOT, "-B", a.build_dir, "-G", gen, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            f"-DCMAKE_PREFIX_PATH={deps}", f"-DCMAKE_CUDA_ARCHITECTURES={archs}"]
    notes = [gen + (" (as cached)" if cached else ""), f"sm_{archs}"]
    cuda_nccl = [os.path.join(d, "libnccl.so") for d in ("/usr/local/cuda/lib64",
                                                          "/usr/local/cuda/lib")]
    nccl = None if any(map(os.path.exists, cuda_nccl)) else pip_nccl()
    if nccl:
        args += [f"-DNCCL_LIBRARY={nccl[0]}", f"-DNCCL_INCLUDE_DIR={nccl[1]}"]
        notes.append(f"NCCL {nccl[0]}")
    args += shlex.split(os.environ.get("GPU_CHECK_CMAKE_ARGS", ""))
    return args, notes


def step_configure(r, a):
    deps = os.path.abspath(os.environ.get("GPU_CHECK_DEPS", os.path.join(ROOT, "build",
                                                                         "gpu-deps")))
    args, notes = configure_args(a, deps)
    if not os.path.isdir(deps):
        notes.append(f"no pack at {deps}: system packages only")
    res = run(args, min(240, r.left()), r.path("build.log"))
    cuda = re.search(r"ccscope: (CUDA kernels for [^\n]*|no nvcc[^\n]*)", res.out)
    notes.append(cuda.group(1) if cuda else "CUDA: not reported")
    if res.rc != 0:
        what = "timed out" if res.timed_out else f"exit {res.rc}"
        r.record("configure", "fail", res.seconds, f"cmake {what}: {error_lines(res)}",
                 command=shlex.join(args))
        return False
    r.record("configure", "pass", res.seconds, ", ".join(notes), command=shlex.join(args))
    return True


def error_lines(res, n=4):
    """The failed targets and the compiler's or CMake's first errors."""
    text = res.err + res.out
    errs = [ln.strip()[:300] for ln in text.splitlines()
            if re.search(r"^FAILED:|error:|^CMake Error|\*\*\* \[", ln.strip())]
    return " | ".join(errs[:n]) if errs else res.last_lines(n)


def step_build(r, a):
    jobs = str(os.cpu_count() or 2)
    # Keep going past a failing target: the steps after it use whatever did build.
    keep_going = ["-k", "0"] if cache_value(a.build_dir, "CMAKE_GENERATOR") == "Ninja" else ["-k"]
    args = ["cmake", "--build", a.build_dir, "-j", jobs, "--", *keep_going]
    lock = os.environ.get("GPU_CHECK_BUILD_LOCK", "/tmp/ccscope-build.lock")
    if lock and shutil.which("flock"):
        args = ["flock", lock] + args
    # The tests after it need about two minutes; the build gets the rest, at least one.
    res = run(args, max(60, r.left() - 120), r.path("build.log"))
    if res.rc != 0:
        what = "timed out" if res.timed_out else f"exit {res.rc}"
        r.record("build", "fail", res.seconds, f"build {what}: {error_lines(res)}")
        return
    r.record("build", "pass", res.seconds, f"-j{jobs}")


def step_gpu_info(r, a):
    smi = shutil.which("nvidia-smi")
    if not smi:
        r.summary["gpu"] = "none: nvidia-smi not found"
        r.record("gpu-info", "skip", 0.0, "nvidia-smi not found")
        return
    log = r.path("gpu.log")
    res = run([smi, "-L"], 30, log)
    query = run([smi, "--query-gpu=name,driver_version,memory.total,compute_cap",
                 "--format=csv,noheader"], 30, log)
    gpus = [ln.strip() for ln in res.out.splitlines() if ln.startswith("GPU ")]
    seconds = res.seconds + query.seconds
    if res.rc != 0 or not gpus:
        r.summary["gpu"] = f"none: {res.last_lines(2)}"
        r.record("gpu-info", "fail", seconds, f"nvidia-smi -L exit {res.rc}: {res.last_lines(2)}")
        return
    r.summary["gpu"] = gpus[0] if len(gpus) == 1 else "; ".join(gpus)
    r.record("gpu-info", "pass", seconds, query.out.strip() or gpus[0], gpus=gpus)


def ctest_once(r, a, k, junit):
    """One run of ctest -R '^gpu\\.' (the GoogleTest binaries under tests/cuda/, named gpu.*), one
    CUDA context per test process, -j nproc: {"run", "status", "seconds", "detail", ...}."""
    if os.path.exists(junit):
        os.remove(junit)
    jobs = str(os.cpu_count() or 2)
    args = ["ctest", "-R", r"^gpu\.", "-j", jobs, "--output-junit", junit, "--output-on-failure"]
    res = run(args, min(300, r.left() - 90), r.path("gpu.log"), cwd=a.build_dir)
    one = {"run": k, "seconds": round(res.seconds, 1), "rc": res.rc, "jobs": int(jobs)}
    if res.timed_out or not os.path.exists(junit):
        why = "timed out" if res.timed_out else f"exit {res.rc}, no JUnit file"
        return {**one, "status": "fail", "detail": f"ctest {why}: {res.last_lines(2)}"}
    passed, failed, skipped, reason, failures = junit_counts(junit)
    one["counts"] = {"passed": passed, "failed": failed, "skipped": skipped}
    if failed or (res.rc != 0 and not passed + skipped):
        return {**one, "status": "fail", "failures": failures,
                "detail": f"{failed} failed ({', '.join(failures[:5])}), {passed} passed, "
                          f"{skipped} skipped"}
    if passed:
        return {**one, "status": "pass", "detail": f"{passed} passed, {skipped} skipped"}
    if skipped:
        return {**one, "status": "skip", "detail": f"all {skipped} skipped: {reason or '?'}"}
    return {**one, "status": "skip", "detail": "no GPU tests found"}


def step_ctest(r, a):
    """--ctest-runs runs of ctest; ctest-gpu.xml keeps the first failing run's JUnit, else the
    last's. A run that would not fit after the slowest one is skipped (time budget)."""
    scratch = os.path.join(a.build_dir, "gpu-check-ctest")
    os.makedirs(scratch, exist_ok=True)
    runs, kept_failure, slowest = [], False, 0.0
    for k in range(1, a.ctest_runs + 1):
        if k > 1 and (r.left() - 90 < slowest or runs[0]["status"] == "skip"):
            why = "the first run skipped" if runs[0]["status"] == "skip" else "time budget"
            runs.append({"run": k, "status": "skip", "seconds": 0.0, "detail": why})
            continue
        junit = os.path.join(scratch, f"run{k}.xml")
        one = ctest_once(r, a, k, junit)
        runs.append(one)
        slowest = max(slowest, one["seconds"])
        if not kept_failure and os.path.exists(junit):
            shutil.copyfile(junit, r.path("ctest-gpu.xml"))
            kept_failure = one["status"] == "fail"
    status = next((s for s in ("fail", "pass", "skip") if any(x["status"] == s for x in runs)))
    detail = runs[0]["detail"] if len(runs) == 1 else "; ".join(
        f"run {x['run']}: {x['status']} ({x['detail']})" for x in runs)
    seconds = sum(x["seconds"] for x in runs)
    r.record("ctest", status, seconds, detail, runs=runs,
             counts=next((x["counts"] for x in runs if "counts" in x), None))


def binary(a, rel):
    path = os.path.join(a.build_dir, rel)
    return path if os.access(path, os.X_OK) else None


def step_kernel_bench(r, a):
    exe = binary(a, f"{KERNELS}/cuda_kernel_bench")
    if not exe:
        r.record("kernel-bench", "fail", 0.0, f"not built: {a.build_dir}/{KERNELS}/"
                 "cuda_kernel_bench")
        return
    res = run([exe], min(120, max(10, r.left() - 60)), r.path("gpu.log"))
    if res.rc == 5:
        r.record("kernel-bench", "skip", res.seconds, f"exit 5: {res.last_lines(2, res.err)}")
        return
    try:
        obj = json.loads(res.out)
    except ValueError:
        obj = last_json_object(res.out)
    if res.rc != 0 or not isinstance(obj, dict):
        why = "timed out" if res.timed_out else f"exit {res.rc}"
        r.record("kernel-bench", "fail", res.seconds, f"{why}, JSON {'found' if obj else 'none'}: "
                 f"{res.last_lines(2)}")
        return
    r.summary["kernel_bench"] = obj
    ratios = {k: obj.get(k) for k in ("ratio_float", "ratio_bfloat16")}
    ok = all(isinstance(v, (int, float)) and v >= MIN_RATIO for v in ratios.values())
    detail = ", ".join(f"{k} {v}" for k, v in ratios.items()) + f" (pass: both >= {MIN_RATIO})"
    r.record("kernel-bench", "pass" if ok else "fail", res.seconds, detail)


def find_sanitizer():
    return shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.access(p, os.X_OK)), None)


def step_sanitizer(r, a):
    cs = find_sanitizer()
    if not cs:
        r.record("sanitizer", "skip", 0.0, "compute-sanitizer not found")
        return
    exe = binary(a, f"{KERNELS}/cuda_kernels_test")
    if not exe:
        r.record("sanitizer", "fail", 0.0, f"not built: {a.build_dir}/{KERNELS}/"
                 "cuda_kernels_test")
        return
    res = run([cs, "--tool", "memcheck", "--error-exitcode", "1", exe],
              min(180, max(10, r.left() - 60)), r.path("gpu.log"))
    text = res.out + res.err
    passed = gtest_count(text, "PASSED")
    skipped = gtest_count(text, "SKIPPED")
    errors = re.search(r"ERROR SUMMARY: (\d+) error", text)
    detail = (f"{passed} passed, {skipped} skipped, memcheck "
              f"{errors.group(0) if errors else 'summary missing'}")
    if res.rc != 0 or res.timed_out:
        why = "timed out" if res.timed_out else f"exit {res.rc}"
        r.record("sanitizer", "fail", res.seconds, f"{why}: {detail}: {res.last_lines(3)}")
    elif passed == 0 and skipped:
        r.record("sanitizer", "skip", res.seconds, f"all {skipped} skipped: "
                 f"{skip_reason(text) or '?'}")
    else:
        r.record("sanitizer", "pass", res.seconds, detail)


def gtest_count(text, word):
    m = re.search(r"\[  " + word + r"\s*\] (\d+) test", text)
    return int(m.group(1)) if m else 0


def main(argv=None):
    a = parse_args(argv)
    r = Runner(a.out, a.budget)
    for log in ("build.log", "gpu.log", "ctest-gpu.xml", "bench.log", "bench.jsonl", "faults.log",
                "nccl-faults.log", "perf.log", "perf.json"):
        if os.path.exists(r.path(log)):
            os.remove(r.path(log))
    if "configure" in a.steps and not step_configure(r, a):
        r.finish(error="configure failed: see build.log")
        return 1
    if not os.path.exists(os.path.join(a.build_dir, "CMakeCache.txt")):
        r.finish(error=f"{a.build_dir} is not configured (run without --no-build)")
        return 1
    if a.no_build and not gpu_check_relocate.step_relocate(r, a, ROOT):
        r.finish(error="relocate failed: the carried build tree cannot run here")
        return 1
    steps = {"build": step_build, "gpu-info": step_gpu_info, "ctest": step_ctest,
             "kernel-bench": step_kernel_bench, "sanitizer": step_sanitizer,
             "bench": gpu_check_bench.step_bench, "concurrency": gpu_check_bench.step_concurrency,
             "nccl": gpu_check_bench.step_nccl, "fault": gpu_check_bench.step_fault,
             "nccl-faults": gpu_check_nccl.step_nccl_faults, "hang": gpu_check_hang.step_hang,
             "perf": gpu_check_perf.step_perf}
    for name in STEPS[1:]:
        if name not in a.steps:
            continue
        if r.left() < 5 and name not in ("gpu-info",):
            r.record(name, "skip", 0.0, "time budget")
            continue
        steps[name](r, a)
    r.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
