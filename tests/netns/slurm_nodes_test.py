#!/usr/bin/python3
"""`ccscope burnin` and `pairs` under a real Slurm with one slurmd per network-namespace host
(ctest label `netns`): 4 lab hosts, each its own Slurm node (its hostname through a UTS
namespace, its address on the lab bridge), slurmctld on host 0, munged beside them; `sbatch
--wait` of deploy/slurm/ccscope-burnin.sbatch and ccscope-pairs.sbatch over the 4 nodes, 2 tasks
each; every rank on its node, and the results parse. Skips (77) without root, namespaces, Slurm
or munge.

    slurm_nodes_test.py --ccscope BIN [--deadline S] nodes
"""

import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "mp")]  # labcommon is shared with tests/mp

from labcommon import log, read_jsonl  # noqa: E402
from netlab import main  # noqa: E402
import nsjobs  # noqa: E402

DEPLOY = os.path.join(HERE, "..", "..", "deploy", "slurm")
TASKS_PER_NODE = 2
PROFILE = """name = "slurm-nodes"
[pairs]
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
"""


def cgroup_mounts():
    """Shell commands that mount, under /sys/fs/cgroup, the cgroup file systems mounted there
    now (v1 controllers, named hierarchies, v2), with the same options."""
    cmds = []
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, where, kind, opts = line.split()[:4]
            if not where.startswith("/sys/fs/cgroup") or kind not in ("tmpfs", "cgroup", "cgroup2"):
                continue
            cmds.append(f"mkdir -p {where} && mount -t {kind} -o {opts} {dev} {where}")
    return " && ".join(cmds) or "true"


CGROUPS = cgroup_mounts()


