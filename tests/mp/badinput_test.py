#!/usr/bin/python3
"""Bad input (ctest label `mp`): a usage or configuration error exits 2 with one stderr line
that names the culprit, prints no rows and does not hang; a refused process leaves the job whole.

    badinput_test.py --ccscope BIN [--deadline S] CASE [ARGS...]
    badinput NAME               one bad command line, variable or port (see the tables below)
    token_refused_job_survives  a wrong-token process is refused, the real job still completes
    no_gpu device|cuda-ipc|nccl|nccl-native
                                --device cuda, --transport cuda-ipc or nccl (--algo native) where
                                no GPU is usable:
                                exit 5 with one line giving CUDA's own reason (runs where one is)
"""

import os
import re
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import check, log, torchrun_env  # noqa: E402
from mplib import (ITERS, RUN_TIMEOUT, bench, free_port, main, sweep_sizes,  # noqa: E402
                   verify_sweep)

SMALL = ["-b", "8", "-e", "8", "-n", "1", "-w", "0", "--timeout", "10s"]
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "burnin")


def bad_command_lines(binary):
    """NAME -> (argv, words the stderr line must contain)."""
    return {
        "unknown_collective": ([binary, "bench", "allgatherx", "--np", "3"], ["allgatherx"]),
        "min_gt_max": (bench(binary, "--np", "3", "-b", "1M", "-e", "1K"), ["-b", "-e"]),
        "bad_size": (bench(binary, "--np", "3", "-b", "12Q"), ["12Q"]),
        "bad_dtype": (bench(binary, "--np", "3", "--dtype", "float7"), ["float7"]),
        "np0": (bench(binary, "--np", "0"), ["np"]),
        "unknown_op": (bench(binary, "--np", "3", "--op", "sum,mean"), ["mean"]),
        "unknown_transport": (bench(binary, "--np", "3", "--transport", "carrier-pigeon"),
                              ["carrier-pigeon"]),
        "unknown_algo": (bench(binary, "--np", "3", "--algo", "nosuchalgo", *SMALL),
                         ["nosuchalgo"]),
        # 8 ranks x 4 interleaved algorithms x 2 buffers x 64 GiB = 4 TiB, more than any test
        # machine has: refused before a page is touched.
        "too_large": (bench(binary, "--np", "8", "-b", "64G", "-e", "64G", "--algo",
                            "ring,tree,rabenseifner,recursive_doubling", "--interleave"),
                      ["-e 64 GiB", "4 interleaved", "8 ranks", "MemAvailable"]),
        "bad_bind": (bench(binary, "--np", "2", "--bind", "socket"), ["--bind", "socket"]),
        "pairs_bad_scope": ([binary, "pairs", "--np", "2", "--scope", "switches"],
                            ["--scope", "switches"]),
        "pairs_cuda_ipc": ([binary, "pairs", "--np", "2", "--transport", "cuda-ipc"],
                           ["cuda-ipc", "host buffers"]),
        "pairs_nccl": ([binary, "pairs", "--np", "2", "--transport", "nccl"],
                       ["nccl", "host buffers"]),
        "pairs_bad_shares": ([binary, "pairs", "--np", "2", "--degraded", "0.2", "--failed", "0.5"],
                             ["--failed", "--degraded"]),
        "bad_ucx_errors": (bench(binary, "--np", "2", "--transport", "ucx", "--ucx-errors",
                                 "some"), ["--ucx-errors", "some"]),
        "bad_placement": (bench(binary, "--np", "2", "--placement", "sideways"),
                          ["--placement", "sideways"]),
        "placement_in_alltoall": ([binary, "bench", "alltoall", "--np", "2", "--placement", "in"],
                                  ["alltoall", "in-place"]),
        "bad_hugepages": (bench(binary, "--np", "2", "--hugepages", "maybe"),
                          ["--hugepages", "maybe"]),
        "bad_timeout": (bench(binary, "--np", "3", "--timeout", "5parsecs"), ["5parsecs"]),
        "bad_max_clock_skew": ([binary, "diagnose", "--np", "2", "--max-clock-skew", "2parsecs"],
                               ["--max-clock-skew", "2parsecs"]),
        # A duration is positive and a number: never a deadline already past or undefined.
        "negative_timeout": (bench(binary, "--np", "2", "--timeout", "-1"), ["--timeout", "-1"]),
        "nan_timeout": (bench(binary, "--np", "2", "--timeout", "nan"), ["--timeout", "nan"]),
        "diagnose_negative_timeout": ([binary, "diagnose", "--np", "2", "--timeout=-5s"],
                                      ["--timeout", "-5s"]),
        "diagnose_nan_max_clock_skew": ([binary, "diagnose", "--np", "2",
                                         "--max-clock-skew", "NaN"], ["--max-clock-skew", "nan"]),
        "bad_device": (bench(binary, "--np", "2", "--device", "tpu"), ["--device", "tpu"]),
        "device_cuda_mpi": (bench(binary, "--np", "2", "--device", "cuda", "--transport", "mpi"),
                            ["--device cuda", "MPI"]),
    }


