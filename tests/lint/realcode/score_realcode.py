#!/usr/bin/env python3
"""Score nosync-lint on the hand-labelled corpus of real public LibTorch code.

The corpus is projects.json (which public repositories, at which commit, which
files, which include directories, which split) plus labels/<owner>__<repo>.tsv
(one row per labelled line: path, line, label, rule, reason, anchor). No public
code is stored here: each project is exported from a local git mirror at its
commit, the anchors are checked against the exported lines, the linter runs
once per labelled file, and its JSON findings are matched against the labels.

Usage (see README.md):

  python3 tests/lint/realcode/score_realcode.py \\
      --mirrors /work/.mirror --lint build/cpu/bin/nosync-lint \\
      --torch-include .venv/lib/python3.11/site-packages/torch/include \\
      --split tuning --markdown-out tuning.md --json-out tuning.json

  # labels against the mirrors only (no linter needed)
  python3 tests/lint/realcode/score_realcode.py --mirrors /work/.mirror --check-anchors

  # score findings saved by an earlier run (no linter needed)
  python3 tests/lint/realcode/score_realcode.py --mirrors /work/.mirror \\
      --findings-dir saved/ --split tuning

Exit status: 0 scored, 2 bad labels / anchor mismatch / missing mirror or
linter / bad arguments. Python 3 standard library only.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = (
    "nosync-item",
    "nosync-bool-condition",
    "nosync-device-to-host",
    "nosync-pageable-h2d",
    "nosync-launch-loop",
    "nosync-hidden-sync",
    "nosync-explicit-sync",
)
LABELS = ("flag", "noflag", "borderline")
WARNING_LEVEL = ("warning", "error")
SEVERITIES = ("note", "warning", "error")
MAX_ANCHOR = 40
LINE_RE = re.compile(r"^(\d+)(?:@([+-]\d+)(?:\.\.([+-]\d+))?)?$")


class ScoreError(Exception):
    """A problem with the corpus, the mirrors or the arguments (exit 2)."""


# --------------------------------------------------------------------------- corpus

class Label:
    __slots__ = ("project", "path", "line", "lo", "hi", "label", "rule", "reason",
                 "anchor", "where")

    def __init__(self, project, path, line, lo, hi, label, rule, reason, anchor, where):
        self.project, self.path, self.line = project, path, line
        self.lo, self.hi = lo, hi
        self.label, self.rule, self.reason, self.anchor = label, rule, reason, anchor
        self.where = where

    def covers(self, line):
        return self.lo <= line <= self.hi

    def key(self):
        return "%s:%s:%d" % (self.project, self.path, self.line)


def parse_line_spec(spec, where):
    """'98' -> (98, 98, 98); '98@-2' -> (98, 96, 98); '98@-1..+1' -> (98, 97, 99)."""
    m = LINE_RE.match(spec)
    if not m:
        raise ScoreError("%s: bad line '%s' (N, N@-K, N@+K or N@-A..+B)" % (where, spec))
    line = int(m.group(1))
    if line < 1:
        raise ScoreError("%s: line must be >= 1" % where)
    lo = hi = line
    if m.group(2):
        a = int(m.group(2))
        if m.group(3):
            b = int(m.group(3))
            lo, hi = line + min(a, b), line + max(a, b)
        elif a < 0:
            lo = line + a
        else:
            hi = line + a
    return line, max(lo, 1), hi


def label_file_name(repo):
    owner, name = repo.split("/", 1)
    return "%s__%s.tsv" % (owner, name)


def load_projects(path):
    try:
        with open(path, encoding="utf-8") as fh:
            projects = json.load(fh)
    except (OSError, ValueError) as e:
        raise ScoreError("cannot read %s: %s" % (path, e))
    if not isinstance(projects, list) or not projects:
        raise ScoreError("%s: expected a non-empty list of projects" % path)
    seen = set()
    for i, p in enumerate(projects):
        where = "%s: project %d" % (path, i)
        for key in ("repo", "commit", "split", "files", "include_dirs"):
            if key not in p:
                raise ScoreError("%s has no '%s'" % (where, key))
        if p["repo"] in seen:
            raise ScoreError("%s: %s listed twice" % (where, p["repo"]))
        seen.add(p["repo"])
        if not re.match(r"^[0-9a-f]{40}$", p["commit"]):
            raise ScoreError("%s: commit must be 40 hex digits" % where)
        if p["split"] not in ("tuning", "heldback"):
            raise ScoreError("%s: split must be tuning or heldback" % where)
        if "/" not in p["repo"]:
            raise ScoreError("%s: repo must be owner/name" % where)
    return projects


def load_labels(labels_dir, project):
    path = os.path.join(labels_dir, label_file_name(project["repo"]))
    if not os.path.exists(path):
        raise ScoreError("no label file %s for %s" % (path, project["repo"]))
    files = set(project["files"])
    out, seen = [], set()
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            raw = raw.rstrip("\n")
            if not raw.strip() or raw.startswith("#"):
                continue
            where = "%s:%d" % (os.path.relpath(path), n)
            cols = raw.split("\t")
            if len(cols) != 6:
                raise ScoreError("%s: expected 6 tab-separated columns, got %d" % (where, len(cols)))
            fpath, spec, label, rule, reason, anchor = cols
            if label not in LABELS:
                raise ScoreError("%s: label '%s' is not one of %s" % (where, label, ", ".join(LABELS)))
            if rule not in RULES:
                raise ScoreError("%s: unknown rule '%s'" % (where, rule))
            if not anchor or len(anchor) > MAX_ANCHOR:
                raise ScoreError("%s: anchor must be 1..%d characters" % (where, MAX_ANCHOR))
            if fpath not in files:
                raise ScoreError("%s: %s is not in the project's files list" % (where, fpath))
            line, lo, hi = parse_line_spec(spec, where)
            if (fpath, line, rule) in seen:
                raise ScoreError("%s: %s:%d %s labelled twice" % (where, fpath, line, rule))
            seen.add((fpath, line, rule))
            out.append(Label(project["repo"], fpath, line, lo, hi, label, rule, reason, anchor, where))
    return out


# --------------------------------------------------------------------------- mirrors

def is_git_dir(path):
    return (os.path.isfile(os.path.join(path, "HEAD"))
            and os.path.isdir(os.path.join(path, "objects")))


def find_git_dir(mirrors, repo):
    """<mirrors>/<owner>+<name>/... : the first bare git directory under it."""
    root = os.path.join(mirrors, repo.replace("/", "+", 1))
    if not os.path.isdir(root):
        raise ScoreError("no mirror for %s under %s (fetch github:%s first)" % (repo, mirrors, repo))
    if is_git_dir(root):
        return root
    for dirpath, dirnames, _ in os.walk(root):
        if is_git_dir(dirpath):
            return dirpath
        if os.path.isdir(os.path.join(dirpath, ".git")) and is_git_dir(os.path.join(dirpath, ".git")):
            return os.path.join(dirpath, ".git")
        dirnames.sort()
        if dirpath.count(os.sep) - root.count(os.sep) >= 3:
            dirnames[:] = []
    raise ScoreError("no git directory under %s" % root)


def export_tree(git_dir, commit, dest):
    """git archive <commit> | tar -x; if some blobs are absent from the mirror
    (large files are not stored), write every blob that is there instead."""
    os.makedirs(dest, exist_ok=True)
    arch = subprocess.Popen(["git", "--git-dir=" + git_dir, "archive", commit],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tar = subprocess.Popen(["tar", "-x", "-C", dest], stdin=arch.stdout,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    arch.stdout.close()
    _, tar_err = tar.communicate()
    arch_err = arch.stderr.read()
    arch.wait()
    if arch.returncode == 0 and tar.returncode == 0:
        return {"method": "archive", "missing": 0}
    # Fallback: blob by blob through one cat-file --batch process.
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest, exist_ok=True)
    ls = subprocess.run(["git", "--git-dir=" + git_dir, "ls-tree", "-r", "-z", commit],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if ls.returncode != 0:
        raise ScoreError("git archive and ls-tree of %s in %s failed: %s %s" % (
            commit, git_dir, arch_err.decode(errors="replace").strip(),
            ls.stderr.decode(errors="replace").strip()))
    entries = []
    for rec in ls.stdout.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000" and mode != b"160000":
            entries.append((sha.decode(), path.decode(errors="surrogateescape")))
    cat = subprocess.Popen(["git", "--git-dir=" + git_dir, "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    missing = 0
    for sha, path in entries:
        cat.stdin.write((sha + "\n").encode())
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if len(header) < 2 or header[1] == b"missing":
            missing += 1
            continue
        size = int(header[2])
        data = cat.stdout.read(size)
        cat.stdout.read(1)  # trailing newline
        out = os.path.join(dest, path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as fh:
            fh.write(data)
    cat.stdin.close()
    cat.wait()
    return {"method": "cat-file", "missing": missing}


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().split("\n")


def check_anchors(root, labels):
    """Every label's anchor must be on its line of the exported file."""
    bad, cache = [], {}
    for lab in labels:
        full = os.path.join(root, lab.path)
        if lab.path not in cache:
            if not os.path.isfile(full):
                bad.append("%s: %s is not in the exported tree" % (lab.where, lab.path))
                cache[lab.path] = None
                continue
            cache[lab.path] = read_lines(full)
        lines = cache[lab.path]
        if lines is None:
            continue
        if lab.line > len(lines) or lab.anchor not in lines[lab.line - 1]:
            got = lines[lab.line - 1].strip()[:80] if lab.line <= len(lines) else "<past end of file>"
            bad.append("%s: anchor %r not on %s:%d (line reads %r)" % (
                lab.where, lab.anchor, lab.path, lab.line, got))
    return bad


