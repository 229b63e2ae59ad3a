#!/usr/bin/env python3
"""nosync-merge on synthetic per-rank reports: counts and stalls add up per
site, the slowest rank is named, and bad input fails with one clear line."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

MERGE = sys.argv.pop(1) if len(sys.argv) > 1 else "nosync-merge"


def finding(line, rule, count, total, worst, op="at::Tensor::item"):
    return {"file": "/src/train.cpp", "line": line, "column": 5, "rule": rule, "severity": "warning",
            "message": "m", "op": op, "count": count, "total_stall_us": total, "max_stall_us": worst}


def report(pid, findings):
    return {"tool": "nosync-sanitizer", "pid": pid, "mode": "report", "findings": findings}


class MergeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.prefix = os.path.join(self.dir.name, "run")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, content):
        with open(os.path.join(self.dir.name, name), "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))

    def run_merge(self, *args):
        return subprocess.run([MERGE, *args], capture_output=True, text=True)

    def test_sites_add_up_across_ranks_and_name_the_slowest(self):
        self.write("run.rank0.100", report(100, [finding(42, "nosync-item", 10, 100.0, 20.0)]))
        self.write("run.rank1.200", report(200, [finding(42, "nosync-item", 10, 900.0, 300.0),
                                                 finding(7, "nosync-explicit-sync", 1, 5.0, 5.0, "sync")]))
        self.write("run.rank1.201", report(201, [finding(42, "nosync-item", 2, 10.0, 9.0)]))  # forked child
        p = self.run_merge("--format", "json", self.prefix)
        self.assertEqual(p.returncode, 0, p.stderr)
        merged = json.loads(p.stdout)
        self.assertEqual(merged["ranks"], ["0", "1"])
        self.assertEqual(merged["reports"], 3)
        top = merged["findings"][0]
        self.assertEqual((top["line"], top["rule"]), (42, "nosync-item"))
        self.assertEqual(top["count"], 22)
        self.assertAlmostEqual(top["total_stall_us"], 1010.0)
        self.assertAlmostEqual(top["max_stall_us"], 300.0)
        self.assertEqual(top["slowest_rank"], "1")
        self.assertEqual(top["ranks"]["1"]["count"], 12)
        self.assertEqual(len(merged["findings"]), 2)

    def test_text_report_has_a_summary_line(self):
        self.write("run.rank0.1", report(1, [finding(3, "nosync-item", 4, 40.0, 10.0)]))
        self.write("run.rank1.2", report(2, [finding(3, "nosync-item", 6, 60.0, 12.0)]))
        p = self.run_merge(self.prefix)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("slowest rank 1", p.stdout)
        self.assertRegex(p.stdout.splitlines()[-1],
                         r"^SUMMARY: nosync-merge: 10 host syncs at 1 sites across 2 ranks, 100.0 us stalled$")

    def test_reports_without_rank_are_keyed_by_pid(self):
        self.write("run.300", report(300, [finding(3, "nosync-item", 1, 1.0, 1.0)]))
        merged = json.loads(self.run_merge("--format", "json", self.prefix).stdout)
        self.assertEqual(merged["ranks"], ["pid300"])

    def test_bad_input_is_one_clear_error(self):
        self.write("text.rank0.1", "==1==WARNING: nosync-sanitizer: ...\n")
        p = self.run_merge(os.path.join(self.dir.name, "text.rank0.1"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("is not a JSON report", p.stderr)
        p = self.run_merge(os.path.join(self.dir.name, "missing"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no such report or log_path prefix", p.stderr)
        self.write("other.json", {"tool": "something-else"})
        p = self.run_merge(os.path.join(self.dir.name, "other.json"))
        self.assertIn("is not a nosync sanitizer report", p.stderr)


if __name__ == "__main__":
    unittest.main()
