#!/usr/bin/env python3
"""scripts/gpu_check*.py without a GPU: the relocate step's links for a build tree carried in from
another path (fake trees under a temporary folder, a CMakeCache.txt naming where they were made)
and its library lookup, the ctest step's repeated runs (a fake ctest), the concurrency step's
batches and how a job is judged from its JSON Lines, run_many's shared timeout and unset
environment, the fault step's survivor times, the options; and the real script on a fake tree:
relocate links it, the GPU steps skip. Usage: gpu_check_test.py (ctest: perf.gpu_check)."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gpu_check  # noqa: E402
import gpu_check_bench as bench  # noqa: E402
import gpu_check_lib as lib  # noqa: E402
import gpu_check_perf as perf  # noqa: E402
import gpu_check_relocate as reloc  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")


def fake_tree(build_dir, src, binary):
    """A build tree as far as relocate reads it: CMakeCache.txt with the paths it was made at."""
    os.makedirs(build_dir, exist_ok=True)
    with open(os.path.join(build_dir, "CMakeCache.txt"), "w", encoding="utf-8") as f:
        f.write(f"# For build in directory: {binary}\nCMAKE_GENERATOR:INTERNAL=Ninja\n"
                f"CMAKE_HOME_DIRECTORY:INTERNAL={src}\nccscope_BINARY_DIR:STATIC={binary}\n"
                f"ccscope_SOURCE_DIR:STATIC={src}\nCMAKE_CACHEFILE_DIR:INTERNAL={binary}\n")


class RelocateTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpu-check-test-")
        self.t = os.path.realpath(self.tmp.name)
        self.root = os.path.join(self.t, "here", "repo")  # this machine's checkout
        self.old = os.path.join(self.t, "there", "main")  # where the tree was made

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_tree_made_under_another_root_links_that_root_only(self):
        build = os.path.join(self.root, "build", "gpu-carry")
        fake_tree(build, self.old, os.path.join(self.old, "build", "gpu-carry"))
        self.assertEqual(reloc.link_recorded(build, self.root, make=False),
                         [{"path": self.old, "target": self.root, "for": "source root",
                           "made": False}])
        self.assertFalse(os.path.lexists(self.old), "make=False links nothing")
        links = reloc.link_recorded(build, self.root)
        self.assertEqual([(x["path"], x["made"]) for x in links], [(self.old, True)])
        self.assertEqual(os.readlink(self.old), self.root)
        recorded_build = os.path.join(self.old, "build", "gpu-carry")
        self.assertEqual(os.path.realpath(recorded_build), os.path.realpath(build))
        # A second run (a warm machine) finds the link made before and makes none.
        again = reloc.link_recorded(build, self.root)
        self.assertEqual([(x["path"], x["made"]) for x in again], [(self.old, False)])

    def test_a_build_tree_recorded_outside_the_root_gets_a_link_of_its_own(self):
        build = os.path.join(self.root, "build", "gpu-carry")
        elsewhere = os.path.join(self.t, "scratch", "b")
        fake_tree(build, self.old, elsewhere)
        links = reloc.link_recorded(build, self.root)
        self.assertEqual([(x["path"], x["for"]) for x in links],
                         [(self.old, "source root"), (elsewhere, "build tree")])
        self.assertEqual(os.path.realpath(elsewhere), os.path.realpath(build))

    def test_a_build_tree_at_another_place_under_the_root(self):
        build = os.path.join(self.root, "build", "gpu-carry")
        fake_tree(build, self.old, os.path.join(self.old, "build", "prebuilt"))
        links = reloc.link_recorded(build, self.root)
        inside = os.path.join(self.root, "build", "prebuilt")
        self.assertEqual([x["path"] for x in links], [self.old, inside])
        self.assertEqual(os.path.realpath(os.path.join(self.old, "build", "prebuilt")),
                         os.path.realpath(build))

    def test_a_tree_at_its_own_paths_needs_no_link(self):
        build = os.path.join(self.root, "build")
        fake_tree(build, self.root, build)
        self.assertEqual(reloc.link_recorded(build, self.root), [])

    def test_a_recorded_path_that_is_something_else_fails_in_one_line(self):
        build = os.path.join(self.root, "build", "gpu-carry")
        fake_tree(build, self.old, os.path.join(self.old, "build", "gpu-carry"))
        os.makedirs(self.old)  # another checkout there
        with self.assertRaises(reloc.RelocateError) as e:
            reloc.link_recorded(build, self.root)
        msg = str(e.exception)
        self.assertNotIn("\n", msg)
        self.assertIn(f"source root at {self.old}, which exists here and is a folder", msg)
        os.rmdir(self.old)
        os.symlink(os.path.join(self.t, "nowhere"), self.old)
        with self.assertRaisesRegex(reloc.RelocateError, "is a link to .*nowhere"):
            reloc.link_recorded(build, self.root)

    def test_a_tree_without_recorded_paths_is_refused(self):
        build = os.path.join(self.root, "build")
        os.makedirs(build)
        with open(os.path.join(build, "CMakeCache.txt"), "w", encoding="utf-8") as f:
            f.write("CMAKE_GENERATOR:INTERNAL=Ninja\n")
        with self.assertRaisesRegex(reloc.RelocateError, "records no CMAKE_HOME_DIRECTORY"):
            reloc.link_recorded(build, self.root)

    def test_the_script_links_a_carried_tree_and_records_it(self):
        """The real script: a copy of no checkout (this one's scripts are run) with a fake tree
        whose recorded root is free: relocate passes, naming the link, in gpu-check.json."""
        build, out = os.path.join(self.t, "carried"), os.path.join(self.t, "out")
        made_at = os.path.join(self.t, "there", "build-gpu")  # outside the recorded root
        fake_tree(build, self.old, made_at)
        p = subprocess.run([SCRIPT, "--no-build", "--build-dir", build, "--steps", "gpu-info",
                            "--budget", "30", "--out", out], capture_output=True, text=True,
                           timeout=120, check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(out, "gpu-check.json"), encoding="utf-8") as f:
            steps = {s["name"]: s for s in json.load(f)["steps"]}
        self.assertEqual(steps["relocate"]["status"], "pass", steps["relocate"])
        made = [(x["path"], x["target"]) for x in steps["relocate"]["links"]]
        self.assertEqual(made, [(self.old, ROOT), (made_at, build)])
        self.assertIn(steps["gpu-info"]["status"], ("pass", "skip", "fail"))


@unittest.skipUnless(shutil.which("cc") and shutil.which("ldd"), "needs cc and ldd")
class RelocateLibrariesTest(unittest.TestCase):
    """A carried binary whose library is not on the loader's path here: relocate finds it in one
    of library_dirs() (the toolkit's, the pip packages') and puts that on LD_LIBRARY_PATH."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gpu-check-test-")
        t = self.tmp.name
        self.libdir, self.build = os.path.join(t, "pip", "nvidia", "fake", "lib"), os.path.join(
            t, "repo", "build")
        os.makedirs(self.libdir)
        os.makedirs(os.path.join(self.build, "app"))
        fake_tree(self.build, os.path.join(t, "repo"), self.build)
        lib_c, main_c = os.path.join(t, "lib.c"), os.path.join(t, "main.c")
        with open(lib_c, "w", encoding="utf-8") as f:
            f.write("int fake(void) { return 0; }\n")
        with open(main_c, "w", encoding="utf-8") as f:
            f.write("int fake(void);\nint main(void) { return fake(); }\n")
        lib = os.path.join(self.libdir, "libccscopefake.so.1")
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libccscopefake.so.1", "-o", lib,
                        lib_c], check=True)
        os.symlink(lib, os.path.join(t, "libccscopefake.so"))
        subprocess.run(["cc", "-o", os.path.join(self.build, "app", "ccscope"), main_c, "-L", t,
                        "-lccscopefake"], check=True)
        self.saved = (reloc.library_dirs, os.environ.get("LD_LIBRARY_PATH"))

    def tearDown(self):
        reloc.library_dirs = self.saved[0]
        os.environ.pop("LD_LIBRARY_PATH", None)
        if self.saved[1] is not None:
            os.environ["LD_LIBRARY_PATH"] = self.saved[1]
        self.tmp.cleanup()

    def relocate(self):
        a = gpu_check.parse_args(["--no-build", "--build-dir", self.build])
        r = lib.Runner(os.path.join(self.tmp.name, "out"), 60)
        with contextlib.redirect_stdout(io.StringIO()):
            ok = reloc.step_relocate(r, a, os.path.join(self.tmp.name, "repo"))
        return ok, r.summary["steps"][-1]

    def test_a_library_found_in_a_package_goes_on_the_library_path(self):
        reloc.library_dirs = lambda: ["/nonexistent", self.libdir]
        ok, step = self.relocate()
        self.assertTrue(ok, step)
        self.assertEqual(os.environ["LD_LIBRARY_PATH"].split(os.pathsep)[0], self.libdir)
        self.assertIn(f"LD_LIBRARY_PATH gets {self.libdir} (libccscopefake.so.1)", step["detail"])

    def test_a_library_found_nowhere_fails_the_step_in_one_line(self):
        reloc.library_dirs = lambda: []
        ok, step = self.relocate()
        self.assertFalse(ok)
        self.assertEqual(step["status"], "fail")
        self.assertIn("not found here: libccscopefake.so.1 (ccscope)", step["detail"])
        self.assertNotIn("\n", step["detail"])