# --------------------------------------------------------------------------- linter

def torch_flags(torch_includes):
    flags, seen = [], set()
    for d in torch_includes:
        for sub in (d, os.path.join(d, "torch", "csrc", "api", "include")):
            if sub in seen:
                continue
            if sub == d or os.path.isdir(sub):
                flags += ["-isystem", sub]
                seen.add(sub)
    return flags


def compile_args(project, root, path, torch_includes, extra_flags):
    per_file = project.get("per_file_include_dirs", {})
    dirs = per_file.get(path, project["include_dirs"])
    args = ["-std=" + project.get("std", "c++17")]
    for d in dirs:
        args.append("-I" + os.path.normpath(os.path.join(root, d)))
    for d in project.get("defines", []):
        args.append("-D" + d)
    args += torch_flags(torch_includes)
    args += extra_flags
    return args


def saved_name(project, path):
    return os.path.join(label_file_name(project["repo"])[:-4], path.replace("/", "__") + ".json")


def run_linter(lint, lint_args, file_path, cargs, timeout):
    """Lints one file, or a list of files in one run (--whole-project)."""
    files = file_path if isinstance(file_path, list) else [file_path]
    cmd = [lint, "--format=json", "--min-severity=note", "--no-cache"] + lint_args + files + ["--"] + cargs
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": "timeout", "stdout": "", "stderr": "timed out after %ss" % timeout, "cmd": cmd}
    except OSError as e:
        raise ScoreError("cannot run %s: %s" % (lint, e))
    return {"rc": proc.returncode, "stdout": proc.stdout.decode(errors="replace"),
            "stderr": proc.stderr.decode(errors="replace")[-4000:], "cmd": cmd}


