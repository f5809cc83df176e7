#!/usr/bin/python3
"""examples/ci/ccscope-ci.sh, the one script the GPU-runner workflows call, run as they run it:
without a GPU it says the NCCL bench was skipped and runs the same steps over shared memory
(results, HTML, Markdown, JUnit); a run slower than its baseline fails it; bad usage exits 2.
The workflows in examples/ci/ call only this script (checked here too)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "examples", "ci", "ccscope-ci.sh")
BIN = os.environ.get("CCSCOPE_BIN", os.path.join(ROOT, "build", "app", "ccscope"))


def run(*args):
    env = dict(os.environ, CCSCOPE=BIN)
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, env=env,
                          timeout=240)


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


class CiExampleTest(unittest.TestCase):
    def test_the_steps_run_and_a_slower_run_fails_against_its_baseline(self):
        with tempfile.TemporaryDirectory() as tmp:
            first = os.path.join(tmp, "first")
            res = run("--out", first, "--sizes", "8:4K", "--baseline", os.path.join(tmp, "no"))
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
            if not has_gpu():
                self.assertIn("SKIPPED the NCCL bench", res.stdout)
            for name in ("results.jsonl", "report.html", "report.md", "junit.xml"):
                self.assertGreater(os.path.getsize(os.path.join(first, name)), 0, name)
            cases = ET.parse(os.path.join(first, "junit.xml")).getroot().iter("testcase")
            self.assertGreater(len(list(cases)), 0)
            # A baseline twenty times faster: this run is a regression, and the script fails.
            fast = os.path.join(tmp, "fast.jsonl")
            with open(os.path.join(first, "results.jsonl")) as f, open(fast, "w") as out:
                for line in f:
                    rec = json.loads(line)
                    if rec.get("type") == "result":
                        rec["time_us"] /= 20
                        rec["algbw_gbps"] *= 20
                        rec["busbw_gbps"] *= 20
                        for k in ("min", "mean", "p50", "p90", "p99", "max"):
                            rec["lat_us"][k] /= 20
                    out.write(json.dumps(rec) + "\n")
            res = run("--out", os.path.join(tmp, "second"), "--sizes", "8:4K", "--baseline", fast)
            self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
            self.assertIn("FAILED", res.stdout)

    def test_bad_usage_exits_2_with_one_line(self):
        res = run("--frobnicate")
        self.assertEqual(res.returncode, 2)
        self.assertEqual(len(res.stderr.strip().splitlines()), 1, res.stderr)

    def test_the_workflows_only_call_the_script(self):
        for name in ("github-actions.yml", "gitlab-ci.yml"):
            with open(os.path.join(ROOT, "examples", "ci", name)) as f:
                text = f.read()
            self.assertIn("examples/ci/ccscope-ci.sh", text, name)
            self.assertNotIn("ccscope bench", text, name)


if __name__ == "__main__":
    sys.exit(unittest.main())
