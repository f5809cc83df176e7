"""Jobs on the netns hosts and what their diagnoses must say (ctest label `netns`): 1-2 ccscope
ranks per host over tcp under a torchrun-style environment (rank 0 on host 0 hosts the
rendezvous store), one fault injected, and every rank's exit code, time to the diagnosis, layer
and culprit checked (stderr of every reporting rank and the diagnosis record in rank 0's --json
file, or `ccscope diagnose`'s --json record).
"""

import json
import os
import re
import time
import uuid

from labcommon import TestFailure, check, log, read_records, result_records, torchrun_env
from netlab import NHOSTS, PORT, SLACK_S, TIMEOUT_S

# A sweep that runs for a long time (the fault lands mid-run) with every operation far below
# --timeout on a healthy network.
LONG = ["-b", "64K", "-e", "64M", "-f", "2", "-n", "200", "-w", "1", "--timeout", f"{TIMEOUT_S}s"]
SHORT = ["-b", "8", "-e", "1M", "-f", "4", "-n", "5", "-w", "1", "--timeout", f"{TIMEOUT_S}s"]

DIAG_RE = re.compile(r"^ccscope: rank (\d+): diagnosis: layer ([\w-]+): (.*)$", re.M)
CULPRIT_RE = re.compile(r"^\s+culprit: ranks \[(.*?)\] hosts \[(.*?)\] links \[(.*)\]$", re.M)


def host_of_rank(rank, world):
    """4 ranks: one per host; 8 ranks: two per host (ranks 2h and 2h+1 on host h)."""
    return rank // (world // NHOSTS)


def ranks_on(host, world):
    return [r for r in range(world) if host_of_rank(r, world) == host]


class Job:
    """`world` ranks of one command spread over the hosts; extra_env and per_rank_args by rank."""

    def __init__(self, net, world, argv, extra_env=None, per_rank_args=None, label="rank"):
        self.net = net
        self.world = world
        self.token = uuid.uuid4().hex
        self.procs = []
        self.argv = argv
        self.extra_env = extra_env or {}
        self.per_rank_args = per_rank_args or {}
        self.label = label

    def env(self, r):
        return {**torchrun_env(r, self.world, PORT, self.token, addr=self.net.ips[0],
                               per_host=self.world // NHOSTS),
                **self.extra_env.get(r, {})}

    def start(self):
        for r in range(self.world):
            argv = self.argv + self.per_rank_args.get(r, [])
            self.procs.append(self.net.start(host_of_rank(r, self.world), argv, self.env(r),
                                             f"{self.label}{r}"))
        return self


def bench_argv(binary, json_path, *args):
    return [binary, "bench", "allreduce", "--transport", "tcp", *[str(a) for a in args],
            "--json", json_path]


def wait_rows(job, path, n_rows, limit=60):
    end = time.monotonic() + limit
    while True:
        rows = result_records(path)
        if len(rows) >= n_rows:
            return rows
        for p in job.procs:
            if p.poll() is not None:
                raise TestFailure(f"{p.label} exited with {p.p.returncode} before {n_rows} rows "
                                  f"were written\n{p.describe()}")
        check(time.monotonic() < end, f"fewer than {n_rows} result rows after {limit} s")
        time.sleep(0.02)


# --------------------------------------------------------------------------------------------
# Diagnoses


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


def diagnosis_of(rec):
    """A diagnosis JSON record in parse_diagnosis's form."""
    c = rec.get("culprit") or {}
    return {"rank": rec.get("reported_by"), "layer": rec.get("layer"),
            "verdict": rec.get("verdict"), "ranks": c.get("ranks") or [],
            "hosts": c.get("hosts") or [], "links": c.get("links") or []}


def json_diagnosis(path):
    """(the first diagnosis record of a bench --json file, how many there are)."""
    recs = [r for r in read_records(path) if r.get("type") == "diagnosis"]
    return (diagnosis_of(recs[0]) if recs else None), len(recs)


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
        # hosts_optional: only ranks must be named (--ifname, a refused store): hosts, when
        # named, must be the culprit ranks' hosts.
        self.hosts_optional = hosts_optional
        # ranks_alt: other culprit rank sets that are equally right (e.g. the two ranks whose
        # traffic crosses a link, or every rank on its two hosts).
        self.ranks_alt = [sorted(x) for x in ranks_alt]

    @classmethod
    def link(cls, net, world, a, b):
        """The link between hosts a and b: host-network, both hosts and all their ranks."""
        return cls(net, "host-network", ranks_on(a, world) + ranks_on(b, world), [a, b],
                   link_hosts=[a, b])

    def _names(self, h):
        return self.net.names[h]

    def _host_names(self, hosts):
        return [self.net.hosts[h] for h in hosts]

    def __str__(self):
        s = f"layer {self.layer}, culprit ranks {self.ranks} hosts {self._host_names(self.hosts)}"
        if self.link_hosts:
            s += f", a link naming {' and '.join(self._host_names(self.link_hosts))}"
        return s

    def _host_index(self, name):
        """Host h when `name` is one of its names, or a label that carries its address."""
        for h in range(NHOSTS):
            ip = self.net.ips[h]
            if name in self._names(h) or re.search(rf"(?<![\w.]){re.escape(ip)}(?![\w.])", name):
                return h
        return name

    def _culprit_mismatches(self, d):
        got_ranks = sorted(set(d["ranks"]))
        got = sorted({self._host_index(x) for x in d["hosts"]}, key=str)
        want_hosts = self._host_names(self.hosts)
        bad = []
        if self.every_link:
            if not set(self.ranks) <= set(got_ranks):
                bad.append(f"culprit ranks {got_ranks} do not include {self.ranks}")
            if not set(self.hosts) <= set(got):
                bad.append(f"culprit hosts {sorted(set(d['hosts']))} do not include {want_hosts}")
            return bad
        if sorted(d["ranks"]) != self.ranks and sorted(d["ranks"]) not in self.ranks_alt:
            alt = "".join(f" or {x}" for x in self.ranks_alt)
            bad.append(f"culprit ranks {sorted(d['ranks'])} != {self.ranks}{alt}")
        if got != self.hosts and not (self.hosts_optional and set(got) <= set(self.hosts)):
            bad.append(f"culprit hosts {sorted(set(d['hosts']))} != {want_hosts}")
        return bad

    def _link_mismatches(self, d):
        def names(link, h):
            return any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", link)
                       for n in self._names(h))
        ok = [all(names(l, h) for h in self.link_hosts) for l in d["links"]]
        pair = " and ".join(self._host_names(self.link_hosts))
        bad = []
        if self.every_link and ok and not all(ok):
            bad.append(f"culprit links that do not go through {pair}: "
                       f"{[l for l, k in zip(d['links'], ok) if not k]}")
        if not any(ok):
            bad.append(f"no culprit link names {pair} (links {d['links']})")
        return bad

    def mismatches(self, d):
        bad = [f"layer {d['layer']!r} != {self.layer!r}"] if d["layer"] != self.layer else []
        bad += self._culprit_mismatches(d)
        if self.link_hosts:
            bad += self._link_mismatches(d)
        return bad