def parse_findings(text):
    """The linter's JSON: an array of {file, line, column, rule, severity, message, ...}."""
    data = json.loads(text) if text.strip() else []
    if isinstance(data, dict) and "findings" in data:
        data = data["findings"]
    if not isinstance(data, list):
        raise ValueError("expected a JSON array of findings")
    out = []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise ValueError("finding %d is not an object" % i)
        for key in ("file", "line", "rule", "severity"):
            if key not in obj:
                raise ValueError("finding %d has no '%s'" % (i, key))
        if obj["severity"] not in SEVERITIES:
            raise ValueError("finding %d has severity %r" % (i, obj["severity"]))
        out.append({"file": str(obj["file"]), "line": int(obj["line"]),
                    "column": int(obj.get("column", 0) or 0), "rule": str(obj["rule"]),
                    "severity": obj["severity"], "message": str(obj.get("message", ""))})
    return out


def classify_rc(rc):
    if rc in (0, 1):
        return "ok"
    if rc == 3:
        return "parse"
    return "crash"


def file_statuses(run, root, paths):
    """Per file of a multi-file run: "parse" where nosync-lint said the file
    parsed with errors, "crash" for a crash of the whole run, else "ok"."""
    rc = run["rc"]
    if rc == "timeout" or classify_rc(rc) == "crash":
        return {p: ("crash", rc) for p in paths}
    out = {p: ("ok", rc if rc != 3 else 1) for p in paths}
    for line in run.get("stderr", "").splitlines():
        m = re.match(r"nosync-lint: error: (.*) parsed with \d+ errors?", line)
        if not m:
            continue
        for p in paths:
            if os.path.realpath(m.group(1)) == os.path.realpath(os.path.join(root, p)):
                out[p] = ("parse", 3)
    return out


