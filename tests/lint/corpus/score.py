#!/usr/bin/env python3
"""Score nosync-lint against the annotated corpus: precision and recall per rule.

usage:
  score.py [options] [FILE.cpp ...] --lint PATH/nosync-lint [--lint-arg=ARG ...] [-- <compile args>]
  score.py [options] [FILE.cpp ...] --findings F.json [--findings G.json ...]

Without FILE arguments every *.cpp beside this script is scored. The annotation
grammar and the scoring rules are in README.md beside this script. Exit codes:
0 scored (and thresholds met), 1 a --min-precision/--min-recall threshold not
met, 2 usage error, bad annotation, bad JSON, or the linter failed on a file.
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RULES_DEF = os.path.join(HERE, "..", "..", "..", "rules", "include", "nosync", "rules.def")

# Static rules, used when rules.def cannot be read (the scorer copied elsewhere).
FALLBACK_STATIC_RULES = {
    "nosync-item", "nosync-bool-condition", "nosync-device-to-host", "nosync-pageable-h2d",
    "nosync-launch-loop", "nosync-hidden-sync", "nosync-explicit-sync",
}

KINDS = ("expect", "expect-note", "expect-none", "expect-maybe")
WARNING_LEVEL = ("warning", "error")
SEVERITIES = ("warning", "note", "error")

# `expect: ...`, `expect-note: ...`, `expect-none: ...`, `expect-maybe: ...` inside a // comment; the
# clause ends at ';', at the next clause or at the end of the line.
CLAUSE_RE = re.compile(
    r"\b(expect-note|expect-none|expect-maybe|expect)\s*:\s*([^;]*?)(?=;|\bexpect(?:-note|-none|-maybe)?\s*:|$)")
ITEM_RE = re.compile(r"^(nosync-[a-z0-9-]+)(?:@([+-]\d+)(?:\.\.([+-]?\d+))?)?$")


class ScoreError(Exception):
    pass


def static_rules():
    try:
        with open(RULES_DEF, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return set(FALLBACK_STATIC_RULES)
    rules = set()
    for m in re.finditer(r'^NOSYNC_RULE\(\s*\w+\s*,\s*"([^"]+)"\s*,\s*\w+\s*,\s*(\w+)', text, re.M):
        if m.group(2) != "Runtime":
            rules.add(m.group(1))
    return rules or set(FALLBACK_STATIC_RULES)


class Annotation:
    def __init__(self, path, line, kind, rule, lo, hi):
        self.path, self.line, self.kind, self.rule, self.lo, self.hi = path, line, kind, rule, lo, hi
        self.hits = []      # warning-level findings matched to it
        self.note_hits = []  # note-level findings matched to it

    def covers(self, line):
        return self.lo <= line <= self.hi


def comment_part(line):
    """The text of the // comment on a line, ignoring // inside string literals."""
    in_str = None
    i = 0
    while i < len(line):
        c = line[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == in_str:
                in_str = None
        elif c in "\"'":
            in_str = c
        elif line.startswith("//", i):
            return line[i + 2:]
        i += 1
    return None


def parse_annotations(path, known_rules):
    """Returns (annotations, source lines). Raises ScoreError on a malformed annotation."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    anns = []
    for idx, text in enumerate(lines):
        lineno = idx + 1
        comment = comment_part(text)
        if comment is None:
            continue
        for m in CLAUSE_RE.finditer(comment):
            kind, body = m.group(1), m.group(2).strip()
            items = [t for t in re.split(r"[,\s]+", body) if t]
            if not items:
                raise ScoreError(f"{path}:{lineno}: '{kind}:' names no rule")
            for item in items:
                im = ITEM_RE.match(item)
                if not im:
                    raise ScoreError(f"{path}:{lineno}: malformed annotation item '{item}'")
                rule = im.group(1)
                if rule not in known_rules:
                    raise ScoreError(f"{path}:{lineno}: unknown or runtime-only rule '{rule}'")
                lo = hi = lineno
                if im.group(2) is not None:
                    a = int(im.group(2))
                    b = int(im.group(3)) if im.group(3) is not None else 0
                    lo, hi = lineno + min(a, b), lineno + max(a, b)
                if any(x.rule == rule and x.line == lineno for x in anns):
                    raise ScoreError(f"{path}:{lineno}: rule '{rule}' annotated twice on one line")
                anns.append(Annotation(path, lineno, kind, rule, lo, hi))
    return anns, lines


def load_findings(text, origin):
    try:
        data = json.loads(text) if text.strip() else []
    except json.JSONDecodeError as e:
        raise ScoreError(f"{origin}: not valid JSON: {e}")
    if isinstance(data, dict) and isinstance(data.get("findings"), list):
        data = data["findings"]
    if not isinstance(data, list):
        raise ScoreError(f"{origin}: expected a JSON array of findings")
    out = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise ScoreError(f"{origin}: finding {i} is not an object")
        for key in ("file", "line", "rule", "severity"):
            if key not in obj:
                raise ScoreError(f"{origin}: finding {i} has no '{key}'")
        if obj["severity"] not in SEVERITIES:
            raise ScoreError(f"{origin}: finding {i} has severity '{obj['severity']}'")
        try:
            line = int(obj["line"])
        except (TypeError, ValueError):
            raise ScoreError(f"{origin}: finding {i} has a non-integer line")
        out.append({"file": str(obj["file"]), "line": line, "column": obj.get("column"),
                    "rule": str(obj["rule"]), "severity": obj["severity"],
                    "message": str(obj.get("message", ""))})
    return out


def run_linter(lint, path, compile_args, lint_args=()):
    cmd = [lint, "--format=json"] + list(lint_args) + [path, "--"] + compile_args
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise ScoreError(f"cannot run {lint}: {e}")
    if p.returncode not in (0, 1):
        tail = "\n".join(p.stderr.strip().splitlines()[-15:])
        raise ScoreError(f"{lint} exited {p.returncode} on {path}:\n{tail}")
    return load_findings(p.stdout, f"{lint} output for {path}")


def resolve(finding_file, corpus):
    """Maps a finding's file to a corpus path (by real path, then by unique basename)."""
    real = os.path.realpath(finding_file)
    if real in corpus:
        return real
    base = os.path.basename(finding_file)
    cands = [p for p in corpus if os.path.basename(p) == base]
    return cands[0] if len(cands) == 1 else None


def ratio(num, den):
    return None if den == 0 else num / den


def score(files, findings, known_rules):
    """The whole computation, independent of how the findings were obtained."""
    corpus = {}
    for f in files:
        anns, lines = parse_annotations(f, known_rules)
        corpus[os.path.realpath(f)] = (anns, lines)

    fps = {}       # (file, line, rule) -> record, warning-level findings that match no expect
    outside = []   # findings in files outside the corpus (any severity)
    notes_ignored = 0
    for fd in findings:
        path = resolve(fd["file"], corpus)
        if path is None:
            outside.append(fd)
            if fd["severity"] in WARNING_LEVEL:
                key = (fd["file"], fd["line"], fd["rule"])
                fps.setdefault(key, {"file": fd["file"], "line": fd["line"], "rule": fd["rule"],
                                     "kind": "outside", "why": "finding outside the corpus files",
                                     "source": "", "message": fd["message"]})
            continue
        anns, lines = corpus[path]
        cands = [a for a in anns if a.rule == fd["rule"] and a.covers(fd["line"])]
        # The annotation on the finding's own line wins, then the nearest one.
        cands.sort(key=lambda a: (abs(a.line - fd["line"]), a.line))
        ann = cands[0] if cands else None
        if ann is not None and ann.kind == "expect-maybe":
            (ann.hits if fd["severity"] in WARNING_LEVEL else ann.note_hits).append(fd)
            continue
        if fd["severity"] not in WARNING_LEVEL:
            if ann is not None:
                ann.note_hits.append(fd)
            else:
                notes_ignored += 1
            continue
        if ann is not None:
            ann.hits.append(fd)
        if ann is None or ann.kind != "expect":
            kind, why = {None: ("unannotated", "no annotation"),
                         "expect-note": ("too-severe", "annotated expect-note, reported as " + fd["severity"]),
                         "expect-none": ("look-alike", "annotated expect-none (a deliberate look-alike)")}[
                             None if ann is None else ann.kind]
            key = (path, fd["line"], fd["rule"])
            src = lines[fd["line"] - 1].strip() if 0 < fd["line"] <= len(lines) else ""
            fps.setdefault(key, {"file": path, "line": fd["line"], "rule": fd["rule"], "kind": kind,
                                 "why": why, "source": src, "message": fd["message"]})

    rules = {}

    def bucket(rule):
        return rules.setdefault(rule, {"tp": 0, "fp": 0, "fn": 0, "expected": 0,
                                       "expect_note": 0, "expect_note_reported": 0,
                                       "expect_none": 0, "expect_maybe": 0, "expect_maybe_reported": 0})

    fns, tps, maybes = [], [], []
    for path, (anns, lines) in sorted(corpus.items()):
        for a in anns:
            b = bucket(a.rule)
            if a.kind == "expect":
                b["expected"] += 1
                rec = {"file": path, "line": a.line, "rule": a.rule, "source": lines[a.line - 1].strip()}
                if a.hits:
                    b["tp"] += 1
                    tps.append(rec)
                else:
                    b["fn"] += 1
                    rec["why"] = "reported only as a note" if a.note_hits else "not reported"
                    fns.append(rec)
            elif a.kind == "expect-note":
                b["expect_note"] += 1
                if a.note_hits:
                    b["expect_note_reported"] += 1
            elif a.kind == "expect-maybe":
                b["expect_maybe"] += 1
                reported = "warning" if a.hits else "note" if a.note_hits else "no"
                b["expect_maybe_reported"] += reported != "no"
                maybes.append({"file": path, "line": a.line, "rule": a.rule, "reported": reported,
                               "source": lines[a.line - 1].strip()})
            else:
                b["expect_none"] += 1
    for rec in fps.values():
        bucket(rec["rule"])["fp"] += 1

    for b in rules.values():
        b["precision"] = ratio(b["tp"], b["tp"] + b["fp"])
        b["recall"] = ratio(b["tp"], b["tp"] + b["fn"])
    tot = {k: sum(b[k] for b in rules.values())
           for k in ("tp", "fp", "fn", "expected", "expect_note", "expect_note_reported", "expect_none",
                     "expect_maybe", "expect_maybe_reported")}
    tot["fp_by_kind"] = {k: sum(1 for r in fps.values() if r["kind"] == k)
                         for k in ("unannotated", "too-severe", "look-alike", "outside")}
    tot["precision"] = ratio(tot["tp"], tot["tp"] + tot["fp"])
    tot["recall"] = ratio(tot["tp"], tot["tp"] + tot["fn"])
    key = lambda r: (r["file"], r["line"], r["rule"])
    return {
        "files": sorted(corpus),
        "overall": tot,
        "rules": dict(sorted(rules.items())),
        "false_positives": sorted(fps.values(), key=key),
        "false_negatives": sorted(fns, key=key),
        "true_positives": sorted(tps, key=key),
        "expect_maybe": sorted(maybes, key=key),
        "notes_on_unannotated_lines": notes_ignored,
        "findings_outside_corpus": len(outside),
        "findings_total": len(findings),
    }


def fmt(x):
    return "  n/a" if x is None else f"{x:5.3f}"


def rel(path):
    try:
        r = os.path.relpath(path)
    except ValueError:
        return path
    return path if r.startswith("../..") else r


def report(res, out):
    w = out.write
    w(f"{'rule':<24} {'TP':>4} {'FP':>4} {'FN':>4}  {'precision':>9} {'recall':>7}  "
      f"{'exp-note (as note)':>18} {'exp-none':>8} {'exp-maybe (reported)':>20}\n")
    t = res["overall"]
    for rule, b in list(res["rules"].items()) + [("overall", t)]:
        w(f"{rule:<24} {b['tp']:>4} {b['fp']:>4} {b['fn']:>4}  {fmt(b['precision']):>9} {fmt(b['recall']):>7}  "
          f"{b['expect_note']:>8} ({b['expect_note_reported']:>3})      {b['expect_none']:>8} "
          f"{b['expect_maybe']:>10} ({b['expect_maybe_reported']:>3})\n")
    w(f"\n{res['findings_total']} findings read, {res['notes_on_unannotated_lines']} notes on un-annotated "
      f"lines (not scored), {res['findings_outside_corpus']} outside the corpus files\n")
    k = t["fp_by_kind"]
    w(f"\nfalse positives ({len(res['false_positives'])}: {k['unannotated']} on un-annotated lines, "
      f"{k['too-severe']} too severe on expect-note lines, {k['look-alike']} on expect-none lines, "
      f"{k['outside']} outside the corpus):\n")
    for r in res["false_positives"]:
        w(f"  {rel(r['file'])}:{r['line']}: {r['rule']} ({r['why']})\n      {r['source']}\n")
    w(f"\nfalse negatives ({len(res['false_negatives'])}):\n")
    for r in res["false_negatives"]:
        w(f"  {rel(r['file'])}:{r['line']}: {r['rule']} ({r['why']})\n      {r['source']}\n")
    w(f"\nexpect-maybe lines, not scored ({len(res['expect_maybe'])}):\n")
    for r in res["expect_maybe"]:
        w(f"  {rel(r['file'])}:{r['line']}: {r['rule']} (reported: {r['reported']})\n      {r['source']}\n")


def md_escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def load_reasons(path):
    """'FILE:LINE:RULE<TAB>reason' lines (FILE by base name; '#' starts a comment) -> dict."""
    reasons = {}
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            text = text.rstrip("\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            key, sep, why = text.partition("\t")
            if not sep or key.count(":") != 2:
                raise ScoreError(f"{path}:{n}: expected FILE:LINE:RULE<TAB>reason")
            reasons[key.strip()] = why.strip()
    return reasons


def markdown(res, out, header_lines=(), reasons=None):
    """The scores as Markdown: header lines, the per-rule table, every FP and FN."""
    reasons = reasons or {}
    why = lambda r: md_escape(reasons.get(f"{os.path.basename(r['file'])}:{r['line']}:{r['rule']}", ""))
    w = out.write
    w("# nosync-lint on the realistic corpus (tests/lint/corpus)\n\n")
    for h in header_lines:
        w(f"- {h}\n")
    w("\nWarning-level scoring (README.md of the corpus): TP = an `expect:` line reported as a warning; "
      "FP = a warning on any other line; FN = an `expect:` line not reported as a warning.\n\n")
    w("| rule | TP | FP | FN | precision | recall | expect-note lines (reported as note) | expect-none lines "
      "| expect-maybe lines (reported) |\n")
    w("|---|---|---|---|---|---|---|---|---|\n")
    rows = list(res["rules"].items()) + [("**overall**", res["overall"])]
    for rule, b in rows:
        w(f"| {rule} | {b['tp']} | {b['fp']} | {b['fn']} | {fmt(b['precision']).strip()} | "
          f"{fmt(b['recall']).strip()} | {b['expect_note']} ({b['expect_note_reported']}) | {b['expect_none']} "
          f"| {b['expect_maybe']} ({b['expect_maybe_reported']}) |\n")
    k = res["overall"]["fp_by_kind"]
    w(f"\n{res['findings_total']} findings read; {res['notes_on_unannotated_lines']} notes on un-annotated "
      f"lines (not scored). False positives by kind: {k['unannotated']} on un-annotated lines, "
      f"{k['too-severe']} too severe on expect-note lines, {k['look-alike']} on expect-none look-alikes, "
      f"{k['outside']} outside the corpus.\n")
    w(f"\n## False positives ({len(res['false_positives'])})\n\n"
      "| where | rule | kind | source line | linter's message (start) | reason |\n|---|---|---|---|---|---|\n")
    for r in res["false_positives"]:
        w(f"| {rel(r['file'])}:{r['line']} | {r['rule']} | {r['kind']} | `{md_escape(r['source'])}` | "
          f"{md_escape(r['message'][:70])} | {why(r)} |\n")
    w(f"\n## False negatives ({len(res['false_negatives'])})\n\n| where | rule | why | source line | reason |\n"
      "|---|---|---|---|---|\n")
    for r in res["false_negatives"]:
        w(f"| {rel(r['file'])}:{r['line']} | {r['rule']} | {r['why']} | `{md_escape(r['source'])}` | {why(r)} |\n")
    w(f"\n## expect-maybe lines, not scored ({len(res['expect_maybe'])})\n\n"
      "| where | rule | reported | source line |\n|---|---|---|---|\n")
    for r in res["expect_maybe"]:
        w(f"| {rel(r['file'])}:{r['line']} | {r['rule']} | {r['reported']} | `{md_escape(r['source'])}` |\n")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    compile_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, compile_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(prog="score.py", description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="annotated corpus files (default: every *.cpp beside score.py)")
    ap.add_argument("--lint", help="nosync-lint binary to run on each file (--format=json FILE -- ARGS)")
    ap.add_argument("--lint-arg", action="append", default=[], metavar="ARG",
                    help="extra option for the linter, e.g. --lint-arg=--min-severity=note (repeatable)")
    ap.add_argument("--findings", action="append", default=[], help="JSON findings file (repeatable)")
    ap.add_argument("--min-precision", type=float, help="exit 1 when overall precision is below this")
    ap.add_argument("--min-recall", type=float, help="exit 1 when overall recall is below this")
    ap.add_argument("--json-out", help="write the scores as JSON here")
    ap.add_argument("--markdown-out", help="write the scores, FPs and FNs as Markdown here")
    ap.add_argument("--reasons", help="FILE:LINE:RULE<TAB>reason lines for the Markdown's reason column")
    ap.add_argument("--header", action="append", default=[], help="extra header line for the Markdown")
    ap.add_argument("--dump-findings", help="write every finding read, as one JSON array, here")
    args = ap.parse_args(argv)

    if bool(args.lint) == bool(args.findings):
        print("score.py: error: give exactly one of --lint or --findings", file=sys.stderr)
        return 2
    files = args.files or sorted(os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".cpp"))
    if not files:
        print("score.py: error: no corpus files", file=sys.stderr)
        return 2
    try:
        for f in files:
            if not os.path.isfile(f):
                raise ScoreError(f"no such file: {f}")
        findings = []
        if args.lint:
            for f in files:
                findings += run_linter(args.lint, f, compile_args, args.lint_arg)
        for j in args.findings:
            try:
                with open(j, encoding="utf-8") as fh:
                    findings += load_findings(fh.read(), j)
            except OSError as e:
                raise ScoreError(f"cannot read {j}: {e}")
        res = score(files, findings, static_rules())
        reasons = load_reasons(args.reasons) if args.reasons else {}
    except ScoreError as e:
        print(f"score.py: error: {e}", file=sys.stderr)
        return 2

    if args.dump_findings:
        with open(args.dump_findings, "w", encoding="utf-8") as fh:
            json.dump(findings, fh, indent=1)
    report(res, sys.stdout)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1)
    if args.markdown_out:
        with open(args.markdown_out, "w", encoding="utf-8") as fh:
            markdown(res, fh, args.header + [f"corpus: {len(res['files'])} files"], reasons)

    rc = 0
    t = res["overall"]
    for name, want, got in (("precision", args.min_precision, t["precision"]),
                            ("recall", args.min_recall, t["recall"])):
        if want is None:
            continue
        if got is None or got < want:
            print(f"score.py: overall {name} {fmt(got).strip()} is below --min-{name} {want}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into head
        sys.exit(0)
