#!/usr/bin/python3
"""Fault-injection suite for live hang diagnosis (ctest label `netns`, issue 5).

Builds 4 "hosts" as network namespaces joined by a Linux bridge that lives in a fifth, dedicated
"switch" namespace (the root namespace is never touched: no addresses, routes, iptables rules or
qdiscs there), starts 1-2 ccscope ranks per host over tcp under a torchrun-style environment
(rank 0 on host 0 hosts the rendezvous store), injects ONE fault, and checks what every rank says:
exit code, time to the diagnosis, layer and culprit (stderr of every reporting rank and the
diagnosis record in rank 0's --json file).

Layout (tag = ccsnt<pid>, unique per run; names inside a namespace are private to it):
  namespace <tag>sw : bridge br0, veth ends h0..h3 (the "switch ports")
  namespace <tag>h<i>: veth end eth0 = 10.213.0.<i+1>/24, lo; hostname <tag>h<i>
                       (each rank runs under `unshare --uts` and sets its own hostname)
Only 10.213.0.1-4 and loopback are ever targets, and only inside these namespaces.

Cleanup (always, also on failure, SIGTERM/SIGINT and the internal deadline): every process group
started here, then every process still inside one of the namespaces, then the iptables rules and
qdiscs added, then the namespaces (which takes the veths and the bridge with them). Processes
carry PR_SET_PDEATHSIG so that even a SIGKILLed script does not leave ranks behind; namespaces
left by a SIGKILLed run (creator pid gone) are removed by the next run.

Usage: netns_test.py --ccscope BIN [--deadline S] CASE ARGS...   (see CASES at the bottom)
Exit: 0 pass, 1 fail, 77 skip (not root, no `ip netns`, iptables, tc or unshare --uts).
Logs of a failed run (every rank's stdout/stderr, flight-recorder dumps) stay in /tmp/ccsnt-<case>-*;
set CCSCOPE_NETNS_KEEP=1 to keep them after a pass too.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

SKIP = 77
SUBNET = "10.213.0"          # private /24 that exists only inside this run's namespaces
PORT = 29500                 # MASTER_PORT: namespaces are private, so no clash with anything
TIMEOUT_S = 4                # --timeout of every faulted run
SLACK_S = 10                 # the issue: diagnosed within timeout + 10 s
NHOSTS = 4
TAG_PREFIX = "ccsnt"


class TestFailure(Exception):
    pass


class DeadlineExpired(Exception):
    pass


def log(msg):
    sys.stdout.write(f"[netns {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stdout.flush()


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def sh(argv, check_rc=True, timeout=30):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} -> {p.returncode}: {p.stdout.strip()}")
    return p


# Exit 0 when every address answers TCP (accepts or refuses) within 1 s.
TCP_PROBE = r"""
import socket, sys
bad = []
for ip in sys.argv[1:]:
    s = socket.socket(); s.settimeout(1)
    try:
        s.connect((ip, 9))
    except ConnectionRefusedError:
        pass
    except OSError as e:
        bad.append(f"{ip}: {e}")
    s.close()