def bad_nccl_lines(binary):
    """NAME -> (argv, words): nccl-tests' options that only NCCL's own collectives take."""
    return {
        # -R registers NCCL's own buffers: only NCCL's collectives have them.
        "register_without_native": (bench(binary, "--np", "2", "--transport", "nccl", "--algo",
                                          "ring", "-R", "1"), ["-R", "--algo native"]),
        "bad_register": (bench(binary, "--np", "2", "--transport", "nccl", "--algo", "native",
                               "-R", "3"), ["-R", "3"]),
        # -G captures NCCL's own collectives: our schedules wait on the host between steps.
        "graph_without_native": (bench(binary, "--np", "2", "--transport", "nccl", "--algo",
                                       "ring,native", "-G", "2"), ["-G", "--algo native"]),
        "bad_graph": (bench(binary, "--np", "2", "--transport", "nccl", "--algo", "native",
                            "-G", "-1"), ["-G", "-1"]),
        "nonblocking_without_native": (bench(binary, "--np", "2", "--transport", "tcp", "-z",
                                             "0"), ["-z 0", "--algo native"]),
        "bad_blocking": (bench(binary, "--np", "2", "--transport", "nccl", "--algo", "native",
                               "-z", "1"), ["-z", "not 1"]),
    }


def bad_profiles(binary):
    """NAME -> (argv, words): `ccscope burnin` profiles refused before any rank starts."""
    return {
        "burnin_no_profile": ([binary, "burnin", "--np", "2"], ["--profile"]),
        "burnin_missing_profile": ([binary, "burnin", "--np", "2", "--profile",
                                    "/nonexistent/p.toml"],
                                   ["/nonexistent/p.toml", "cannot be read"]),
        "burnin_unknown_key": ([binary, "burnin", "--np", "2", "--profile",
                                os.path.join(PROFILES, "bad-unknown-key.toml")],
                               ["pairs.sise", "unknown key"]),
        "burnin_bad_algo": ([binary, "burnin", "--np", "2", "--profile",
                             os.path.join(PROFILES, "bad-sweep-algo.toml")],
                            ["sweep[0].algo", "bruck"]),
        "burnin_bad_interval": ([binary, "burnin", "--np", "2", "--profile",
                                 os.path.join(PROFILES, "bad-soak-interval.toml")],
                                ["soak.interval"]),
    }


def bad_models(binary):
    """NAME -> (argv, words): `ccscope model` inputs refused with one line."""
    return {
        "model_no_source": ([binary, "model", "predict"], ["--fit", "--preset"]),
        "model_bad_preset": ([binary, "model", "predict", "--preset", "dgx-z"], ["dgx-z"]),
        "model_bad_ranks": ([binary, "model", "predict", "--preset", "h100-nvswitch-ndr",
                             "--ranks", "8:4"], ["--ranks", "8:4"]),
        "model_fit_missing": ([binary, "model", "fit", "/nonexistent/r.jsonl"],
                              ["/nonexistent/r.jsonl"]),
        "model_tail_no_links": ([binary, "model", "tail", "--ranks", "8"], ["--pairs"]),
    }