def mismatch_problem(what, bad, d, more=""):
    """One problem line for a diagnosis that says the wrong thing."""
    return (f"{what}: {'; '.join(bad)}\n  got: layer {d['layer']}: {d['verdict']}\n  culprit "
            f"ranks {d['ranks']} hosts {d['hosts']} links {d['links']}{more}")


def check_reporter(p, r, t0, expect, summary):
    """One reporter: exit 3 within TIMEOUT_S + SLACK_S of t0, the expected diagnosis on stderr."""
    limit = TIMEOUT_S + SLACK_S
    rc = p.wait(max(0.5, limit + 20 - (time.monotonic() - t0)))
    t = (p.t_exit or time.monotonic()) - t0
    diag = parse_diagnosis(p.stderr())
    summary.append((r, rc, round(t, 1), diag and f'{diag["layer"]}: {diag["verdict"][:240]}',
                    diag and (diag["ranks"], diag["hosts"], diag["links"])))
    if rc is None:
        return [f"rank {r}: still running {t:.1f} s after the fault (limit {limit} s)"
                f"\n{p.describe()}"]
    problems = []
    if rc != 3 or t > limit:
        problems.append(f"rank {r}: exit code {rc} after {t:.1f} s, expected 3 within "
                        f"{limit} s\n{p.describe()}")
    if diag is None:
        return problems + [f"rank {r}: no diagnosis on stderr\n{p.describe()}"]
    bad = expect.mismatches(diag)
    return problems + ([mismatch_problem(f"rank {r}", bad, diag)] if bad else [])