print("; ".join(bad)); sys.exit(1 if bad else 0)
"""


_libc = ctypes.CDLL(None, use_errno=True)


def _child_setup():
    # New session/process group (killed as a group) and SIGKILL if this script dies.
    os.setsid()
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


# --------------------------------------------------------------------------------------------
# The network


class Net:
    def __init__(self, workdir):
        self.tag = f"{TAG_PREFIX}{os.getpid()}"
        self.sw = f"{self.tag}sw"
        self.hosts = [f"{self.tag}h{i}" for i in range(NHOSTS)]  # namespace name == hostname
        self.ips = [f"{SUBNET}.{i + 1}" for i in range(NHOSTS)]
        self.workdir = workdir
        self.procs = []          # Proc
        self.undo = []           # (description, argv) run in reverse order at cleanup
        self.created = []        # namespaces created

    # -- setup --
    def up(self):
        self._sweep_stale()
        sh(["ip", "netns", "add", self.sw])
        self.created.append(self.sw)
        sh(["ip", "-n", self.sw, "link", "set", "lo", "up"])
        sh(["ip", "-n", self.sw, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", self.sw, "link", "set", "br0", "up"])
        for i, ns in enumerate(self.hosts):
            sh(["ip", "netns", "add", ns])
            self.created.append(ns)
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            # h<i> in the switch namespace <-> eth0 in the host namespace
            sh(["ip", "-n", self.sw, "link", "add", f"h{i}", "type", "veth", "peer", "name",
                "eth0", "netns", ns])
            sh(["ip", "-n", self.sw, "link", "set", f"h{i}", "master", "br0", "up"])
            sh(["ip", "-n", ns, "addr", "add", f"{self.ips[i]}/24", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
        # Wait for the bridge ports to forward: every host answers TCP (a refusal) from host 0.
        end = time.monotonic() + 10
        while True:
            r = sh(["ip", "netns", "exec", self.hosts[0], sys.executable, "-c", TCP_PROBE,
                    *self.ips[1:]], check_rc=False)
            if r.returncode == 0:
                break
            if time.monotonic() > end:
                raise RuntimeError(f"hosts do not reach each other after 10 s: {r.stdout}")
            time.sleep(0.2)

    def _sweep_stale(self):
        """Namespaces left by a run of this script that was SIGKILLed (its pid is gone)."""
        out = sh(["ip", "netns", "list"], check_rc=False).stdout
        for line in out.splitlines():
            m = re.match(rf"^({TAG_PREFIX}(\d+)(?:sw|h\d+))\b", line)
            if m and int(m.group(2)) != os.getpid() and not pid_alive(int(m.group(2))):
                self._kill_ns_pids(m.group(1))
                sh(["ip", "netns", "del", m.group(1)], check_rc=False)
                log(f"removed stale namespace {m.group(1)}")

    # -- processes --
    def start(self, host, argv, env_extra, label):
        ns = self.hosts[host]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_", "CCSCOPE_", "TORCHELASTIC_",
                                    "NCCL_", "UCX_"))
               and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                             "MASTER_PORT", "GROUP_RANK", "NODE_RANK")}
        env["CCSCOPE_DUMP_DIR"] = self.workdir
        env.update(env_extra)
        out = open(os.path.join(self.workdir, f"{label}.out"), "wb")
        err = open(os.path.join(self.workdir, f"{label}.err"), "wb")
        # ip netns exec, unshare and sh all exec: the pid is the rank's own pid.
        full = ["ip", "netns", "exec", ns, "unshare", "--uts", "--", "/bin/sh", "-c",
                'hostname "$0" && exec "$@"', ns, *argv]
        p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                             cwd=self.workdir, preexec_fn=_child_setup)
        out.close()
        err.close()
        proc = Proc(p, label, host, self.workdir)
        self.procs.append(proc)
        return proc

    def ns_pids(self, ns):
        out = sh(["ip", "netns", "pids", ns], check_rc=False).stdout
        return [int(x) for x in out.split() if x.isdigit()]

    def _kill_ns_pids(self, ns):
        for pid in self.ns_pids(ns):
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def leftovers(self, exclude=()):
        """Processes still inside this run's namespaces (other than `exclude` pids)."""
        left = {}
        for ns in self.created:
            pids = [p for p in self.ns_pids(ns) if p not in exclude and pid_alive(p)]
            if pids:
                left[ns] = pids
        return left

    # -- faults (each registers its undo) --
    def host_cmd(self, host, argv, undo=None):
        sh(["ip", "netns", "exec", self.hosts[host], *argv])
        if undo:
            self.undo.append(["ip", "netns", "exec", self.hosts[host], *undo])

    def sw_cmd(self, argv, undo=None):
        sh(["ip", "netns", "exec", self.sw, *argv])
        if undo:
            self.undo.append(["ip", "netns", "exec", self.sw, *undo])

    def iptables(self, host, rule):
        """iptables -A <rule> in the host's namespace; -D at cleanup."""
        self.host_cmd(host, ["iptables", "-w", "-A", *rule], undo=["iptables", "-w", "-D", *rule])

    # -- teardown --
    def down(self):
        errors = []
        for p in self.procs:
            p.kill_group()
        for ns in self.created:
            self._kill_ns_pids(ns)
        for p in self.procs:
            try:
                p.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                errors.append(f"{p.label} (pid {p.pid}) did not die after SIGKILL")
        for argv in reversed(self.undo):
            r = sh(argv, check_rc=False)
            if r.returncode != 0:
                errors.append(f"undo {' '.join(argv)}: {r.stdout.strip()}")
        self.undo = []
        for ns in reversed(self.created):
            r = sh(["ip", "netns", "del", ns], check_rc=False)
            if r.returncode != 0:
                errors.append(f"ip netns del {ns}: {r.stdout.strip()}")
        self.created = []
        left = [l for l in sh(["ip", "netns", "list"], check_rc=False).stdout.splitlines()
                if l.startswith(self.tag)]
        if left:
            errors.append(f"namespaces still present: {left}")
        return errors


ALL_PROCS = []


class Proc:
    def __init__(self, p, label, host, workdir):
        self.p = p
        self.pid = p.pid
        self.label = label
        self.host = host
        self.workdir = workdir
        self.t_start = time.monotonic()
        self.t_exit = None
        ALL_PROCS.append(self)

    def poll(self):
        rc = self.p.poll()
        if rc is not None and self.t_exit is None:
            self.t_exit = time.monotonic()
        return rc

    def wait(self, timeout):
        end = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > end:
                return None
            for other in ALL_PROCS:  # exact exit times for everyone, not only this one
                other.poll()
            time.sleep(0.02)
        return self.p.returncode

    def kill_group(self):
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def _read(self, ext):
        try:
            with open(os.path.join(self.workdir, f"{self.label}.{ext}"), "rb") as f:
                return f.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stdout(self):
        return self._read("out")

    def stderr(self):
        return self._read("err")

    def describe(self, lines=25):
        err = self.stderr().splitlines()
        out = self.stdout().splitlines()
        return (f"--- {self.label} (pid {self.pid}, rc {self.p.returncode}) stderr (last {lines}):\n"
                + "\n".join(err[-lines:]) + f"\n--- {self.label} stdout (last 5):\n"
                + "\n".join(out[-5:]))


# --------------------------------------------------------------------------------------------
# Jobs and diagnoses


def host_of_rank(rank, world):
    """4 ranks: one per host; 8 ranks: two per host (ranks 2h and 2h+1 on host h)."""
    per = world // NHOSTS
    return rank // per


def ranks_on(host, world):
    return [r for r in range(world) if host_of_rank(r, world) == host]