def bad_environments(binary):
    """NAME -> (argv, variable, its bad value, the word naming it): refused once, before
    launching."""
    return {
        "bad_single_copy_env": (bench(binary, "--np", "3", *SMALL),
                                "CCSCOPE_SHM_SINGLE_COPY_FROM", "lots", "lots"),
        "bad_wait_sample_period": (bench(binary, "--np", "3", *SMALL),
                                   "CCSCOPE_WAIT_SAMPLE_PERIOD", "often", "often"),
        "diagnose_bad_single_copy_env": ([binary, "diagnose", "--np", "2", "--timeout", "5s"],
                                         "CCSCOPE_SHM_SINGLE_COPY_FROM", "0", "'0'"),
    }


def hold_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    return s, s.getsockname()[1]


def wait_listening(h, p, port, limit=20):
    end = time.monotonic() + limit
    while True:
        check(p.poll() is None, f"rank 0 exited early with {p.returncode}\n{h.describe(p)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            check(time.monotonic() < end, f"rank 0 does not listen on {port} after {limit} s")
            time.sleep(0.05)


def check_one_line_error(h, p, rc, must_contain, limit=10.0):
    err = h.stderr(p)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    check(rc == 2, f"exit code {rc}, expected 2\n{h.describe(p)}")
    check(p.wall <= limit, f"took {p.wall:.1f} s to report a usage error (limit {limit} s)")
    check(len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}:\n{err}")
    for word in must_contain:
        check(word.lower() in lines[0].lower(),
              f"stderr line does not mention {word!r}: {lines[0]!r}")
    table = [ln for ln in h.stdout(p).splitlines() if ln.strip() and not ln.startswith("#")]
    check(not table, f"a usage error printed result rows on stdout: {table[:3]}")
    log(f"exit 2 in {p.wall:.2f} s: {lines[0]}")


def refused(h, argv, env, label, words, limit=10.0):
    """Starts one process that must be refused: exit 2, one line naming `words`."""
    p = h.start(argv, env, label=label)
    rc = h.wait(p, 30)
    check_one_line_error(h, p, rc, words, limit)


def bad_rank_not_below_world(h, binary):
    refused(h, bench(binary, *SMALL), torchrun_env(5, 4, free_port(), "t0k3n"), "rank5",
            ["RANK", "WORLD_SIZE"])


def bad_port_in_use(h, binary):
    holder, port = hold_port()
    refused(h, bench(binary, "--np", "3", "--store-port", port, *SMALL), None, None, [str(port)])
    holder.close()


def bad_master_port_in_use(h, binary):
    # torchrun-style rank 0 hosts the store on MASTER_PORT, which another process holds.
    holder, port = hold_port()
    refused(h, bench(binary, *SMALL), torchrun_env(0, 2, port, "t0k3n"), "rank0", [str(port)])
    holder.close()


def bad_job_token(h, binary):
    port = free_port()
    r0 = h.start(bench(binary, *SMALL[:-1], "30s"), torchrun_env(0, 2, port, "good-token"),
                 label="rank0")
    wait_listening(h, r0, port)
    refused(h, bench(binary, *SMALL), torchrun_env(1, 2, port, "other-token"), "rank1", ["token"],
            limit=5.0)
    h.kill_all()  # rank 0 is still waiting for a rank 1


BAD_STARTS = {
    "rank_not_below_world": bad_rank_not_below_world,
    "port_in_use": bad_port_in_use,
    "master_port_in_use": bad_master_port_in_use,
    "job_token": bad_job_token,
}


def case_badinput(h, binary, mpirun, name):
    environments = bad_environments(binary)
    command_lines = {**bad_command_lines(binary), **bad_nccl_lines(binary),
                     **bad_profiles(binary), **bad_models(binary)}
    if name in environments:
        argv, variable, value, word = environments[name]
        refused(h, argv, {variable: value}, "env", [variable, word])
    elif name in BAD_STARTS:
        BAD_STARTS[name](h, binary)
    else:
        check(name in command_lines, f"unknown bad-input case {name}")
        argv, words = command_lines[name]
        refused(h, argv, None, None, words)


def case_token_refused_job_survives(h, binary, mpirun):
    """A process with the wrong token is refused; the job's own rank 1 then joins and finishes."""
    port = free_port()
    js = h.path("token.jsonl")
    argv = bench(binary, "-b", "8", "-e", "1K", "-f", "4", *ITERS, "--timeout", "30s",
                 "--json", js)
    r0 = h.start(argv, torchrun_env(0, 2, port, "good-token"), label="rank0")
    wait_listening(h, r0, port)
    bad = h.start(argv, torchrun_env(1, 2, port, "other-token"), label="intruder")
    rc = h.wait(bad, 30)
    check(rc == 2, f"intruder exit code {rc}, expected 2\n{h.describe(bad)}")
    good = h.start(argv, torchrun_env(1, 2, port, "good-token"), label="rank1")
    rc1, rc0 = h.wait(good, RUN_TIMEOUT), h.wait(r0, RUN_TIMEOUT)
    check(rc0 == 0 and rc1 == 0, f"after refusing an intruder the job failed: rank 0 {rc0}, "
          f"rank 1 {rc1}\n{h.describe(r0)}\n{h.describe(good)}")
    verify_sweep(h, r0, rc0, js, transport="shm", ranks=2, sizes=sweep_sizes("8", "1K", 4),
                 dtypes=["float"], ops=["sum"])
    log("intruder refused with exit 2; the job completed with rank 1")


def case_no_gpu(h, binary, mpirun, which):
    """Without a usable GPU: exit 5 and one line with CUDA's reason (its error name in
    parentheses), no rows, no hang. Where a GPU is usable the same command must simply pass."""
    flags = (["--device", "cuda"] if which == "device"
             else ["--transport", "nccl", "--algo", "native"] if which == "nccl-native"
             else ["--transport", which])
    p = h.start(bench(binary, "--np", "2", *flags, *SMALL))
    flags = flags[:2]  # the line names the transport or the device, not the algorithm
    rc = h.wait(p, 60)
    err = h.stderr(p)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc == 0:
        log(f"{' '.join(flags)}: a GPU is usable here; the run passed")
        return
    check(rc == 5, f"exit code {rc}, expected 5 (no GPU) or 0 (a GPU)\n{h.describe(p)}")
    check(len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}:\n{err}")
    check(" ".join(flags) in lines[0],
          f"the line does not name {' '.join(flags)}: {lines[0]!r}")
    # CUDA's own words: a cuda* call and its error name ("(cudaErrorNoDevice 100)"), or that
    # this build has no CUDA at all.
    check(re.search(r"cuda[A-Za-z]+: .*\((cudaError[A-Za-z]+|CUDA_ERROR_[A-Z_]+) \d+\)",
                    lines[0]) or "built without CUDA" in lines[0],
          f"the line gives no CUDA reason: {lines[0]!r}")
    table = [ln for ln in h.stdout(p).splitlines() if ln.strip() and not ln.startswith("#")]
    check(not table, f"printed result rows: {table[:3]}")
    log(f"exit 5 in {p.wall:.2f} s: {lines[0]}")


def case_huge_timeout_runs(h, binary, mpirun, timeout="1e30"):
    """A timeout past what a deadline can hold means no deadline: the sweep runs to the end."""
    js = h.path("huge.jsonl")
    p = h.start(bench(binary, "--np", "2", "-b", "8", "-e", "1M", *ITERS, "--timeout", timeout,
                      "--json", js))
    rc = h.wait(p, RUN_TIMEOUT)
    verify_sweep(h, p, rc, js, transport="shm", ranks=2, sizes=sweep_sizes("8", "1M"),
                 dtypes=["float"], ops=["sum"])
    log(f"--timeout {timeout}: exit 0 in {p.wall:.1f} s")


if __name__ == "__main__":
    sys.exit(main(globals()))