class ConcurrencyTest(unittest.TestCase):
    def test_eight_jobs_cover_every_collective_in_each_batch(self):
        for k in range(3):
            jobs = bench.batch_jobs(8, k)
            self.assertEqual({c for c, _ in jobs}, set(bench.COLLECTIVES))
            twice = [c for c, d in jobs if d == "int32"]
            self.assertEqual(len(twice), 1, "the one collective run twice gets another dtype")

    def test_four_jobs_cover_every_collective_over_the_runs(self):
        seen = {c for k in range(3) for c, _ in bench.batch_jobs(4, k)}
        self.assertEqual(seen, set(bench.COLLECTIVES))

    def test_run_many_shares_one_timeout_and_unsets_the_job_token(self):
        os.environ["CCSCOPE_JOB_TOKEN"] = "shared"
        try:
            with tempfile.TemporaryDirectory() as d:
                log = os.path.join(d, "log")
                res = lib.run_many([["sh", "-c", 'test -z "${CCSCOPE_JOB_TOKEN+x}"'],
                                    ["sh", "-c", "exit 4"], ["sleep", "30"]], 1.0, log,
                                   unset=("CCSCOPE_JOB_TOKEN",))
                with open(log, encoding="utf-8") as f:
                    text = f.read()
        finally:
            del os.environ["CCSCOPE_JOB_TOKEN"]
        self.assertEqual([(x.rc, x.timed_out) for x in res][:2], [(0, False), (4, False)])
        self.assertTrue(res[2].timed_out)
        self.assertLess(res[2].seconds, 10)
        self.assertIn("$ env -u CCSCOPE_JOB_TOKEN sh -c", text)