class Job:
    def __init__(self, net, world, argv, extra_env=None, per_rank_args=None, label="rank",
                 token=None):
        self.net = net
        self.world = world
        self.token = token or uuid.uuid4().hex
        self.procs = []
        self.argv = argv
        self.extra_env = extra_env or {}
        self.per_rank_args = per_rank_args or {}
        self.label = label

    def env(self, r):
        return {"RANK": str(r), "WORLD_SIZE": str(self.world),
                "LOCAL_RANK": str(r % (self.world // NHOSTS)),
                "LOCAL_WORLD_SIZE": str(self.world // NHOSTS),
                "GROUP_RANK": str(host_of_rank(r, self.world)),
                "MASTER_ADDR": self.net.ips[0], "MASTER_PORT": str(PORT),
                "CCSCOPE_JOB_TOKEN": self.token, **self.extra_env.get(r, {})}

    def start(self):
        for r in range(self.world):
            argv = self.argv + self.per_rank_args.get(r, [])
            self.procs.append(self.net.start(host_of_rank(r, self.world), argv, self.env(r),
                                             f"{self.label}{r}"))
        return self


def bench_argv(binary, json_path, *args):
    return [binary, "bench", "allreduce", "--transport", "tcp", *[str(a) for a in args],
            "--json", json_path]


# A sweep that runs for a long time (the fault lands mid-run) with every operation far below
# --timeout on a healthy network.
LONG = ["-b", "64K", "-e", "64M", "-f", "2", "-n", "200", "-w", "1", "--timeout", f"{TIMEOUT_S}s"]
SHORT = ["-b", "8", "-e", "1M", "-f", "4", "-n", "5", "-w", "1", "--timeout", f"{TIMEOUT_S}s"]


def read_jsonl(path):
    recs = []
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return recs
    for line in data.split(b"\n"):
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
    return recs


def wait_rows(job, path, n_rows, limit=60):
    end = time.monotonic() + limit
    while True:
        rows = [r for r in read_jsonl(path) if r.get("type") == "result"]
        if len(rows) >= n_rows:
            return rows
        for p in job.procs:
            if p.poll() is not None:
                raise TestFailure(f"{p.label} exited with {p.p.returncode} before {n_rows} rows "
                                  f"were written\n{p.describe()}")
        check(time.monotonic() < end, f"fewer than {n_rows} result rows after {limit} s")
        time.sleep(0.02)


DIAG_RE = re.compile(r"^ccscope: rank (\d+): diagnosis: layer ([\w-]+): (.*)$", re.M)
CULPRIT_RE = re.compile(r"^\s+culprit: ranks \[(.*?)\] hosts \[(.*?)\] links \[(.*)\]$", re.M)


def split_list(text):
    return [x.strip() for x in text.split(",") if x.strip()] if text.strip() else []


def parse_diagnosis(stderr):
    """The first `diagnosis:` block of a rank's stderr -> dict, or None."""
    m = DIAG_RE.search(stderr)
    if not m:
        return None
    d = {"rank": int(m.group(1)), "layer": m.group(2), "verdict": m.group(3),
         "ranks": [], "hosts": [], "links": []}
    c = CULPRIT_RE.search(stderr, m.end())
    if c and stderr[m.end():c.start()].count("\n") <= 1:
        d["ranks"] = [int(x) for x in split_list(c.group(1))]
        d["hosts"] = split_list(c.group(2))
        d["links"] = split_list(c.group(3))
    return d


class Expect:
    """What a diagnosis must say. ranks: exact set; hosts: host indexes, exact set, each named by
    its hostname or its address; link_hosts: one culprit link must name every one of these hosts
    (None: links are not checked)."""

    def __init__(self, net, layer, ranks, hosts, link_hosts=None, every_link=False,
                 hosts_optional=False, ranks_alt=()):
        self.net = net
        self.layer = layer
        self.ranks = sorted(ranks)
        self.hosts = sorted(hosts)
        self.link_hosts = link_hosts
        # every_link: one host's own link is at fault, and the product may name it as the pairs
        # through it: ranks/hosts must include the expected ones, and EVERY culprit link must
        # name link_hosts (a link that does not go through the culprit host is wrong).
        self.every_link = every_link
        # hosts_optional: the issue names only ranks as the culprit (--ifname): hosts, when
        # named, must be the culprit ranks' hosts.
        self.hosts_optional = hosts_optional
        # ranks_alt: other culprit rank sets that are equally right (e.g. the two ranks whose
        # traffic crosses a link, or every rank on its two hosts).
        self.ranks_alt = [sorted(x) for x in ranks_alt]

    def _names(self, h):
        return (self.net.hosts[h], self.net.ips[h])

    def __str__(self):
        s = (f"layer {self.layer}, culprit ranks {self.ranks} hosts "
             f"{[self.net.hosts[h] for h in self.hosts]}")
        if self.link_hosts:
            s += f", a link naming {' and '.join(self.net.hosts[h] for h in self.link_hosts)}"
        return s

    def _host_index(self, name):
        for h in range(NHOSTS):
            if name in self._names(h):
                return h
        return name

    def mismatches(self, d):
        bad = []
        if d["layer"] != self.layer:
            bad.append(f"layer {d['layer']!r} != {self.layer!r}")
        got_ranks = sorted(set(d["ranks"]))
        got = sorted({self._host_index(x) for x in d["hosts"]}, key=str)
        if self.every_link:
            if not set(self.ranks) <= set(got_ranks):
                bad.append(f"culprit ranks {got_ranks} do not include {self.ranks}")
            if not set(self.hosts) <= set(got):
                bad.append(f"culprit hosts {sorted(set(d['hosts']))} do not include "
                           f"{[self.net.hosts[h] for h in self.hosts]}")
        else:
            if sorted(d["ranks"]) != self.ranks and sorted(d["ranks"]) not in self.ranks_alt:
                alt = "".join(f" or {x}" for x in self.ranks_alt)
                bad.append(f"culprit ranks {sorted(d['ranks'])} != {self.ranks}{alt}")
            if got != self.hosts and not (self.hosts_optional and set(got) <= set(self.hosts)):
                bad.append(f"culprit hosts {sorted(set(d['hosts']))} != "
                           f"{[self.net.hosts[h] for h in self.hosts]}")
        if self.link_hosts:
            def names(link, h):
                return any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", link)
                           for n in self._names(h))
            ok = [all(names(l, h) for h in self.link_hosts) for l in d["links"]]
            if self.every_link and ok and not all(ok):
                bad.append(f"culprit links that do not go through "
                           f"{' and '.join(self.net.hosts[h] for h in self.link_hosts)}: "
                           f"{[l for l, k in zip(d['links'], ok) if not k]}")
            if not any(ok):
                bad.append(f"no culprit link names "
                           f"{' and '.join(self.net.hosts[h] for h in self.link_hosts)} "
                           f"(links {d['links']})")
        return bad


def json_diagnosis(path):
    recs = [r for r in read_jsonl(path) if r.get("type") == "diagnosis"]
    if not recs:
        return None, 0
    r = recs[0]
    c = r.get("culprit") or {}
    return ({"rank": r.get("reported_by"), "layer": r.get("layer"), "verdict": r.get("verdict"),
             "ranks": c.get("ranks") or [], "hosts": c.get("hosts") or [],
             "links": c.get("links") or []}, len(recs))


def check_hang(net, job, reporters, t0, expect, json_path, what, summary):
    """Every reporter exits 3 within TIMEOUT_S + SLACK_S of t0 with the expected diagnosis on
    stderr; rank 0 (when a reporter) writes it to the --json file. Collects all mismatches."""
    limit = TIMEOUT_S + SLACK_S
    problems = []
    for r in reporters:
        p = job.procs[r]
        rc = p.wait(max(0.5, limit + 20 - (time.monotonic() - t0)))
        t = (p.t_exit or time.monotonic()) - t0
        diag = parse_diagnosis(p.stderr())
        summary.append((r, rc, round(t, 1), diag and diag["layer"],
                        diag and (diag["ranks"], diag["hosts"], diag["links"])))
        if rc is None:
            problems.append(f"rank {r}: still running {t:.1f} s after the fault (limit {limit} s)"
                            f"\n{p.describe()}")
            continue
        if rc != 3 or t > limit:
            problems.append(f"rank {r}: exit code {rc} after {t:.1f} s, expected 3 within "
                            f"{limit} s\n{p.describe()}")
        if diag is None:
            problems.append(f"rank {r}: no diagnosis on stderr\n{p.describe()}")
            continue
        bad = expect.mismatches(diag)
        if bad:
            problems.append(f"rank {r}: {'; '.join(bad)}\n  got: layer {diag['layer']}: "
                            f"{diag['verdict']}\n  culprit ranks {diag['ranks']} hosts "
                            f"{diag['hosts']} links {diag['links']}")
    if 0 in reporters:
        jd, n = json_diagnosis(json_path)
        if jd is None:
            problems.append(f"rank 0's --json file has no diagnosis record ({json_path})")
        else:
            bad = expect.mismatches(jd)
            if n != 1:
                bad.append(f"{n} diagnosis records, expected 1")
            if bad:
                problems.append(f"--json diagnosis record: {'; '.join(bad)}\n  got: layer "
                                f"{jd['layer']}: {jd['verdict']}\n  culprit {jd['ranks']} "
                                f"{jd['hosts']} {jd['links']}")
    return problems


def report(what, expect, summary, problems, net, keep_pids=()):
    log(f"{what}: expected {expect}")
    for r, rc, t, layer, cul in summary:
        log(f"  rank {r}: exit {rc} after {t} s; layer {layer}; culprit {cul}")
    left = net.leftovers(exclude=keep_pids)
    if left:
        problems.append(f"processes outlived the run inside the namespaces: {left}")
    if problems:
        raise TestFailure(f"{what}: {len(problems)} problem(s):\n" + "\n".join(problems))


def stop_and_reap(job, ranks):
    """Kill victims we are responsible for (stopped/isolated ranks), after the check."""
    for r in ranks:
        job.procs[r].kill_group()
        job.procs[r].p.wait(timeout=10)


# --------------------------------------------------------------------------------------------
# Cases


def run_fault(net, binary, world, inject, expect, reporters, what, victims_to_reap=(),
              extra_env=None, bench_args=LONG, rows_first=1):
    js = os.path.join(net.workdir, "bench.jsonl")
    job = Job(net, world, bench_argv(binary, js, *bench_args), extra_env=extra_env).start()
    if rows_first:
        wait_rows(job, js, rows_first)
    t0 = time.monotonic()
    inject(job)
    log(f"{what}: injected after {len([r for r in read_jsonl(js) if r.get('type') == 'result'])}"
        f" rows")
    summary = []
    problems = check_hang(net, job, reporters, t0, expect, js, what, summary)
    # The victims' state is kept until every reporter has answered; then they go.
    keep = [job.procs[r].pid for r in victims_to_reap]
    left = net.leftovers(exclude=keep)
    stop_and_reap(job, victims_to_reap)
    if left:
        problems.append(f"processes outlived the run inside the namespaces: {left}")
    report(what, expect, summary, problems, net)


def case_kill(net, binary, world, victim, sig="kill"):
    world, victim = int(world), int(victim)
    h = host_of_rank(victim, world)
    signum = signal.SIGKILL if sig == "kill" else signal.SIGSTOP

    def inject(job):
        os.kill(job.procs[victim].pid, signum)

    expect = Expect(net, "application", [victim], [h])
    run_fault(net, binary, world, inject, expect, [r for r in range(world) if r != victim],
              f"SIG{sig.upper()} rank {victim} of {world} (host {net.hosts[h]})",
              victims_to_reap=[victim])


def case_stop(net, binary, world, victim):
    case_kill(net, binary, world, victim, sig="stop")


def case_linkdown(net, binary, world, host, side):
    """One host's cable pulled: its veth set down on the switch side or the host side."""
    world, host = int(world), int(host)
    assert side in ("switch", "host") and 0 < host < NHOSTS

    def inject(job):
        if side == "switch":
            net.sw_cmd(["ip", "link", "set", f"h{host}", "down"],
                       undo=["ip", "link", "set", f"h{host}", "up"])
        else:
            net.host_cmd(host, ["ip", "link", "set", "eth0", "down"],
                         undo=["ip", "link", "set", "eth0", "up"])

    victims = ranks_on(host, world)
    expect = Expect(net, "host-network", victims, [host],
                    link_hosts=[host])
    run_fault(net, binary, world, inject, expect, list(range(world)),
              f"link of host {net.hosts[host]} down ({side} side of the veth), {world} ranks")


def case_drop(net, binary, world, a, b):
    """iptables DROP in host a's namespace for everything to/from host b."""
    world, a, b = int(world), int(a), int(b)

    def inject(job):
        net.iptables(a, ["INPUT", "-s", net.ips[b], "-j", "DROP"])
        net.iptables(a, ["OUTPUT", "-d", net.ips[b], "-j", "DROP"])

    # The ring crosses a<->b between the last rank on the lower host and the first on the other.
    lo, hi = sorted((a, b))
    if (lo, hi) == (0, NHOSTS - 1):
        pair = [world - 1, 0]
    else:
        pair = [ranks_on(lo, world)[-1], ranks_on(hi, world)[0]]
    expect = Expect(net, "host-network", pair, [a, b], link_hosts=[a, b],
                    ranks_alt=[ranks_on(a, world) + ranks_on(b, world)])
    run_fault(net, binary, world, inject, expect, list(range(world)),
              f"packets dropped between {net.hosts[a]} and {net.hosts[b]}, {world} ranks "
              f"(ring hop {pair[0]}->{pair[1]})")


def run_bootstrap(net, binary, world, expect, reporters, what, setup, keep=(), own_check=None):
    """Faults in place before any rank starts. `own_check(job, t0, summary)` returns the problems
    of the ranks that are not reporters (checked their own way); `keep`: fault processes (a port
    squatter) that may outlive the ranks."""
    js = os.path.join(net.workdir, "bench.jsonl")
    setup()
    t0 = time.monotonic()
    job = Job(net, world, bench_argv(binary, js, *SHORT)).start()
    summary = []
    problems = check_hang(net, job, reporters, t0, expect, js, what, summary)
    if own_check:
        problems += own_check(job, t0, summary)
    report(what, expect, summary, problems, net, keep_pids=[p.pid for p in keep])
    return job


def case_refused(net, binary, world, host):
    """REJECT --reject-with tcp-reset to the store port on host 0, for one host's address."""
    world, host = int(world), int(host)

    def setup():
        net.iptables(0, ["INPUT", "-p", "tcp", "-s", net.ips[host], "--dport", str(PORT), "-j",
                         "REJECT", "--reject-with", "tcp-reset"])

    victims = ranks_on(host, world)
    # The refused ranks never reach the store, so the other ranks cannot know their host: they
    # must name the ranks; the host is named by the refused ranks themselves (hosts, when named
    # by anyone, must be the victim's).
    expect = Expect(net, "bootstrap", victims, [host], hosts_optional=True)
    run_bootstrap(net, binary, world, expect, list(range(world)),
                  f"rendezvous port refused for {net.hosts[host]}, {world} ranks", setup)


SQUAT = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[2], int(sys.argv[1]))); s.listen(128)
open(sys.argv[4], "w").close()
while True:
    if sys.argv[3] == "accept-close":
        c, _ = s.accept(); c.close()
    else:
        time.sleep(3600)
