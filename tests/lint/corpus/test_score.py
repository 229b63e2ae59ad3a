#!/usr/bin/env python3
"""Unit test of score.py on synthetic findings: no linter needed.

Each case states the scores a correct scorer must compute, so a scorer that
miscounts (or always reports 100 %) fails here.
"""

import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402

SAMPLE = textwrap.dedent("""\
    #include <torch/torch.h>
    void train(torch::Tensor loss, torch::Tensor x, torch::Device dev) {
      for (int step = 0; step < 10; ++step) {           // line 3
        float l = loss.item<float>();                   // expect: nosync-item
        auto y = x.to(dev);                             // expect: nosync-pageable-h2d
        if (step % 100 == 0) std::cout << loss.item<float>();  // expect-note: nosync-item
        auto z = x.to(torch::kFloat);                   // expect-none: nosync-device-to-host
        auto s = x.sum()
                     .item<float>();                    // expect: nosync-item@-1
        for (auto& t : std::vector<torch::Tensor>{x}) { // expect: nosync-launch-loop@+0..+2
          t.mul_(2);
        }
        auto c = x.cpu();                               // expect: nosync-device-to-host; expect-note: nosync-item
        std::string s2 = "// expect: nosync-item";      // a string, not an annotation
        auto m = torch::multinomial(x, 1);              // expect-maybe: nosync-hidden-sync
      }
    }
    """)


def finding(line, rule, severity="warning", file="sample.cpp", column=5):
    return {"file": file, "line": line, "column": column, "rule": rule, "severity": severity,
            "message": "m", "fixes": [], "notes": []}


class ScorerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.src = os.path.join(self.dir, "sample.cpp")
        with open(self.src, "w") as f:
            f.write(SAMPLE)
        self.rules = score.static_rules()

    def tearDown(self):
        self.tmp.cleanup()

    def write_json(self, findings, name="f.json"):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            json.dump(findings, f)
        return p

    def run_main(self, argv):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = score.main(argv)
        return rc, out.getvalue(), err.getvalue()

    def fix(self, findings):
        for fd in findings:
            fd["file"] = self.src if fd["file"] == "sample.cpp" else fd["file"]
        return findings

    # ------------------------------------------------------------- annotations
    def test_parse_annotations(self):
        anns, _ = score.parse_annotations(self.src, self.rules)
        got = sorted((a.line, a.kind, a.rule, a.lo, a.hi) for a in anns)
        self.assertEqual(got, [
            (4, "expect", "nosync-item", 4, 4),
            (5, "expect", "nosync-pageable-h2d", 5, 5),
            (6, "expect-note", "nosync-item", 6, 6),
            (7, "expect-none", "nosync-device-to-host", 7, 7),
            (9, "expect", "nosync-item", 8, 9),
            (10, "expect", "nosync-launch-loop", 10, 12),
            (13, "expect", "nosync-device-to-host", 13, 13),
            (13, "expect-note", "nosync-item", 13, 13),
            (15, "expect-maybe", "nosync-hidden-sync", 15, 15),
        ])

    def test_unknown_rule_is_an_error(self):
        bad = os.path.join(self.dir, "bad.cpp")
        with open(bad, "w") as f:
            f.write("int x = 0;  // expect: nosync-itme\n")
        with self.assertRaises(score.ScoreError):
            score.parse_annotations(bad, self.rules)
        with open(bad, "w") as f:
            f.write("int x = 0;  // expect: nosync-allocator-sync\n")  # runtime-only
        with self.assertRaises(score.ScoreError):
            score.parse_annotations(bad, self.rules)

    # ------------------------------------------------------------- scoring
    def test_perfect(self):
        fds = self.fix([finding(4, "nosync-item"), finding(5, "nosync-pageable-h2d"),
                        finding(6, "nosync-item", "note"), finding(8, "nosync-item"),
                        finding(10, "nosync-launch-loop"), finding(13, "nosync-device-to-host")])
        res = score.score([self.src], fds, self.rules)
        t = res["overall"]
        self.assertEqual((t["tp"], t["fp"], t["fn"]), (5, 0, 0))
        self.assertEqual((t["precision"], t["recall"]), (1.0, 1.0))
        self.assertEqual(t["expect_note_reported"], 1)
        self.assertEqual(res["expect_maybe"][0]["reported"], "no")
        self.assertEqual(res["false_positives"], [])
        self.assertEqual(res["false_negatives"], [])

    def test_mixed(self):
        fds = self.fix([
            finding(4, "nosync-item"),                     # TP
            finding(4, "nosync-item", column=20),          # same (line, rule): still one TP
            finding(5, "nosync-pageable-h2d", "note"),     # downgraded: FN
            finding(6, "nosync-item"),                     # expect-note as warning: FP
            finding(7, "nosync-device-to-host"),           # expect-none: FP
            finding(11, "nosync-launch-loop"),             # inside the @+0..+2 range: TP
            finding(13, "nosync-item", "note"),            # expect-note, as note: fine
            finding(3, "nosync-item", "note"),             # note on an un-annotated line: ignored
            finding(14, "nosync-item"),                    # string look-alike line: FP
            finding(4, "nosync-hidden-sync", "error"),     # error counts at warning level: FP
            finding(15, "nosync-hidden-sync"),             # expect-maybe: not scored, counted as reported
            finding(20, "nosync-item", file="/usr/include/foo.h"),  # outside the corpus: FP
        ])
        res = score.score([self.src], fds, self.rules)
        t = res["overall"]
        # TP: 4 item, 11 launch-loop. FN: 5 h2d (note only), 9 item (split chain), 13 d2h.
        self.assertEqual((t["tp"], t["fp"], t["fn"]), (2, 5, 3))
        self.assertAlmostEqual(t["precision"], 2 / 7)
        self.assertAlmostEqual(t["recall"], 2 / 5)
        fp = [(os.path.basename(r["file"]), r["line"], r["rule"]) for r in res["false_positives"]]
        self.assertEqual(sorted(fp), sorted([
            ("foo.h", 20, "nosync-item"), ("sample.cpp", 4, "nosync-hidden-sync"),
            ("sample.cpp", 6, "nosync-item"), ("sample.cpp", 7, "nosync-device-to-host"),
            ("sample.cpp", 14, "nosync-item")]))
        fn = [(r["line"], r["rule"], r["why"]) for r in res["false_negatives"]]
        self.assertEqual(fn, [(5, "nosync-pageable-h2d", "reported only as a note"),
                              (9, "nosync-item", "not reported"),
                              (13, "nosync-device-to-host", "not reported")])
        item = res["rules"]["nosync-item"]
        self.assertEqual((item["tp"], item["fp"], item["fn"]), (1, 3, 1))
        self.assertAlmostEqual(item["precision"], 0.25)
        self.assertAlmostEqual(item["recall"], 0.5)
        self.assertEqual(res["rules"]["nosync-hidden-sync"]["recall"], None)  # nothing expected
        self.assertEqual(res["notes_on_unannotated_lines"], 1)
        self.assertEqual((t["expect_maybe"], t["expect_maybe_reported"]), (1, 1))
        self.assertEqual([(r["line"], r["reported"]) for r in res["expect_maybe"]], [(15, "warning")])
        self.assertEqual(res["findings_outside_corpus"], 1)
        self.assertEqual(t["fp_by_kind"], {"unannotated": 2, "too-severe": 1, "look-alike": 1, "outside": 1})
        # The FP on line 6 names the source line for the report.
        fp6 = [r for r in res["false_positives"] if r["line"] == 6][0]
        self.assertIn("step % 100", fp6["source"])
        self.assertIn("expect-note", fp6["why"])

    def test_wrong_rule_on_right_line(self):
        fds = self.fix([finding(4, "nosync-bool-condition")])
        res = score.score([self.src], fds, self.rules)
        t = res["overall"]
        self.assertEqual((t["tp"], t["fp"], t["fn"]), (0, 1, 5))
        self.assertEqual(t["precision"], 0.0)
        self.assertEqual(t["recall"], 0.0)

    def test_range_is_bounded(self):
        # Line 8 is the split chain's first line (covered by @-1); line 12 is the
        # last line of the launch-loop range; line 7 and 13 are outside them.
        fds = self.fix([finding(8, "nosync-item"), finding(12, "nosync-launch-loop"),
                        finding(13, "nosync-launch-loop")])
        res = score.score([self.src], fds, self.rules)
        self.assertEqual([(r["line"], r["rule"]) for r in res["true_positives"]],
                         [(9, "nosync-item"), (10, "nosync-launch-loop")])  # annotation lines
        self.assertEqual([(r["line"], r["rule"]) for r in res["false_positives"]],
                         [(13, "nosync-launch-loop")])

    def test_no_findings(self):
        res = score.score([self.src], [], self.rules)
        t = res["overall"]
        self.assertEqual((t["tp"], t["fp"], t["fn"], t["expected"]), (0, 0, 5, 5))
        self.assertIsNone(t["precision"])
        self.assertEqual(t["recall"], 0.0)

    # ------------------------------------------------------------- command line
    def test_cli_thresholds_and_json_out(self):
        fds = self.fix([finding(4, "nosync-item"), finding(5, "nosync-pageable-h2d"),
                        finding(6, "nosync-item")])
        j = self.write_json(fds)
        out_json = os.path.join(self.dir, "scores.json")
        rc, out, _ = self.run_main([self.src, "--findings", j, "--json-out", out_json])
        self.assertEqual(rc, 0)
        self.assertIn("false positives (1: 0 on un-annotated lines, 1 too severe", out)
        self.assertIn("sample.cpp:6: nosync-item", out)
        self.assertIn("false negatives (3)", out)
        with open(out_json) as f:
            res = json.load(f)
        self.assertAlmostEqual(res["overall"]["precision"], 2 / 3)
        self.assertAlmostEqual(res["overall"]["recall"], 2 / 5)
        md = os.path.join(self.dir, "scores.md")
        reasons = os.path.join(self.dir, "reasons.tsv")
        with open(reasons, "w") as f:
            f.write("# comment\nsample.cpp:6:nosync-item\tthrottle not recognised\n")
        rc, _, _ = self.run_main([self.src, "--findings", j, "--markdown-out", md, "--reasons", reasons,
                                  "--header", "commit: abc"])
        self.assertEqual(rc, 0)
        with open(md) as f:
            text = f.read()
        self.assertIn("| **overall** | 2 | 1 | 3 | 0.667 | 0.400 |", text)
        self.assertIn("## False positives (1)", text)
        self.assertIn("sample.cpp:6 | nosync-item | too-severe |", text)
        self.assertIn("| throttle not recognised |", text)
        self.assertIn("- commit: abc", text)
        self.assertIn("## False negatives (3)", text)
        rc, _, err = self.run_main([self.src, "--findings", j, "--min-precision", "0.6", "--min-recall", "0.4"])
        self.assertEqual(rc, 0)
        rc, _, err = self.run_main([self.src, "--findings", j, "--min-precision", "0.7"])
        self.assertEqual(rc, 1)
        self.assertIn("precision", err)
        rc, _, err = self.run_main([self.src, "--findings", j, "--min-recall", "0.5"])
        self.assertEqual(rc, 1)
        # No findings: precision undefined, so a precision threshold fails.
        rc, _, _ = self.run_main([self.src, "--findings", self.write_json([], "e.json"), "--min-precision", "0.1"])
        self.assertEqual(rc, 1)

    def test_cli_bad_input(self):
        bad = self.write_json({"not": "an array"}, "bad.json")
        self.assertEqual(self.run_main([self.src, "--findings", bad])[0], 2)
        bad2 = os.path.join(self.dir, "bad2.json")
        with open(bad2, "w") as f:
            f.write("[{\"file\": \"x\"")
        self.assertEqual(self.run_main([self.src, "--findings", bad2])[0], 2)
        nosev = self.write_json([{"file": self.src, "line": 4, "rule": "nosync-item"}], "nosev.json")
        self.assertEqual(self.run_main([self.src, "--findings", nosev])[0], 2)
        self.assertEqual(self.run_main([self.src])[0], 2)  # neither --lint nor --findings
        self.assertEqual(self.run_main([os.path.join(self.dir, "missing.cpp"), "--findings", bad])[0], 2)

    def test_cli_runs_the_linter(self):
        # A stand-in linter: checks its command line, prints findings, exits 1 like nosync-lint.
        fake = os.path.join(self.dir, "fake-lint")
        log = os.path.join(self.dir, "argv.json")
        with open(fake, "w") as f:
            f.write(textwrap.dedent(f"""\
                #!{sys.executable}
                import json, sys
                json.dump(sys.argv[1:], open({log!r}, "w"))
                if sys.argv[1] != "--format=json" or sys.argv[4] != "--":
                    sys.exit(2)
                print(json.dumps([{{"file": sys.argv[3], "line": 4, "column": 19, "rule": "nosync-item",
                                   "severity": "warning", "message": "m", "fixes": [], "notes": []}}]))
                sys.exit(1)
                """))
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        rc, out, err = self.run_main([self.src, "--lint", fake, "--lint-arg=--min-severity=note",
                                      "--", "-std=c++17", "-isystem", "/x"])
        self.assertEqual(rc, 0, err)
        with open(log) as f:
            self.assertEqual(json.load(f), ["--format=json", "--min-severity=note", self.src, "--",
                                            "-std=c++17", "-isystem", "/x"])
        self.assertRegex(out, r"overall\s+1\s+0\s+4\s")
        # A linter that fails to parse (exit 3) makes the scorer fail, not score 0 silently.
        failing = os.path.join(self.dir, "failing-lint")
        with open(failing, "w") as f:
            f.write(f"#!{sys.executable}\nimport sys\nprint('[]')\nsys.stderr.write('parse error')\nsys.exit(3)\n")
        os.chmod(failing, os.stat(failing).st_mode | stat.S_IEXEC)
        rc, _, err = self.run_main([self.src, "--lint", failing, "--"])
        self.assertEqual(rc, 2)
        self.assertIn("exited 3", err)

    def test_script_entry_point(self):
        j = self.write_json(self.fix([finding(4, "nosync-item")]))
        p = subprocess.run([sys.executable, os.path.join(os.path.dirname(score.__file__), "score.py"),
                            self.src, "--findings", j, "--min-recall", "0.5"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # recall 1/5
        self.assertIn("below --min-recall", p.stderr)


if __name__ == "__main__":
    unittest.main()
