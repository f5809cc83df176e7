#!/usr/bin/env python3
"""scripts/rdma_check.py: its parsers on perftest-shaped and ccscope-shaped text (constructed, see
tests/data/rdma-check/README.md), its ratios and verdict, the command lines it would run, and the
real script on this host: without an RDMA device it exits 5 with one line and measures nothing;
bad arguments exit 2 with one line. Usage: rdma_check_test.py (ctest perf.rdma_check)."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import rdma_check as rc  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "rdma-check")
SYSFS = os.path.join(ROOT, "tests", "data", "sysfs")
SCRIPT = os.path.join(ROOT, "scripts", "rdma-check.sh")


def text(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read()


def scaled(rows, factor, field, sizes=None):
    out = copy.deepcopy(rows)
    for b, row in out.items():
        if sizes is None or b in sizes:
            row[field] *= factor
    return out


class PerftestParseTest(unittest.TestCase):
    def test_gbits_table_is_converted_to_gigabytes(self):
        t = rc.parse_perftest(text("ib_write_bw.report_gbits.txt"))
        self.assertEqual((t["kind"], t["unit"]), ("bw", "Gb"))
        self.assertEqual(sorted(t["rows"]), [1 << i for i in range(1, 24)])  # -a: 2 B..8 MiB
        # "65536  5000  393.90  392.33  0.748315": Gb = 10^9 bits, so 392.33 / 8 GB/s.
        row = t["rows"][65536]
        self.assertAlmostEqual(row["bw_avg_gbs"], 49.04125, places=9)
        self.assertAlmostEqual(row["bw_peak_gbs"], 393.90 / 8, places=9)
        self.assertAlmostEqual(row["msg_rate_mpps"], 0.748315)
        self.assertEqual(row["iters"], 5000)
        # Below 0.1 Gb/s perftest prints six decimals (REPORT_FMT_EXT).
        self.assertAlmostEqual(t["rows"][2]["bw_avg_gbs"], 0.073920 / 8, places=12)

    def test_mebibytes_are_two_to_the_twenty(self):
        new = text("ib_write_bw.mib.txt")
        for variant in (new, new.replace("MiB/sec", "MB/sec")):  # the header before 24.07
            t = rc.parse_perftest(variant)
            self.assertEqual(list(t["rows"]), [1048576])
            # 46777.73 MiB/s = 46777.73 * 2^20 B/s = 49.050005 GB/s (not 46.78, nor 45.68).
            self.assertAlmostEqual(t["rows"][1048576]["bw_avg_gbs"], 49.050005, places=6)

    def test_latency_columns(self):
        t = rc.parse_perftest(text("ib_send_lat.txt"))
        self.assertEqual(t["kind"], "lat")
        self.assertEqual(len(t["rows"]), 23)
        self.assertEqual(t["rows"][2], {"iters": 1000, "t_min": 0.98, "t_max": 3.43,
                                        "t_typical": 1.01, "t_avg": 1.03, "t_stdev": 0.0,
                                        "p99": 1.10, "p99_9": 2.63})
        big = t["rows"][8388608]
        self.assertLess(big["t_typical"], big["p99"])
        self.assertLess(big["p99"], big["p99_9"])

    def test_what_it_cannot_read_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "no perftest result table"):
            rc.parse_perftest("Couldn't connect to hostb:18515\n")
        unknown = text("ib_write_bw.mib.txt").replace("MiB/sec", "KB/sec")
        with self.assertRaisesRegex(ValueError, "not understood"):
            rc.parse_perftest(unknown)
        cut = text("ib_send_lat.txt").replace(" 2       1000          0.98", " 2       1000")
        with self.assertRaisesRegex(ValueError, "too short"):
            rc.parse_perftest(cut.split("\n 4 ")[0])


class CcscopeParseTest(unittest.TestCase):
    def test_out_of_place_rows(self):
        src = text("ccscope_sendrecv_verbs.jsonl")
        last = json.loads(src.splitlines()[-1])
        in_place = dict(last, in_place=True, busbw_gbps=1.0)
        rows = rc.parse_ccscope(src + json.dumps(in_place) + "\n\n")
        self.assertEqual(sorted(rows), [1 << i for i in range(3, 24)])
        self.assertAlmostEqual(rows[8388608]["busbw_gbps"], last["busbw_gbps"])
        self.assertAlmostEqual(rows[65536]["busbw_gbps"], 46.41377663, places=6)
        self.assertEqual(rows[65536]["p50_us"], 3.3)


class VerdictTest(unittest.TestCase):
    def setUp(self):
        self.ours = rc.parse_ccscope(text("ccscope_sendrecv_verbs.jsonl"))
        self.theirs = rc.parse_perftest(text("ib_write_bw.report_gbits.txt"))["rows"]

    def test_median_and_spread_of_per_run_ratios(self):
        ours = [scaled(self.ours, f, "busbw_gbps") for f in (1.0, 0.98, 1.03)]
        rows = rc.compare(ours, "busbw_gbps", [self.theirs] * 3, "bw_avg_gbs")
        self.assertEqual([r["bytes"] for r in rows], [1 << i for i in range(3, 24)])
        r = next(r for r in rows if r["bytes"] == 65536)
        base = 46.41377663 / 49.04125
        self.assertAlmostEqual(r["ratio"], base, places=6)
        self.assertAlmostEqual(r["ratio_min"], base * 0.98, places=6)
        self.assertAlmostEqual(r["ratio_max"], base * 1.03, places=6)
        self.assertEqual(r["runs"], 3)
        v = rc.judge(rows)
        self.assertEqual(v["verdict"], "pass")
        self.assertEqual(v["sizes"], [1 << i for i in range(16, 24)])  # 64 KiB..8 MiB
        self.assertIn("lowest 0.946x at 64K", v["line"])

    def test_a_size_below_the_goal_fails_it(self):
        slow = scaled(self.ours, 0.85, "busbw_gbps", {1 << 20})
        v = rc.judge(rc.compare([slow], "busbw_gbps", [self.theirs], "bw_avg_gbs"))
        self.assertEqual((v["verdict"], v["missed"]), ("fail", [1 << 20]))
        self.assertIn("goal missed", v["line"])
        self.assertIn("at 1M", v["line"])

    def test_small_sizes_do_not_count(self):
        small = scaled(self.ours, 0.1, "busbw_gbps", {b for b in self.ours if b < 65536})
        v = rc.judge(rc.compare([small], "busbw_gbps", [self.theirs], "bw_avg_gbs"))
        self.assertEqual(v["verdict"], "pass")

    def test_without_theirs_ours_is_kept_and_nothing_judged(self):
        rows = rc.compare([self.ours, None], "busbw_gbps", [], "bw_avg_gbs")
        self.assertEqual(len(rows), 21)
        self.assertTrue(all(r["theirs"] is None and r["ratio"] is None for r in rows))
        self.assertEqual(rc.judge(rows)["verdict"], "not judged")
        self.assertIn("  64K ", rc.table(rows, "a", "x", "b", "y", "GB/s"))

    def test_a_failed_run_is_left_out(self):
        ours = [self.ours, None, scaled(self.ours, 0.5, "busbw_gbps")]
        rows = rc.compare(ours, "busbw_gbps", [self.theirs, self.theirs, None], "bw_avg_gbs")
        r = next(r for r in rows if r["bytes"] == 65536)
        self.assertEqual(r["runs"], 1)
        self.assertAlmostEqual(r["ratio"], 46.41377663 / 49.04125, places=6)


class CommandsTest(unittest.TestCase):
    def setUp(self):
        self.a = rc.parse_args(["hosta", "hostb", "--dev", "mlx5_2:1", "--gid-index", "3",
                                "--np-per-host", "4", "--out", "/tmp/x"])
        self.plan = rc.plan(self.a, 2)

    def test_ccscope_runs(self):
        kind, cmd, path = self.plan["sendrecv-verbs"]
        self.assertEqual(path, "/tmp/x/sendrecv-verbs.run2.jsonl")
        line = " ".join(cmd)
        self.assertIn("-H hosta:1,hostb:1 -np 2 --map-by slot", line)
        self.assertIn("bench sendrecv -b 8 -e 8M", line)
        self.assertIn("--transport verbs --json /tmp/x/sendrecv-verbs.run2.jsonl --rdma-dev "
                      "mlx5_2:1 --gid-index 3", line)
        ucx = " ".join(self.plan["allreduce-ucx"][1])
        self.assertIn("-H hosta:4,hostb:4 -np 8", ucx)
        self.assertIn("-x UCX_NET_DEVICES=mlx5_2:1 -x UCX_IB_GID_INDEX=3", ucx)
        self.assertIn("--transport ucx", ucx)
        ompi = " ".join(self.plan["allreduce-ompi-ucx"][1])
        self.assertIn("--mca pml ucx", ompi)
        self.assertTrue(ompi.endswith("--transport mpi --json "
                                      "/tmp/x/allreduce-ompi-ucx.run2.jsonl --algo native"))

    def test_perftest_pair(self):
        kind, server, client = self.plan["ib_write_bw"]
        self.assertEqual(server[server.index("-H") + 1], "hostb")
        self.assertEqual(client[client.index("-H") + 1], "hosta")
        tail = ["ib_write_bw", "-d", "mlx5_2", "-i", "1", "-a", "-F", "-x", "3", "--report_gbits"]
        self.assertEqual(server[-len(tail):], tail)
        self.assertEqual(client[-len(tail) - 1:], tail + ["hostb"])
        self.assertNotIn("--report_gbits", self.plan["ib_send_lat"][1])

    def test_first_active_port(self):
        healthy = os.path.join(SYSFS, "healthy", "class", "infiniband")
        self.assertEqual(rc.first_active_port(healthy), "mlx5_0:1")
        degraded = os.path.join(SYSFS, "degraded", "class", "infiniband")
        self.assertEqual(rc.first_active_port(degraded), "mlx5_0:1")


def run_script(*args):
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=60)


class ScriptTest(unittest.TestCase):
    def test_no_device_exits_5_with_one_line(self):
        if os.path.isdir(rc.IB_CLASS) and os.listdir(rc.IB_CLASS):
            self.skipTest("this host has an RDMA device: run scripts/rdma-check.sh by hand")
        with tempfile.TemporaryDirectory() as out:
            p = run_script("hosta", "hostb", "--out", out)
            self.assertEqual(p.returncode, 5, p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertEqual(p.stderr, "rdma-check: no RDMA device on this host "
                             "(/sys/class/infiniband is absent or empty): nothing to measure\n")
            with open(os.path.join(out, "rdma-check.json"), encoding="utf-8") as f:
                summary = json.load(f)
            self.assertEqual(summary["verdict"], "not measured")
            self.assertNotIn("raw", summary)
            self.assertEqual(sorted(os.listdir(out)), ["rdma-check.json"])

    def test_bad_arguments_exit_2_with_one_line(self):
        for args in ((), ("hosta",), ("a", "b", "--runs", "0"), ("a", "b", "--dev", "mlx5_0"),
                     ("a", "a"), ("a", "b", "--ucx-errors", "some"), ("a", "b", "--bogus")):
            p = run_script(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            self.assertEqual(p.stdout, "", args)
            self.assertEqual(len(p.stderr.splitlines()), 1, f"{args}: {p.stderr}")
            self.assertTrue(p.stderr.startswith("rdma-check: "), p.stderr)
            self.assertIn("(usage: scripts/rdma-check.sh HOST_A HOST_B", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