"""


def case_portinuse(net, binary, world, kind):
    """Something already listens on MASTER_PORT on host 0 when rank 0 starts. kind: `silent`
    (listens, never accepts: connections complete in the backlog and hear nothing) or
    `accept-close` (accepts and closes every connection), bound to MASTER_ADDR.
    Rank 0 cannot bind: a prompt error naming the port and the bootstrap layer (exit 2, as for
    `--np` in tests/mp badinput.master_port_in_use). The other ranks reach the squatter instead
    of a store: each exits 3 within the deadline with a bootstrap diagnosis naming host 0's
    store (culprit rank 0, host 0)."""
    world = int(world)
    ready = os.path.join(net.workdir, "squatter.ready")
    squatter = []

    def setup():
        squatter.append(net.start(0, [sys.executable, "-c", SQUAT, str(PORT), net.ips[0], kind,
                                      ready], {}, "squatter"))
        end = time.monotonic() + 10
        while not os.path.exists(ready):
            check(time.monotonic() < end, "the port squatter did not start")
            time.sleep(0.02)

    def rank0(job, t0, summary):
        p = job.procs[0]
        rc = p.wait(TIMEOUT_S + SLACK_S)
        t = (p.t_exit or time.monotonic()) - t0
        err = p.stderr()
        summary.append((0, rc, round(t, 1), "(could not bind)", None))
        if rc != 2 or t > 5 or str(PORT) not in err or "bootstrap" not in err:
            return [f"rank 0 (port taken): exit {rc} after {t:.1f} s, expected 2 within 5 s "
                    f"with an error naming port {PORT} and the bootstrap layer\n{p.describe()}"]
        return []

    expect = Expect(net, "bootstrap", [0], [0])
    run_bootstrap(net, binary, world, expect, list(range(1, world)),
                  f"rendezvous port {PORT} already in use on {net.hosts[0]} ({kind}), "
                  f"{world} ranks", setup, keep=squatter, own_check=rank0)


def case_mismatch(net, binary, world, victim, kind):
    world, victim = int(world), int(victim)
    h = host_of_rank(victim, world)
    expect = Expect(net, "application", [victim], [h])
    # The injection is at the second size: start at once, no rows awaited.
    env = {r: {"CCSCOPE_TESTONLY_MISMATCH": f"{victim}:{kind}"} for r in range(world)}
    reporters = list(range(world))
    run_fault(net, binary, world, lambda job: None, expect, reporters,
              f"CCSCOPE_TESTONLY_MISMATCH={victim}:{kind}, {world} ranks", extra_env=env,
              bench_args=SHORT, rows_first=0)


def case_ifname(net, binary, world, host):
    """The ranks on one host ask for --ifname nosuch0; the others use the default."""
    world, host = int(world), int(host)
    victims = ranks_on(host, world)
    js = os.path.join(net.workdir, "bench.jsonl")
    job = Job(net, world, bench_argv(binary, js, *SHORT),
              per_rank_args={r: ["--ifname", "nosuch0"] for r in victims})
    t0 = time.monotonic()
    job.start()
    expect = Expect(net, "host-network", victims, [host], hosts_optional=True)
    what = f"--ifname nosuch0 on {net.hosts[host]} (ranks {victims}), {world} ranks"
    summary = []
    problems = check_hang(net, job, [r for r in range(world) if r not in victims], t0, expect, js,
                          what, summary)
    # The ranks that asked: a prompt error that names the interface, non-zero, not a hang.
    for r in victims:
        p = job.procs[r]
        rc = p.wait(TIMEOUT_S + SLACK_S)
        t = (p.t_exit or time.monotonic()) - t0
        summary.append((r, rc, round(t, 1), "(asked for nosuch0)", None))
        err = p.stderr()
        if rc in (None, 0) or "nosuch0" not in err:
            problems.append(f"rank {r} (asked for nosuch0): exit {rc} after {t:.1f} s, expected "
                            f"non-zero with an error naming nosuch0\n{p.describe()}")
    report(what, expect, summary, problems, net)


TBF = ["tbf", "rate", "10mbit", "burst", "32kbit", "latency", "50ms"]


def throttle_pair(net, a, b):
    """tbf only for traffic between hosts a and b, the other pairs at full speed."""
    for x, y in ((a, b), (b, a)):
        # htb without a default class: unclassified traffic leaves unshaped (direct queue);
        # traffic to the peer goes through class 1:20 and the tbf below it.
        net.host_cmd(x, ["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb"],
                     undo=["tc", "qdisc", "del", "dev", "eth0", "root"])
        net.host_cmd(x, ["tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:20",
                         "htb", "rate", "10gbit"])
        net.host_cmd(x, ["tc", "qdisc", "add", "dev", "eth0", "parent", "1:20", "handle", "20:",
                         *TBF])
        net.host_cmd(x, ["tc", "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip",
                         "prio", "1", "u32", "match", "ip", "dst", f"{net.ips[y]}/32",
                         "flowid", "1:20"])


def case_throttle(net, binary, world, a, b=None):
    """A slow link, not a hang. `throttle W H`: `tc qdisc add dev <veth> root tbf rate 10mbit
    burst 32kbit latency 50ms` on both ends of host H's veth (H's own link: every pair through H
    is slow). `throttle W A B`: the same tbf only for traffic between hosts A and B (a prio qdisc
    with a u32 filter on the peer's address in each of the two hosts), the other pairs at full
    speed. bench must finish (exit 0, no diagnosis); `ccscope diagnose` must name the link:
    exit 1, host-network, the hosts and ranks on it."""
    world, a = int(world), int(a)
    if b is None:
        net.sw_cmd(["tc", "qdisc", "add", "dev", f"h{a}", "root", *TBF],
                   undo=["tc", "qdisc", "del", "dev", f"h{a}", "root"])
        net.host_cmd(a, ["tc", "qdisc", "add", "dev", "eth0", "root", *TBF],
                     undo=["tc", "qdisc", "del", "dev", "eth0", "root"])
        what = f"link of {net.hosts[a]} throttled to 10mbit, {world} ranks"
        expect = Expect(net, "host-network", ranks_on(a, world), [a], link_hosts=[a],
                        every_link=True)
    else:
        b = int(b)
        throttle_pair(net, a, b)
        what = f"link {net.hosts[a]} <-> {net.hosts[b]} throttled to 10mbit, {world} ranks"
        expect = Expect(net, "host-network", ranks_on(a, world) + ranks_on(b, world), [a, b],
                        link_hosts=[a, b])
    problems = []
    # 1. bench: a sweep whose largest operation needs well under --timeout at 10 Mbit/s.
    js = os.path.join(net.workdir, "bench.jsonl")
    args = ["-b", "8", "-e", "64K", "-f", "8", "-n", "5", "-w", "1", "--timeout", f"{TIMEOUT_S}s"]
    t0 = time.monotonic()
    job = Job(net, world, bench_argv(binary, js, *args)).start()
    for r, p in enumerate(job.procs):
        rc = p.wait(120 - (time.monotonic() - t0))
        if rc != 0 or "diagnosis" in p.stderr():
            problems.append(f"bench rank {r}: exit {rc}, expected 0 and no diagnosis on a slow "
                            f"link\n{p.describe()}")
    log(f"{what}: bench exit codes {[p.p.returncode for p in job.procs]} in "
        f"{time.monotonic() - t0:.1f} s")
    # 2. diagnose names the link.
    problems += run_diagnose(net, binary, world, expect, f"{what}: diagnose", want_rc=1)
    report(what, expect, [], problems, net)


def diagnose_argv(binary, json_path, extra=()):
    return [binary, "diagnose", "--timeout", f"{TIMEOUT_S}s", "--json", json_path, *extra]


def run_diagnose(net, binary, world, expect, what, want_rc, extra=(), per_rank_args=None,
                 rank0_text=None):
    js = os.path.join(net.workdir, "diagnose.json")
    job = Job(net, world, diagnose_argv(binary, js, extra), per_rank_args=per_rank_args,
              label="diag").start()
    t0 = time.monotonic()
    problems = []
    limit = 120
    for r, p in enumerate(job.procs):
        rc = p.wait(max(0.5, limit - (time.monotonic() - t0)))
        if rc is None:
            problems.append(f"diagnose rank {r}: still running after {limit} s\n{p.describe()}")
    rcs = [p.p.returncode for p in job.procs]
    wall = time.monotonic() - t0
    text = job.procs[0].stdout() + job.procs[0].stderr()
    if rank0_text is not None:
        rank0_text.append(text)
    layer = re.search(r"layer ([\w-]+)", text)
    cul = CULPRIT_RE.search(text)
    log(f"{what}: exit codes {rcs} in {wall:.1f} s; rank 0 says: "
        + " | ".join(l.strip() for l in text.splitlines() if "layer" in l or "culprit" in l)[:600])
    if rcs[0] != want_rc:
        problems.append(f"{what}: rank 0 exit {rcs[0]}, expected {want_rc}\n{job.procs[0].describe(40)}")
    if expect is not None:
        d = None
        try:
            with open(js) as f:
                rec = json.load(f)
            rec = rec[0] if isinstance(rec, list) else rec
            c = rec.get("culprit") or {}
            d = {"layer": rec.get("layer"), "verdict": rec.get("verdict"),
                 "ranks": c.get("ranks") or [], "hosts": c.get("hosts") or [],
                 "links": c.get("links") or []}
        except (OSError, ValueError, AttributeError, IndexError) as e:
            problems.append(f"{what}: no diagnosis in {js}: {e}")
        if d is not None:
            bad = expect.mismatches(d)
            if bad:
                problems.append(f"{what}: {'; '.join(bad)}\n  got: layer {d['layer']}: "
                                f"{d['verdict']}\n  culprit {d['ranks']} {d['hosts']} "
                                f"{d['links']}\n{job.procs[0].describe(40)}")
    elif layer and want_rc == 0 and cul:
        problems.append(f"{what}: a healthy network produced a culprit: {cul.group(0)}")
    return problems


def case_healthy(net, binary, world, runs):
    world, runs = int(world), int(runs)
    for i in range(runs):
        js = os.path.join(net.workdir, f"healthy{i}.jsonl")
        t0 = time.monotonic()
        job = Job(net, world, bench_argv(binary, js, *SHORT), label=f"h{i}r").start()
        problems = []
        for r, p in enumerate(job.procs):
            rc = p.wait(60 - (time.monotonic() - t0))
            if rc != 0:
                problems.append(f"run {i} rank {r}: exit {rc}\n{p.describe()}")
            if "diagnosis" in p.stderr():
                problems.append(f"run {i} rank {r}: printed a diagnosis\n{p.describe()}")
        jd, _ = json_diagnosis(js)
        if jd:
            problems.append(f"run {i}: --json has a diagnosis record: {jd}")
        rows = [r for r in read_jsonl(js) if r.get("type") == "result"]
        if not rows:
            problems.append(f"run {i}: no result rows in {js}")
        log(f"healthy run {i + 1}/{runs}: exit codes {[p.p.returncode for p in job.procs]}, "
            f"{len(rows)} rows, {time.monotonic() - t0:.1f} s")
        left = net.leftovers()
        if left:
            problems.append(f"processes outlived healthy run {i}: {left}")
        if problems:
            raise TestFailure("\n".join(problems))


def case_diagnose_healthy(net, binary, world, runs=1):
    for i in range(int(runs)):
        problems = run_diagnose(net, binary, int(world), None, f"diagnose on a healthy network "
                                f"({world} ranks, run {i + 1})", want_rc=0)
        if problems:
            raise TestFailure("\n".join(problems))


def case_diagnose_ifname(net, binary, world, host):
    world, host = int(world), int(host)
    victims = ranks_on(host, world)
    expect = Expect(net, "host-network", victims, [host], hosts_optional=True)
    problems = run_diagnose(net, binary, world, expect,
                            f"diagnose, --ifname nosuch0 on {net.hosts[host]}", want_rc=1,
                            per_rank_args={r: ["--ifname", "nosuch0"] for r in victims})
    report(f"diagnose --ifname nosuch0 on {net.hosts[host]}", expect, [], problems, net)


def case_diagnose_drop(net, binary, world, a, b):
    world, a, b = int(world), int(a), int(b)
    net.iptables(a, ["INPUT", "-s", net.ips[b], "-j", "DROP"])
    net.iptables(a, ["OUTPUT", "-d", net.ips[b], "-j", "DROP"])
    expect = Expect(net, "host-network", ranks_on(a, world) + ranks_on(b, world),
                    [a, b], link_hosts=[a, b])
    what = f"diagnose, packets dropped between {net.hosts[a]} and {net.hosts[b]}"
    problems = run_diagnose(net, binary, world, expect, what, want_rc=1)
    report(what, expect, [], problems, net)


def case_diagnose_hop(net, binary, world, a, b):
    """The link between ring-adjacent hosts a and b throttled (tc tbf 10mbit): the allreduce
    runs slow, the ring is bisected, and the hop a -> b is named with the link between them
    (the pair probe already names the link: the verdict is host-network either way)."""
    world, a, b = int(world), int(a), int(b)
    throttle_pair(net, a, b)
    expect = Expect(net, "host-network", ranks_on(a, world) + ranks_on(b, world), [a, b],
                    link_hosts=[a, b])
    what = f"diagnose, link {net.hosts[a]} <-> {net.hosts[b]} throttled, ring hops"
    text = []
    problems = run_diagnose(net, binary, world, expect, what, want_rc=1, rank0_text=text)
    hop = next((ln for ln in (text[0] if text else "").splitlines()
                if re.match(r"(PASS|FAIL|SKIP) +[\w-]+ +ring hops over tcp", ln)), "")
    log(f"{what}: {hop}")
    if not (hop.startswith("FAIL host-network") and net.hosts[a] in hop and net.hosts[b] in hop):
        problems.append(f"{what}: the ring-hop line does not fail naming both hosts: {hop!r}")
    report(what, expect, [], problems, net)


CASES = {
    "diagnose_hop": case_diagnose_hop,                # WORLD HOST_A HOST_B (ring-adjacent)
    "healthy": case_healthy,                  # WORLD RUNS
    "kill": case_kill,                        # WORLD VICTIM_RANK
    "stop": case_stop,                        # WORLD VICTIM_RANK
    "linkdown": case_linkdown,                # WORLD HOST switch|host
    "drop": case_drop,                        # WORLD HOST_A HOST_B
    "refused": case_refused,                  # WORLD HOST
    "portinuse": case_portinuse,              # WORLD silent|accept-close
    "throttle": case_throttle,                # WORLD HOST
    "ifname": case_ifname,                    # WORLD HOST
    "mismatch": case_mismatch,                # WORLD VICTIM_RANK skip|count
    "diagnose_healthy": case_diagnose_healthy,  # WORLD [RUNS]
    "diagnose_ifname": case_diagnose_ifname,  # WORLD HOST
    "diagnose_drop": case_diagnose_drop,      # WORLD HOST_A HOST_B
}


def skip_reason():
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "iptables", "tc", "unshare"):
        if not shutil.which(tool):
            return f"{tool} not found"
    probe = f"{TAG_PREFIX}{os.getpid()}probe"
    r = sh(["ip", "netns", "add", probe], check_rc=False)
    if r.returncode != 0:
        return f"ip netns unavailable: {r.stdout.strip()}"
    try:
        r = sh(["ip", "netns", "exec", probe, "unshare", "--uts", "--", "/bin/sh", "-c",
                "hostname ccsntprobe && hostname"], check_rc=False)
        if r.returncode != 0 or r.stdout.strip() != "ccsntprobe":
            return f"unshare --uts + hostname does not work: {r.stdout.strip()}"
        r = sh(["ip", "netns", "exec", probe, "iptables", "-w", "-L", "-n"], check_rc=False)
        if r.returncode != 0:
            return f"iptables unusable in a namespace: {r.stdout.strip()}"
    finally:
        sh(["ip", "netns", "del", probe], check_rc=False)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ccscope", required=True)
    ap.add_argument("--deadline", type=float, default=120)
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    why = skip_reason()
    if why:
        log(f"SKIP: {why}")
        return SKIP
    binary = os.path.abspath(a.ccscope)
    if a.case.startswith("diagnose"):
        r = subprocess.run([binary, "diagnose", "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            log(f"SKIP: `ccscope diagnose` not available: {r.stdout.strip()[:200]}")
            return SKIP

    workdir = tempfile.mkdtemp(prefix=f"ccsnt-{a.case}-")
    net = Net(workdir)

    def on_alarm(signum, frame):
        raise DeadlineExpired(f"deadline of {a.deadline} s expired")

    def on_term(signum, frame):
        raise DeadlineExpired(f"signal {signum}")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.setitimer(signal.ITIMER_REAL, a.deadline)
    passed = False
    t0 = time.monotonic()
    try:
        net.up()
        log(f"case {a.case} {' '.join(a.args)}: hosts {net.hosts} at {net.ips}, work dir {workdir}")
        CASES[a.case](net, binary, *a.args)
        passed = True
    except TestFailure as e:
        log(f"FAIL: {e}")
    except DeadlineExpired as e:
        log(f"FAIL: {e}; processes (label, exit code): "
            f"{[(p.label, p.p.poll()) for p in net.procs]}")
        for p in net.procs:
            log(p.describe(10))
    except Exception as e:  # setup errors and bugs here: still clean up
        log(f"FAIL: {type(e).__name__}: {e}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        errors = net.down()
        for e in errors:
            log(f"cleanup: {e}")
        if errors:
            passed = False
        if passed and not os.environ.get("CCSCOPE_NETNS_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            log(f"logs kept in {workdir}")
    log(f"{'PASS' if passed else 'FAIL'} in {time.monotonic() - t0:.1f} s")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
