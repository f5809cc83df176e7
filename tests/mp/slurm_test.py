#!/usr/bin/python3
"""deploy/slurm/ccscope-pairs.sbatch and ccscope-burnin.sbatch under a real Slurm (ctest label
`mp`): munged, slurmctld and one slurmd started here in a private directory on private ports,
one node with four tasks (one slurmd per network-namespace host is not tried: one node is what
this test runs), `sbatch --wait` for each, and each job's results parse: a pairs run of every
pair of the four ranks; a burn-in of every phase with its summary; the reports beside them.
Skips (77) without root or without Slurm and munge installed.

    slurm_test.py --ccscope BIN [--deadline S] jobs
"""

import os
import shutil
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labcommon import SkipTest, check, log, read_jsonl  # noqa: E402
from mplib import free_port, main  # noqa: E402

DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")
SBATCH = os.path.join(DEPLOY, "slurm", "ccscope-pairs.sbatch")
BURNIN_SBATCH = os.path.join(DEPLOY, "slurm", "ccscope-burnin.sbatch")
TASKS = 4
# Every phase, small: four ranks share two cores with slurmd.
PROFILE = """name = "slurm"
[pairs]
scope = "ranks"
size = "256K"
test_time = "50ms"
lat_iters = 200
[[sweep]]
collective = "allreduce"
max_size = "64K"
iters = 5
warmup = 1
[soak]
duration = "4s"
interval = "1s"
size = "256K"
test_time = "30ms"
lat_iters = 100
collectives = ["allreduce"]
collective_algo = "ring"
collective_size = "64K"
[congestion]
repeats = 1
lat_iters = 300
size = "256K"
test_time = "100ms"
"""