def saved_or_new_run(args, saved, lint):
    """The linter run saved at `saved` (unless --rerun), else lint() run now
    and saved there; an error without --lint."""
    if saved and os.path.exists(saved) and not args.rerun:
        with open(saved, encoding="utf-8") as fh:
            return json.load(fh)
    if not args.lint:
        raise ScoreError("no saved findings %s and no --lint" % saved)
    run = lint()
    if saved:
        os.makedirs(os.path.dirname(saved), exist_ok=True)
        with open(saved, "w", encoding="utf-8") as fh:
            json.dump(run, fh, indent=1)
    return run


def lint_project_at_once(args, p, root, res):
    """--whole-project: one nosync-lint run per set of files sharing compile
    flags, so that the linter sees callers in the project's other files."""
    groups = collections.OrderedDict()
    for path in p["files"]:
        groups.setdefault(tuple(compile_args(p, root, path, args.torch_include, args.extra_flag)), []).append(path)
    for gi, (cargs, paths) in enumerate(groups.items()):
        saved = (os.path.join(args.findings_dir, label_file_name(p["repo"])[:-4], "whole-project-%d.json" % gi)
                 if args.findings_dir else None)
        run = saved_or_new_run(args, saved, lambda: dict(
            run_linter(args.lint, args.lint_arg, [os.path.join(root, x) for x in paths], list(cargs),
                       args.timeout * len(paths)), root=root, paths=paths))
        saved_root = run.get("root", root)
        for path, (status, rc) in file_statuses(run, saved_root, paths).items():
            res["files"].append({"path": path, "rc": rc, "status": status})
        try:
            fds = parse_findings(run.get("stdout", ""))
        except ValueError:
            fds = []
        add_findings(res, fds, saved_root)


def add_findings(res, fds, root):
    """Adds a run's findings to the project's, each with its repo-relative path
    (None outside the project)."""
    for f in fds:
        rel = repo_relative(f["file"], root, os.path.realpath(root))
        if rel is not None and rel.startswith(".."):
            rel = None
        f["relpath"] = rel
        res["findings"].append(f)


# --------------------------------------------------------------------------- scoring

def repo_relative(finding_file, root, real_root):
    f = finding_file
    for base in (root, real_root):
        if os.path.isabs(f) and (f == base or f.startswith(base + os.sep)):
            return os.path.relpath(f, base)
    if os.path.isabs(f):
        rf = os.path.realpath(f)
        if rf.startswith(real_root + os.sep):
            return os.path.relpath(rf, real_root)
        return None  # outside the project (LibTorch or system headers)
    return os.path.normpath(f)


def new_counts():
    return {"flag": 0, "found": 0, "found_note_only": 0, "noflag": 0,
            "noise_rule": 0, "noise_any": 0, "borderline": 0, "borderline_warned": 0}