def slurm_conf(d, net):
    nodes = "\n".join(f"NodeName={h} NodeAddr={ip} CPUs=4 State=UNKNOWN"
                      for h, ip in zip(net.hosts, net.ips))
    return f"""ClusterName=ccscopens
SlurmctldHost={net.hosts[0]}({net.ips[0]})
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket={d}/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
{nodes}
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def name_the_hosts(net):
    """/etc/netns/<ns>/hosts: `ip netns exec` mounts it over /etc/hosts for everything started in
    that namespace (slurmd, its steps, the ranks), so the node names resolve to lab addresses."""
    lines = "127.0.0.1 localhost\n" + "".join(f"{ip} {h}\n" for h, ip in zip(net.hosts, net.ips))
    if not os.path.isdir("/etc/netns"):
        net.undo.append(["rmdir", "/etc/netns"])  # runs last: undo goes in reverse
    for ns in net.hosts:
        d = os.path.join("/etc/netns", ns)
        os.makedirs(d, exist_ok=True)
        net.undo.append(["rm", "-rf", d])
        with open(os.path.join(d, "hosts"), "w") as f:
            f.write(lines)


def in_host0(net, argv, env, timeout):
    return subprocess.run(["ip", "netns", "exec", net.hosts[0], *argv], env={**os.environ, **env},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def start_slurm(net):
    d = os.path.join(net.workdir, "slurm")
    for sub in ("munge", "state", "spool"):
        os.makedirs(os.path.join(d, sub), mode=0o700)
    key = os.path.join(d, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    conf = os.path.join(d, "slurm.conf")
    with open(conf, "w") as f:
        f.write(slurm_conf(d, net))
    env = {"SLURM_CONF": conf}
    # munged's socket is a file: every namespace reaches it.
    munged = ["munged", "--foreground", "--force", f"--key-file={key}",
              f"--socket={d}/munge/socket", f"--pid-file={d}/munged.pid",
              f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"]
    daemons = [net.start(0, munged, env, "munged")]
    daemons.append(net.start(0, ["slurmctld", "-D", "-f", conf], env, "slurmctld"))
    for i, h in enumerate(net.hosts):
        os.makedirs(os.path.join(d, "spool", h), mode=0o700)
        # `ip netns exec` mounts a sysfs of the namespace's own over /sys, without the cgroup
        # file systems slurmd's cgroup plugin reads: mount this host's there again.
        slurmd = ["/bin/sh", "-c", CGROUPS + ' && exec "$@"', "sh", "slurmd", "-D", "-f", conf,
                  "-N", h]
        daemons.append(net.start(i, slurmd, env, f"slurmd{i}"))
    end = time.monotonic() + 40
    while True:
        r = in_host0(net, ["sinfo", "-h", "-N", "-o", "%N %t"], env, 10)
        states = dict(l.split() for l in r.stdout.splitlines() if len(l.split()) == 2)
        if r.returncode == 0 and len(states) == len(net.hosts) and \
                all(s in ("idle", "mix") for s in states.values()):
            return env, daemons
        if time.monotonic() > end:
            raise nsjobs.TestFailure(f"nodes not idle after 40 s: {r.stdout}\n"
                                     f"{open(os.path.join(d, 'slurmctld.log')).read()[-2000:]}")
        time.sleep(0.3)


def sbatch(net, env, script, label, limit):
    job_env = {**env, "CCSCOPE_OUT": os.path.join(net.workdir, "results")}
    r = in_host0(net, ["sbatch", "--wait", f"--nodes={len(net.hosts)}",
                       f"--ntasks-per-node={TASKS_PER_NODE}",
                       f"--output={net.workdir}/{label}-%j.out", os.path.join(DEPLOY, script)],
                 job_env, limit)
    job = r.stdout.split()[-1] if r.stdout.split() else "?"
    log(f"{label}: job {job}, sbatch exit {r.returncode}")
    return r.returncode, os.path.join(net.workdir, "results", job), r.stdout


def case_nodes(net, binary):
    problems = []
    name_the_hosts(net)
    env, daemons = start_slurm(net)
    try:
        run_jobs(net, binary, env, problems)
    finally:  # slurmd first (its steps are done), munged last
        for d in reversed(daemons):
            d.p.terminate()
            try:
                d.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                d.p.kill()
                d.p.wait(timeout=5)
    nsjobs.report(f"Slurm with {len(net.hosts)} slurmd nodes", "burnin and pairs over every node",
                  [], problems, net)


def run_jobs(net, binary, env, problems):
    env["CCSCOPE"] = binary
    prof = os.path.join(net.workdir, "profile.toml")
    with open(prof, "w") as f:
        f.write(PROFILE)
    env["CCSCOPE_PROFILE"] = prof
    world = len(net.hosts) * TASKS_PER_NODE
    rc, out, text = sbatch(net, env, "ccscope-burnin.sbatch", "burnin", 180)
    js = os.path.join(out, "burnin.jsonl")
    recs = read_jsonl(js) if os.path.exists(js) else []
    run = [r for r in recs if r.get("type") == "burnin_run"]
    summary = [r for r in recs if r.get("type") == "burnin_summary"]
    if not run or not summary:
        problems.append(f"burnin: exit {rc}, records {len(recs)}\n{text}")
    else:
        hosts = run[0]["hosts"]
        # Each rank on its own node: the lab's hostnames, two ranks each.
        if sorted(set(hosts)) != sorted(net.hosts) or len(hosts) != world:
            problems.append(f"burnin ranks' hosts {hosts}, expected {TASKS_PER_NODE} on each of "
                            f"{net.hosts}")
        s = summary[0]
        if rc != (0 if s["verdict"] == "pass" else 1):
            problems.append(f"burnin: exit {rc} with verdict {s['verdict']}: {s['findings']}")
        if sorted(s["hosts"]) != sorted(net.hosts):
            problems.append(f"burnin: verdicts for {sorted(s['hosts'])}, not the nodes")
        log(f"burnin over {len(net.hosts)} Slurm nodes: exit {rc}, verdict {s['verdict']}")
    rc, out, text = sbatch(net, env, "ccscope-pairs.sbatch", "pairs", 120)
    js = os.path.join(out, "pairs.jsonl")
    pairs = [r for r in read_jsonl(js) if r.get("type") == "pair" and not r["retest"]] \
        if os.path.exists(js) else []
    n = len(net.hosts)
    if len(pairs) != n * (n - 1) // 2:  # scope hosts: every pair of nodes
        problems.append(f"pairs: exit {rc}, {len(pairs)} pairs of {n} nodes\n{text}")
    log(f"pairs over {n} Slurm nodes: exit {rc}, {len(pairs)} pairs")


if __name__ == "__main__":
    tools = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        log(f"SKIP: Slurm or munge missing ({missing})")
        sys.exit(77)
    sys.exit(main(globals()))