def slurm_conf(d, node):
    # More CPUs than this machine has, as the node's own figure (config_overrides): four ranks
    # on two cores, as every multi-process test here runs.
    return f"""ClusterName=ccscope
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={d}/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={node} NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def start_slurm(h, daemons):
    """munged, slurmctld and slurmd in the foreground (into `daemons`); the SLURM_CONF env."""
    tools = ["munged", "slurmctld", "slurmd", "sbatch", "sinfo"]
    missing = [t for t in tools if not shutil.which(t)]
    if missing or os.geteuid() != 0:
        raise SkipTest(f"needs root and Slurm/munge (missing: {missing or 'root'})")
    d = h.path("slurm")
    for sub in ("munge", "state", "spool"):
        os.makedirs(os.path.join(d, sub), mode=0o700)
    key = os.path.join(d, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    node = socket.gethostname().split(".")[0]
    try:  # ranks find the rendezvous at the first node of the step, by name
        socket.gethostbyname(node)
    except OSError as e:
        raise SkipTest(f"this host's name {node!r} does not resolve ({e}): Slurm's ranks could "
                       f"not find the rendezvous") from e
    conf = os.path.join(d, "slurm.conf")
    with open(conf, "w") as f:
        f.write(slurm_conf(d, node))
    env = {"SLURM_CONF": conf}
    daemons.append(h.start(["munged", "--foreground", "--force", f"--key-file={key}",
             f"--socket={d}/munge/socket", f"--pid-file={d}/munged.pid",
             f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"], env, "munged"))
    daemons.append(h.start(["slurmctld", "-D", "-f", conf], env, "slurmctld"))
    daemons.append(h.start(["slurmd", "-D", "-f", conf, "-N", node], env, "slurmd"))
    end = time.monotonic() + 30
    while True:
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env={**os.environ, **env},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0 and r.stdout.strip() in ("idle", "mix"):
            return env
        check(time.monotonic() < end, f"the node is not idle after 30 s: {r.stdout.strip()}\n"
              f"{open(os.path.join(d, 'slurmctld.log')).read()[-2000:]}")
        time.sleep(0.2)


def case_jobs(h, binary, mpirun):
    daemons = []
    try:
        env = start_slurm(h, daemons)
        run_job(h, binary, dict(env))
        run_burnin_job(h, binary, dict(env))
    finally:  # the daemons go with the test, slurmd first (it waits on nothing)
        for d in reversed(daemons):
            d.terminate()
            try:
                d.wait(timeout=10)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait(timeout=5)


def run_job(h, binary, env):
    out = h.path("results")
    env.update({"CCSCOPE": binary, "CCSCOPE_OUT": out, "CCSCOPE_SCOPE": "ranks",
                "CCSCOPE_ARGS": "--size 256K --test-time 50ms --lat-iters 200"})
    rc, text, err, p = h.run(["sbatch", "--wait", "--nodes=1", f"--ntasks-per-node={TASKS}",
                              f"--output={h.path('job-%j.out')}", os.path.abspath(SBATCH)],
                             120, extra_env=env, label="sbatch")
    job = text.split()[-1] if text.split() else "?"
    log(f"job {job}: sbatch exit {rc}")
    check(os.path.exists(os.path.join(out, job, "pairs.jsonl")),
          f"sbatch --wait: exit {rc}, no results\n{text}\n{err}")
    recs = read_jsonl(os.path.join(out, job, "pairs.jsonl"))
    # Four ranks on two cores can make a link look slow: the job's exit code (sbatch --wait's)
    # must agree with the verdicts it recorded.
    verdicts = [r for r in recs if r.get("type") == "pair_verdict"]
    check(rc == (1 if verdicts else 0), f"sbatch --wait: exit {rc} with {len(verdicts)} verdicts")
    run = [r for r in recs if r.get("type") == "pairs_run"]
    pairs = [r for r in recs if r.get("type") == "pair" and not r["retest"]]
    check(len(run) == 1 and run[0]["ranks"] == TASKS, f"pairs_run: {run}")
    check({(r["rank_a"], r["rank_b"]) for r in pairs} ==
          {(a, b) for a in range(TASKS) for b in range(a + 1, TASKS)},
          f"pairs measured under Slurm: {[(r['rank_a'], r['rank_b']) for r in pairs]}")
    for name in ("report.md", "junit.xml", "report.html"):
        check(os.path.getsize(os.path.join(out, job, name)) > 0, f"no {name} in the results")
    log(f"{len(pairs)} pairs of {TASKS} Slurm tasks in {p.wall:.1f} s")


def run_burnin_job(h, binary, env):
    out = h.path("burnin-results")
    prof = h.path("slurm.toml")
    with open(prof, "w") as f:
        f.write(PROFILE)
    env.update({"CCSCOPE": binary, "CCSCOPE_OUT": out, "CCSCOPE_PROFILE": prof})
    rc, text, err, p = h.run(["sbatch", "--wait", "--nodes=1", f"--ntasks-per-node={TASKS}",
                              f"--output={h.path('burnin-%j.out')}", os.path.abspath(BURNIN_SBATCH)],
                             150, extra_env=env, label="sbatch-burnin")
    job = text.split()[-1] if text.split() else "?"
    log(f"burnin job {job}: sbatch exit {rc}")
    js = os.path.join(out, job, "burnin.jsonl")
    check(os.path.exists(js), f"sbatch --wait: exit {rc}, no burn-in records\n{text}\n{err}")
    recs = read_jsonl(js)
    summary = [r for r in recs if r.get("type") == "burnin_summary"]
    check(len(summary) == 1, f"{len(summary)} burnin_summary records")
    s = summary[0]
    check(s["phases"] == ["preflight", "pairs", "sweep", "soak", "congestion"],
          f"phases {s['phases']}")
    # As with pairs: the job's exit code must agree with the verdict it recorded.
    check(rc == (0 if s["verdict"] == "pass" else 1), f"sbatch --wait: exit {rc}, verdict "
          f"{s['verdict']}: {s['findings']}")
    run = [r for r in recs if r.get("type") == "burnin_run"]
    check(len(run) == 1 and run[0]["ranks"] == TASKS, f"burnin_run: {run}")
    check([r for r in recs if r.get("type") == "soak_sample"], "no soak samples")
    for name in ("report.md", "junit.xml", "report.html", "profile.toml"):
        check(os.path.getsize(os.path.join(out, job, name)) > 0, f"no {name} in the results")
    log(f"burn-in of {TASKS} Slurm tasks in {p.wall:.1f} s: {s['verdict']}")


if __name__ == "__main__":
    sys.exit(main(globals()))