def score_split(results):
    """results: list of per-project dicts with labels and findings."""
    per_rule = collections.OrderedDict((r, new_counts()) for r in RULES)
    overall = new_counts()
    fn, fp, unlabelled, border = [], [], [], []
    files = collections.Counter()
    crashes, parse_fail, outside = [], [], collections.Counter()
    for res in results:
        for fr in res["files"]:
            files[fr["status"]] += 1
            if fr["status"] == "crash":
                crashes.append("%s:%s rc=%s" % (res["repo"], fr["path"], fr["rc"]))
            elif fr["status"] == "parse":
                parse_fail.append("%s:%s" % (res["repo"], fr["path"]))
        # all findings of the project, de-duplicated, by repo-relative path
        by_path = collections.defaultdict(list)
        seen = set()
        for fd in res["findings"]:
            if fd["rule"].startswith("clang-diagnostic-"):
                # The compiler's errors (a missing include, an unknown type):
                # counted by the files' parse status, not as findings.
                outside["compiler-diagnostic"] += 1
                continue
            if fd["relpath"] is None:
                outside["outside-project" + ("-warning" if fd["severity"] in WARNING_LEVEL else "-note")] += 1
                continue
            k = (fd["relpath"], fd["line"], fd["rule"], fd["severity"])
            if k in seen:
                continue
            seen.add(k)
            by_path[fd["relpath"]].append(fd)
        labelled_files = set(res["label_files"])
        for path, fds in by_path.items():
            if path not in labelled_files:
                n = sum(1 for f in fds if f["severity"] in WARNING_LEVEL)
                outside["project-file-not-labelled-warning"] += n
        labels_by_path = collections.defaultdict(list)
        for lab in res["labels"]:
            labels_by_path[lab.path].append(lab)
        for lab in res["labels"]:
            fds = [f for f in by_path.get(lab.path, []) if lab.covers(f["line"])]
            warn_rule = [f for f in fds if f["rule"] == lab.rule and f["severity"] in WARNING_LEVEL]
            note_rule = [f for f in fds if f["rule"] == lab.rule and f["severity"] == "note"]
            warn_any = [f for f in fds if f["severity"] in WARNING_LEVEL]
            c = per_rule[lab.rule]
            if lab.label == "flag":
                for t in (c, overall):
                    t["flag"] += 1
                if warn_rule:
                    for t in (c, overall):
                        t["found"] += 1
                else:
                    if note_rule:
                        for t in (c, overall):
                            t["found_note_only"] += 1
                    seen_as = sorted({"%s %s" % (f["severity"], f["rule"]) for f in fds})
                    fn.append((lab, "reported only as a note" if note_rule else
                               ("other finding: " + ", ".join(seen_as) if seen_as else "no finding")))
            elif lab.label == "noflag":
                for t in (c, overall):
                    t["noflag"] += 1
                if warn_rule:
                    for t in (c, overall):
                        t["noise_rule"] += 1
                if warn_any:
                    for t in (c, overall):
                        t["noise_any"] += 1
                    fp.append((lab, ", ".join(sorted({"%s %s" % (f["severity"], f["rule"]) for f in warn_any}))))
            else:
                for t in (c, overall):
                    t["borderline"] += 1
                if warn_any:
                    for t in (c, overall):
                        t["borderline_warned"] += 1
                    border.append((lab, ", ".join(sorted({f["rule"] for f in warn_any}))))
        # warnings on lines no label covers, in labelled files
        for path in labelled_files:
            labs = labels_by_path.get(path, [])
            for f in by_path.get(path, []):
                if f["severity"] not in WARNING_LEVEL:
                    continue
                if any(l.covers(f["line"]) for l in labs):
                    continue
                unlabelled.append((res["repo"], path, f))
    return {"per_rule": per_rule, "overall": overall, "fn": fn, "fp": fp,
            "unlabelled": unlabelled, "borderline": border, "files": dict(files),
            "crashes": crashes, "parse_fail": parse_fail, "outside": dict(outside),
            "projects": len(results)}


def ratio(a, b):
    return None if b == 0 else a / b


def fmt_ratio(a, b):
    r = ratio(a, b)
    return "n/a" if r is None else "%d/%d = %.1f%%" % (a, b, 100.0 * r)