FAKE_CTEST = """#!/bin/sh
# ctest as the ctest step calls it: the second run has a failing test.
n=$(cat count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > count
while [ $# -gt 0 ]; do [ "$1" = --output-junit ] && junit=$2; shift; done
fail=""; [ $n -eq 2 ] && fail="<failure message='wrong bytes'/>"
printf '<testsuite><testcase name="gpu.A" status="run"/>' > "$junit"
printf '<testcase name="gpu.B" status="run">%s</testcase></testsuite>\\n' "$fail" >> "$junit"
[ -z "$fail" ]
"""


class CtestRunsTest(unittest.TestCase):
    def test_a_failure_in_any_run_fails_the_step_and_its_junit_is_kept(self):
        with tempfile.TemporaryDirectory() as t:
            bindir, build = os.path.join(t, "bin"), os.path.join(t, "build")
            os.makedirs(bindir)
            os.makedirs(build)
            with open(os.path.join(bindir, "ctest"), "w", encoding="utf-8") as f:
                f.write(FAKE_CTEST)
            os.chmod(os.path.join(bindir, "ctest"), 0o755)
            a = gpu_check.parse_args(["--no-build", "--build-dir", build, "--ctest-runs", "3"])
            r = lib.Runner(os.path.join(t, "out"), 600)
            old_path = os.environ["PATH"]
            os.environ["PATH"] = bindir + os.pathsep + old_path
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    gpu_check.step_ctest(r, a)
            finally:
                os.environ["PATH"] = old_path
            step = r.summary["steps"][-1]
            with open(r.path("ctest-gpu.xml"), encoding="utf-8") as f:
                kept = f.read()
        self.assertEqual(step["status"], "fail")
        self.assertEqual([x["status"] for x in step["runs"]], ["pass", "fail", "pass"])
        self.assertEqual(step["runs"][1]["failures"], ["gpu.B"])
        self.assertIn("run 2: fail (1 failed (gpu.B), 1 passed, 0 skipped)", step["detail"])
        self.assertIn("wrong bytes", kept, "the failing run's JUnit, not the last one's")


class JudgedTest(unittest.TestCase):
    def test_a_row_with_wrong_elements_fails_an_exit_0_run(self):
        with tempfile.TemporaryDirectory() as t:
            js = os.path.join(t, "job.jsonl")
            with open(js, "w", encoding="utf-8") as f:
                f.write('{"type": "result", "wrong": 0}\n{"type": "result", "wrong": 3}\n'
                        '{"type": "res')  # a partial last line is left out
            entry, _ = bench.judged(lib.Result(0, 1.0, "", "", False), js, job=7)
            self.assertEqual((entry["job"], entry["rows"], entry["wrong"], entry["status"]),
                             (7, 2, 1, "fail"))
            self.assertEqual(entry["reason"], "1 rows with wrong elements")
            entry, _ = bench.judged(lib.Result(3, 20.0, "", "rank 1: hang", False), js)
            self.assertEqual((entry["status"], entry["reason"]),
                             ("fail", "exit 3 (hang or timeout): rank 1: hang"))


