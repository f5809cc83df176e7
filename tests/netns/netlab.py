"""The network lab of the fault-injection suite (ctest label `netns`): 4 "hosts" as network
namespaces joined by a Linux bridge that lives in a fifth, dedicated "switch" namespace (the root
namespace is never touched: no addresses, routes, iptables rules or qdiscs there), the processes
started inside them, and the case runner that always tears it all down.

Layout (tag = ccsnt<pid>, unique per run; names inside a namespace are private to it):
  namespace <tag>sw : bridge br0, veth ends h0..h3 (the "switch ports")
  namespace <tag>h<i>: veth end eth0 = 10.213.0.<i+1>/24, lo; hostname <tag>h<i>
                       (each rank runs under `unshare --uts` and sets its own hostname), or,
                       with CCSCOPE_NETNS_HOSTNAME=NAME, NAME on every host (as containers do):
                       ccscope must then tell the hosts apart by more than their name
Only 10.213.0.1-4 and loopback are ever targets, and only inside these namespaces.

Cleanup (always, also on failure, SIGTERM/SIGINT and the internal deadline): every process group
started here, then every process still inside one of the namespaces, then the iptables rules and
qdiscs added, then the namespaces (which takes the veths and the bridge with them). Processes
carry PR_SET_PDEATHSIG so that even a SIGKILLed script does not leave ranks behind; namespaces
left by a SIGKILLed run (creator pid gone) are removed by the next run.
"""

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import labcommon  # tests/mp/labcommon.py: the test scripts put tests/mp on the path
from labcommon import (SKIP, DeadlineExpired, TestFailure, alive, arm_deadline,
                       case_arguments, cases_in, clean_env, disarm_deadline, log)

labcommon.SUITE = "netns"

SUBNET = "10.213.0"          # private /24 that exists only inside this run's namespaces
PORT = 29500                 # MASTER_PORT: namespaces are private, so no clash with anything
TIMEOUT_S = 4                # --timeout of every faulted run
SLACK_S = 10                 # a fault must be diagnosed within timeout + 10 s
NHOSTS = 4
TAG_PREFIX = "ccsnt"
SAME_HOSTNAME = os.environ.get("CCSCOPE_NETNS_HOSTNAME", "")


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


class Net:
    def __init__(self, workdir):
        self.tag = f"{TAG_PREFIX}{os.getpid()}"
        self.sw = f"{self.tag}sw"
        self.hosts = [f"{self.tag}h{i}" for i in range(NHOSTS)]  # namespace name == hostname
        self.ips = [f"{SUBNET}.{i + 1}" for i in range(NHOSTS)]
        # What a diagnosis may call host i: its hostname or its address; with one hostname for
        # every host, only a name that carries the address tells them apart.
        if SAME_HOSTNAME:
            self.names = [(f"{SAME_HOSTNAME} ({ip})", ip) for ip in self.ips]
        else:
            self.names = list(zip(self.hosts, self.ips))
        self.workdir = workdir
        self.procs = []          # Proc
        self.undo = []           # argv run in reverse order at cleanup
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
        self._wait_forwarding()

    def _wait_forwarding(self):
        """Until the bridge ports forward: every host answers TCP (a refusal) from host 0."""
        end = time.monotonic() + 10
        while True:
            r = sh(["ip", "netns", "exec", self.hosts[0], sys.executable, "-c", TCP_PROBE,
                    *self.ips[1:]], check_rc=False)
            if r.returncode == 0:
                return
            if time.monotonic() > end:
                raise RuntimeError(f"hosts do not reach each other after 10 s: {r.stdout}")
            time.sleep(0.2)

    def _sweep_stale(self):
        """Namespaces left by a run of this suite that was SIGKILLed (its pid is gone)."""
        out = sh(["ip", "netns", "list"], check_rc=False).stdout
        for line in out.splitlines():
            m = re.match(rf"^({TAG_PREFIX}(\d+)(?:sw|h\d+))\b", line)
            if m and int(m.group(2)) != os.getpid() and not alive(int(m.group(2))):
                self._kill_ns_pids(m.group(1))
                sh(["ip", "netns", "del", m.group(1)], check_rc=False)
                log(f"removed stale namespace {m.group(1)}")

    # -- processes --
    def start(self, host, argv, env_extra, label):
        ns = self.hosts[host]
        env = clean_env(also_prefixes=("NCCL_", "UCX_"))
        env["CCSCOPE_DUMP_DIR"] = self.workdir
        env.update(env_extra)
        out = open(os.path.join(self.workdir, f"{label}.out"), "wb")
        err = open(os.path.join(self.workdir, f"{label}.err"), "wb")
        # ip netns exec, unshare and sh all exec: the pid is the rank's own pid.
        full = ["ip", "netns", "exec", ns, "unshare", "--uts", "--", "/bin/sh", "-c",
                'hostname "$0" && exec "$@"', SAME_HOSTNAME or ns, *argv]
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
            pids = [p for p in self.ns_pids(ns) if p not in exclude and alive(p)]
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
        """Removes everything up() and the case created; the errors met on the way."""
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
        return (f"--- {self.label} (pid {self.pid}, rc {self.p.returncode}) stderr "
                f"(last {lines}):\n"
                + "\n".join(err[-lines:]) + f"\n--- {self.label} stdout (last 5):\n"
                + "\n".join(out[-5:]))


# --------------------------------------------------------------------------------------------
# The case runner


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


def diagnose_skip_reason(binary):
    r = subprocess.run([binary, "diagnose", "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return None if r.returncode == 0 else (
        f"`ccscope diagnose` not available: {r.stdout.strip()[:200]}")


def run_case(net, cases, a):
    """Builds the network, runs case a.case and tears the network down: passed or not."""
    passed = False
    try:
        net.up()
        log(f"case {a.case} {' '.join(a.args)}: hosts {net.hosts} at {net.ips}, "
            f"work dir {net.workdir}")
        cases[a.case](net, os.path.abspath(a.ccscope), *a.args)
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
        disarm_deadline()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        errors = net.down()
        for e in errors:
            log(f"cleanup: {e}")
    return passed and not errors


def main(namespace):
    """Runs one case_CASE function of namespace (a test script's globals()):
    SCRIPT --ccscope BIN [--deadline S] CASE ARGS...; 0 pass, 1 fail, 77 skip
    (not root, no `ip netns`, iptables, tc or unshare --uts). Logs of a failed run (every rank's
    stdout/stderr, flight-recorder dumps) stay in /tmp/ccsnt-<case>-*; CCSCOPE_NETNS_KEEP=1
    keeps them after a pass too."""
    cases = cases_in(namespace)
    a = case_arguments(cases, mpirun=False)
    binary = os.path.abspath(a.ccscope)
    why = skip_reason() or (a.case.startswith("diagnose") and diagnose_skip_reason(binary))
    if why:
        log(f"SKIP: {why}")
        return SKIP
    net = Net(tempfile.mkdtemp(prefix=f"ccsnt-{a.case}-"))

    def on_term(signum, frame):
        raise DeadlineExpired(f"signal {signum}")

    arm_deadline(a.deadline, on_term)
    t0 = time.monotonic()
    passed = run_case(net, cases, a)
    if passed and not os.environ.get("CCSCOPE_NETNS_KEEP"):
        shutil.rmtree(net.workdir, ignore_errors=True)
    else:
        log(f"logs kept in {net.workdir}")
    log(f"{'PASS' if passed else 'FAIL'} in {time.monotonic() - t0:.1f} s")
    return 0 if passed else 1