def check_hang(job, reporters, t0, expect, json_path, summary):
    """Every reporter's exit and diagnosis; rank 0 (when a reporter) writes it to the --json
    file. Collects all mismatches."""
    problems = []
    for r in reporters:
        problems += check_reporter(job.procs[r], r, t0, expect, summary)
    if 0 in reporters:
        jd, n = json_diagnosis(json_path)
        if jd is None:
            problems.append(f"rank 0's --json file has no diagnosis record ({json_path})")
        else:
            bad = expect.mismatches(jd) + ([f"{n} diagnosis records, expected 1"] if n != 1 else [])
            if bad:
                problems.append(mismatch_problem("--json diagnosis record", bad, jd))
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


# --------------------------------------------------------------------------------------------
# Runs


def run_fault(net, binary, world, inject, expect, reporters, what, victims_to_reap=(),
              extra_env=None, bench_args=LONG, rows_first=1):
    """A bench job faulted by inject(job) once rows_first rows are in: the reporters' verdicts."""
    js = os.path.join(net.workdir, "bench.jsonl")
    job = Job(net, world, bench_argv(binary, js, *bench_args), extra_env=extra_env).start()
    if rows_first:
        wait_rows(job, js, rows_first)
    t0 = time.monotonic()
    inject(job)
    log(f"{what}: injected after {len(result_records(js))} rows")
    summary = []
    problems = check_hang(job, reporters, t0, expect, js, summary)
    # The victims' state is kept until every reporter has answered; then they go.
    left = net.leftovers(exclude=[job.procs[r].pid for r in victims_to_reap])
    for r in victims_to_reap:
        job.procs[r].kill_group()
        job.procs[r].p.wait(timeout=10)
    if left:
        problems.append(f"processes outlived the run inside the namespaces: {left}")
    report(what, expect, summary, problems, net)


def run_bootstrap(net, binary, world, expect, reporters, what, setup, keep=(), own_check=None):
    """Faults in place before any rank starts. `own_check(job, t0, summary)` returns the problems
    of the ranks that are not reporters (checked their own way); `keep`: fault processes (a port
    squatter) that may outlive the ranks."""
    js = os.path.join(net.workdir, "bench.jsonl")
    setup()
    t0 = time.monotonic()
    job = Job(net, world, bench_argv(binary, js, *SHORT)).start()
    summary = []
    problems = check_hang(job, reporters, t0, expect, js, summary)
    if own_check:
        problems += own_check(job, t0, summary)
    report(what, expect, summary, problems, net, keep_pids=[p.pid for p in keep])
    return job


def diagnose_record(js):
    """`ccscope diagnose`'s --json record in parse_diagnosis's form."""
    with open(js) as f:
        rec = json.load(f)
    return diagnosis_of(rec[0] if isinstance(rec, list) else rec)


def run_diagnose(net, binary, world, expect, what, want_rc, per_rank_args=None, rank0_text=None):
    """`ccscope diagnose` on every host: rank 0's exit code and (expect not None) its verdict,
    or (expect None, want_rc 0) no culprit at all. The problems found."""
    js = os.path.join(net.workdir, "diagnose.json")
    argv = [binary, "diagnose", "--timeout", f"{TIMEOUT_S}s", "--json", js]
    job = Job(net, world, argv, per_rank_args=per_rank_args, label="diag").start()
    t0, limit, problems = time.monotonic(), 120, []
    for r, p in enumerate(job.procs):
        if p.wait(max(0.5, limit - (time.monotonic() - t0))) is None:
            problems.append(f"diagnose rank {r}: still running after {limit} s\n{p.describe()}")
    rcs = [p.p.returncode for p in job.procs]
    text = job.procs[0].stdout() + job.procs[0].stderr()
    if rank0_text is not None:
        rank0_text.append(text)
    log(f"{what}: exit codes {rcs} in {time.monotonic() - t0:.1f} s; rank 0 says: "
        + " | ".join(l.strip() for l in text.splitlines() if "layer" in l or "culprit" in l)[:600])
    if rcs[0] != want_rc:
        problems.append(f"{what}: rank 0 exit {rcs[0]}, expected {want_rc}\n"
                        f"{job.procs[0].describe(40)}")
    if expect is None:
        cul = CULPRIT_RE.search(text)
        if re.search(r"layer ([\w-]+)", text) and want_rc == 0 and cul:
            problems.append(f"{what}: a healthy network produced a culprit: {cul.group(0)}")
        return problems
    try:
        d = diagnose_record(js)
    except (OSError, ValueError, AttributeError, IndexError) as e:
        return problems + [f"{what}: no diagnosis in {js}: {e}"]
    bad = expect.mismatches(d)
    if bad:
        problems.append(mismatch_problem(what, bad, d, f"\n{job.procs[0].describe(40)}"))
    return problems