def numbers(sc):
    o = sc["overall"]
    return {
        "projects": sc["projects"],
        "recall": ratio(o["found"], o["flag"]),
        "flag_lines": o["flag"], "flag_found": o["found"],
        "flag_note_only": o["found_note_only"],
        "noise_rule": ratio(o["noise_rule"], o["noflag"]),
        "noise_any": ratio(o["noise_any"], o["noflag"]),
        "noflag_lines": o["noflag"], "noflag_warned_rule": o["noise_rule"],
        "noflag_warned_any": o["noise_any"],
        "borderline_lines": o["borderline"], "borderline_warned": o["borderline_warned"],
        "unlabelled_warnings": len(sc["unlabelled"]),
        "files": sc["files"], "crashes": len(sc["crashes"]),
        "did_not_parse": len(sc["parse_fail"]), "outside": sc["outside"],
        "per_rule": {r: {"flag": c["flag"], "found": c["found"], "note_only": c["found_note_only"],
                         "recall": ratio(c["found"], c["flag"]),
                         "noflag": c["noflag"], "noise_rule": c["noise_rule"],
                         "noise_any": c["noise_any"],
                         "noise_rule_rate": ratio(c["noise_rule"], c["noflag"]),
                         "noise_any_rate": ratio(c["noise_any"], c["noflag"])}
                     for r, c in sc["per_rule"].items()},
    }


def details(sc, source_lines):
    def src(lab):
        return source_lines.get((lab.project, lab.path, lab.line), "")
    return {
        "false_negatives": [{"repo": l.project, "file": l.path, "line": l.line, "rule": l.rule,
                             "why": why, "reason": l.reason, "source": src(l)} for l, why in sc["fn"]],
        "false_positives": [{"repo": l.project, "file": l.path, "line": l.line, "rule": l.rule,
                             "warned": w, "reason": l.reason, "source": src(l)} for l, w in sc["fp"]],
        "unlabelled_warnings": [{"repo": r, "file": p, "line": f["line"], "rule": f["rule"],
                                 "severity": f["severity"], "message": f["message"][:160]}
                                for r, p, f in sc["unlabelled"]],
        "borderline_warned": [{"repo": l.project, "file": l.path, "line": l.line, "rule": l.rule,
                               "warned": w} for l, w in sc["borderline"]],
        "crashes": sc["crashes"], "did_not_parse": sc["parse_fail"],
    }


def table_lines(sc, md):
    rows = []
    head = ("rule", "recall (flag lines warned)", "note only", "noise, same rule", "noise, any rule")
    if md:
        rows.append("| " + " | ".join(head) + " |")
        rows.append("|" + "---|" * len(head))
    else:
        rows.append("%-24s %-24s %-9s %-22s %-22s" % head)
    for r, c in list(sc["per_rule"].items()) + [("overall", sc["overall"])]:
        cells = (r, fmt_ratio(c["found"], c["flag"]), str(c["found_note_only"]),
                 fmt_ratio(c["noise_rule"], c["noflag"]), fmt_ratio(c["noise_any"], c["noflag"]))
        if md:
            rows.append("| " + " | ".join(cells) + " |")
        else:
            rows.append("%-24s %-24s %-9s %-22s %-22s" % cells)
    return rows