class FaultTimesTest(unittest.TestCase):
    def test_survivor_times_are_read_from_the_log_line(self):
        line = ("survivor exit times (s after the signal): {0: 0.12, 1: 14.1, 3: 0.13}; "
                "launcher exited 3 after 14.3 s")
        self.assertEqual(bench.survivor_times("x\n" + line + "\n"),
                         ({"0": 0.12, "1": 14.1, "3": 0.13}, 14.3))
        self.assertEqual(bench.survivor_times("FAIL before the kill"), ({}, None))


class OptionsTest(unittest.TestCase):
    def test_defaults_and_lists(self):
        a = gpu_check.parse_args([])
        self.assertEqual((a.ctest_runs, a.concurrency, a.concurrency_runs), (1, [4, 8], 3))
        self.assertIn("concurrency", a.steps)
        a = gpu_check.parse_args(["--concurrency", "8", "--ctest-runs", "3", "--no-build"])
        self.assertEqual((a.concurrency, a.ctest_runs), ([8], 3))
        self.assertNotIn("build", a.steps)

    def test_bad_counts_are_usage_errors(self):
        for args in (["--ctest-runs", "0"], ["--concurrency", "4,x"], ["--concurrency-runs", "-1"]):
            with self.assertRaises(SystemExit, msg=args), open(os.devnull, "w") as null:
                old, sys.stderr = sys.stderr, null
                try:
                    gpu_check.parse_args(args)
                finally:
                    sys.stderr = old


def row(size, busbw, algorithm="ring", **extra):
    return {"type": "result", "bytes": size, "busbw_gbps": busbw, "algorithm": algorithm,
            "lat_us": {"p50": extra.pop("p50", 0.0)}, **extra}


class PerfGoalsTest(unittest.TestCase):
    """The perf step's goals from rows as bench writes them: bounds from the copy figure."""
    MIB = 1 << 20

    def test_sendrecv_against_a_quarter_of_the_copy(self):
        small = {"rows": [row(8, 0.0, p50=14.5)]}
        large = {"rows": [row(64 * self.MIB, 500.0), row(512 * self.MIB, 900.0)]}
        goals = {g["goal"].split(" (")[0]: g for g in perf.sendrecv_goals(small, large, 4000.0)}
        self.assertTrue(goals["sendrecv np 2 p50 at 8 B"]["met"])
        self.assertTrue(goals["sendrecv np 2 busbw at 64 MiB"]["met"], "printed, not a goal")
        self.assertAlmostEqual(goals["sendrecv np 2 busbw at 512 MiB"]["value"][1], 0.9)
        self.assertTrue(goals["sendrecv np 2 busbw at 512 MiB"]["met"])
        slow = {"rows": [row(512 * self.MIB, 659.0)]}
        g = perf.sendrecv_goals({"rows": [row(8, 0.0, p50=302.7)]}, slow, 4069.0)
        self.assertEqual([x["met"] for x in g], [False, False])

    def test_allreduce_ring_bound_and_auto_against_the_best(self):
        size = 256 * self.MIB
        every = {"rows": [row(size, 460.0), row(size, 470.0, "rabenseifner"),
                          row(size, 15.0, "tree")]}
        auto = {"rows": [row(size, 420.0, "ring", requested_algorithm="auto", note="ring")]}
        goals = perf.allreduce_goals(2, every, auto, 4069.0)
        ring = next(g for g in goals if g["goal"].startswith("allreduce ring np 2 at 256 MiB"))
        self.assertTrue(ring["met"])
        self.assertAlmostEqual(ring["value"][1], 460.0 / (2 * 4069.0 / 14))
        picked = next(g for g in goals if g["goal"].startswith("allreduce auto"))
        self.assertIn("rabenseifner", picked["goal"])
        self.assertAlmostEqual(picked["value"][1], 420.0 / 470.0)
        self.assertFalse(picked["met"], "auto at 0.89 of the best misses the 0.9 goal")
        np4 = perf.allreduce_goals(4, {"rows": [row(1024 * self.MIB, 0.7 * 2 * 4000 / 28 + 1)]},
                                   {"rows": []}, 4000.0)
        self.assertTrue(np4[0]["met"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