def render(split_scores, detail_splits, source_lines, md):
    out = []
    h = (lambda s: "## " + s) if md else (lambda s: "== " + s)
    for split, sc in split_scores.items():
        n = numbers(sc)
        out.append(h("%s split: %d projects" % (split, sc["projects"])))
        out.append("")
        out += table_lines(sc, md)
        out.append("")
        files = sc["files"]
        out.append("%sfiles: %d parsed, %d did not parse (exit 3), %d crashed; "
                   "warnings on unlabelled lines: %d; borderline lines warned: %d/%d; "
                   "flag lines reported only as notes: %d" % (
                       "- " if md else "", files.get("ok", 0), files.get("parse", 0),
                       files.get("crash", 0), n["unlabelled_warnings"], n["borderline_warned"],
                       n["borderline_lines"], n["flag_note_only"]))
        if sc["outside"]:
            out.append("%sfindings outside the labelled files: %s" % (
                "- " if md else "", ", ".join("%s %d" % kv for kv in sorted(sc["outside"].items()))))
        out.append("")
        if split not in detail_splits:
            out.append("(details of the %s split are not shown)" % split)
            out.append("")
            continue
        d = details(sc, source_lines)
        for title, key, fmt in (
                ("missed (flag lines without a warning of their rule)", "false_negatives",
                 lambda x: "%s:%s:%d [%s] %s -- %s | %s" % (x["repo"], x["file"], x["line"], x["rule"],
                                                          x["why"], x["reason"], x["source"].strip()[:100])),
                ("noise (noflag lines with a warning)", "false_positives",
                 lambda x: "%s:%s:%d [%s] warned: %s -- %s | %s" % (x["repo"], x["file"], x["line"], x["rule"],
                                                                  x["warned"], x["reason"], x["source"].strip()[:100])),
                ("warnings on unlabelled lines", "unlabelled_warnings",
                 lambda x: "%s:%s:%d %s %s: %s" % (x["repo"], x["file"], x["line"], x["severity"],
                                                   x["rule"], x["message"])),
                ("borderline lines with a warning (not scored)", "borderline_warned",
                 lambda x: "%s:%s:%d [%s] warned: %s" % (x["repo"], x["file"], x["line"], x["rule"], x["warned"])),
                ("crashes", "crashes", str),
                ("did not parse (exit 3)", "did_not_parse", str)):
            items = d[key]
            out.append((("### " if md else "-- ") + "%s: %d" % (title, len(items))))
            for x in items:
                out.append(("- `%s`" if md else "  %s") % fmt(x).replace("`", "'"))
            out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", default="/work/.mirror",
                    help="directory holding the git mirrors as <owner>+<name>/... (default /work/.mirror)")
    ap.add_argument("--whole-project", action="store_true",
                    help="lint each project's files in one nosync-lint run per set of compile flags (the "
                         "linter then sees callers across files), instead of one run per file")
    ap.add_argument("--as-checkout", action="store_true",
                    help="give each exported tree an empty .git directory, as a clone has: the linter then "
                         "takes the repository's top as the project root (project scan, text callers, "
                         "includers of headers) even where no build file sits there")
    ap.add_argument("--lint", help="the nosync-lint binary (not needed with --check-anchors or saved findings)")
    ap.add_argument("--torch-include", action="append", default=[],
                    help="LibTorch include directory, passed as -isystem (repeatable); its "
                         "torch/csrc/api/include is added too when present")
    ap.add_argument("--split", choices=("tuning", "heldback", "all"), default="tuning")
    ap.add_argument("--projects", default=os.path.join(HERE, "projects.json"))
    ap.add_argument("--labels-dir", default=os.path.join(HERE, "labels"))
    ap.add_argument("--findings-dir",
                    help="reuse the linter output saved here by an earlier run; files not found there "
                         "are linted (when --lint is given) and saved there")
    ap.add_argument("--rerun", action="store_true", help="with --findings-dir: lint again and overwrite")
    ap.add_argument("--lint-arg", action="append", default=[],
                    help="extra option for the linter before the file (repeatable)")
    ap.add_argument("--extra-flag", action="append", default=[],
                    help="extra compiler flag after '--' (repeatable), e.g. --extra-flag=-DNDEBUG")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per linter call (default 600)")
    ap.add_argument("--work-dir", help="export the projects here (kept); default: a temporary directory")
    ap.add_argument("--check-anchors", action="store_true",
                    help="only export the projects and check every anchor (no linter)")
    ap.add_argument("--show-details", choices=("tuning", "none"), default="tuning",
                    help="which split's FP/FN lines to print (held-back details are never printed)")
    ap.add_argument("--markdown-out")
    ap.add_argument("--json-out")
    args = ap.parse_args(argv)

    try:
        projects = load_projects(args.projects)
        if args.split != "all":
            projects = [p for p in projects if p["split"] == args.split]
        if not args.check_anchors and not args.lint and not args.findings_dir:
            raise ScoreError("give --lint (and --torch-include), --findings-dir, or --check-anchors")
        if args.lint and not (os.path.isfile(args.lint) and os.access(args.lint, os.X_OK)):
            if shutil.which(args.lint) is None:
                raise ScoreError("linter %s not found or not executable" % args.lint)
        work = args.work_dir or tempfile.mkdtemp(prefix="nosync-realcode-")
        os.makedirs(work, exist_ok=True)
        results, source_lines, anchor_errors = [], {}, []
        for p in projects:
            labels = load_labels(args.labels_dir, p)
            git_dir = find_git_dir(args.mirrors, p["repo"])
            root = os.path.join(work, label_file_name(p["repo"])[:-4])
            if os.path.isdir(root) and args.work_dir and os.path.exists(os.path.join(root, ".exported-" + p["commit"])):
                pass
            else:
                shutil.rmtree(root, ignore_errors=True)
                info = export_tree(git_dir, p["commit"], root)
                with open(os.path.join(root, ".exported-" + p["commit"]), "w") as fh:
                    json.dump(info, fh)
            if args.as_checkout:
                os.makedirs(os.path.join(root, ".git"), exist_ok=True)
            bad = check_anchors(root, labels)
            anchor_errors += bad
            for lab in labels:
                full = os.path.join(root, lab.path)
                if os.path.isfile(full):
                    lines = read_lines(full)
                    if lab.line <= len(lines):
                        source_lines[(lab.project, lab.path, lab.line)] = lines[lab.line - 1]
            results.append({"project": p, "repo": p["repo"], "root": root, "labels": labels})
        if anchor_errors:
            for e in anchor_errors:
                print("error: " + e, file=sys.stderr)
            raise ScoreError("%d anchor mismatch(es): a label's line moved or the mirror is at another commit"
                             % len(anchor_errors))
        if args.check_anchors:
            n = sum(len(r["labels"]) for r in results)
            print("anchors OK: %d labels in %d projects" % (n, len(results)))
            if not args.work_dir:
                shutil.rmtree(work, ignore_errors=True)
            return 0

        for res in results:
            p, root = res["project"], res["root"]
            real_root = os.path.realpath(root)
            res["files"], res["findings"] = [], []
            res["label_files"] = sorted({l.path for l in res["labels"]})
            if args.whole_project:
                lint_project_at_once(args, p, root, res)
                continue
            for path in p["files"]:
                saved = os.path.join(args.findings_dir, saved_name(p, path)) if args.findings_dir else None
                run = saved_or_new_run(args, saved, lambda: dict(
                    run_linter(args.lint, args.lint_arg, os.path.join(root, path),
                               compile_args(p, root, path, args.torch_include, args.extra_flag), args.timeout),
                    root=root))
                rc = run["rc"]
                status = "crash" if rc == "timeout" else classify_rc(rc)
                try:
                    fds = parse_findings(run.get("stdout", ""))
                except ValueError as e:
                    fds = []
                    if status != "crash":
                        status = "crash"
                        rc = "bad-json: %s" % e
                res["files"].append({"path": path, "rc": rc, "status": status})
                add_findings(res, fds, run.get("root", root))

        splits = ("tuning", "heldback") if args.split == "all" else (args.split,)
        split_scores = collections.OrderedDict()
        for s in splits:
            rs = [r for r in results if r["project"]["split"] == s]
            if rs:
                split_scores[s] = score_split(rs)
        detail_splits = {"tuning"} if args.show_details == "tuning" else set()
        text = render(split_scores, detail_splits, source_lines, md=False)
        if args.markdown_out:
            md = ["# nosync-lint on the real-code corpus", "",
                  "Labels: tests/lint/realcode (hand-labelled before any lint run). "
                  "recall = flag lines with a warning/error of the labelled rule / flag lines; "
                  "noise = noflag lines with a warning/error / noflag lines.", "",
                  render(split_scores, detail_splits, source_lines, md=True)]
            with open(args.markdown_out, "w", encoding="utf-8") as fh:
                fh.write("\n".join(md) + "\n")
        if args.json_out:
            out = {"lint": args.lint, "split": args.split, "scores": {}}
            for s, sc in split_scores.items():
                out["scores"][s] = numbers(sc)
                if s in detail_splits:
                    out["scores"][s]["details"] = details(sc, source_lines)
            with open(args.json_out, "w", encoding="utf-8") as fh:
                json.dump(out, fh, indent=1)
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
        try:
            print(text)
            sys.stdout.flush()
        except BrokenPipeError:
            pass
        return 0
    except ScoreError as e:
        print("score_realcode: error: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
