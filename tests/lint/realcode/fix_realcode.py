#!/usr/bin/env python3
"""Does `nosync-lint --fix` ever turn a file of the real-code corpus that
parsed into one that does not?

For each project of projects.json (both splits by default), exported from its
git mirror at the labelled commit, and each of its listed files, in order:
  1. nosync-lint --fix on the file (the project's include directories and
     standard, LibTorch headers, nosync's kernels header for the re-parse);
     its compile errors are those of the file before the fixes (exit 3: it
     parsed with errors, usually a third-party header that is not installed;
     nosync-lint goes on past those and still fixes what it read);
  2. when fixes were applied, the file is linted again: a compile error that
     was not there before (or exit 3 for a file that parsed cleanly) means
     --fix broke it.
Fixes land in the exported tree (a header fixed for one file is what the next
file of the project sees), as they would in a user's checkout.

Prints one line per file and a summary: fixes applied (findings), files
changed, files that parsed before and not after. Exit 1 when any did.

usage: fix_realcode.py --lint build/cpu/bin/nosync-lint \\
         --torch-include .venv/lib/python3.11/site-packages/torch/include \\
         --kernels-include kernels/include [--mirrors /work/.mirror] [--split all]
         [--work-dir DIR] [--json-out FILE]
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("score_realcode", os.path.join(HERE, "score_realcode.py"))
score = importlib.util.module_from_spec(spec)
spec.loader.exec_module(score)

# Text that a fix-it can start from: a clip_grad_norm_ statement, a loop over
# (named_)parameters() or an indexed list, a scalar read into a double, a
# `= x.to(device);`. Loose on purpose: it only orders out files that cannot
# get a fix.
CANDIDATE_RE = re.compile(
    r"^\s*(\(void\)\s*)?[\w:]*clip_grad_norm_\s*\("
    r"|for\s*\([^;]*:\s*[^)]*parameters\(\)\)"
    r"|\[i\]\.(grad|sum|norm|add_|mul_|data)"
    r"|(double|float)\s+\w+\s*=\s*(std::sqrt\()?[\w.>-]+\.item<(double|float)>\(\)\)?;"
    r"|=\s*[\w.\[\]>-]+\.to\(\s*\w+\s*\)\s*;", re.M)

APPLIED_RE = re.compile(r"applied the fixes of (\d+) findings to (\d+) file")


def lint(args, path, cargs, fix):
    cmd = [args.lint, "--no-cache", "--quiet" if not fix else "--no-color", path, "--"] + cargs
    if fix:
        cmd.insert(1, "--fix")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.timeout)
    out = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    return proc.returncode, out


def compile_errors(out):
    """The compile errors of a run, without their positions (fixes move lines)."""
    return {l.split(": error: ", 1)[1] for l in out.splitlines() if ": error: " in l and "[nosync-" not in l}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lint", required=True)
    ap.add_argument("--torch-include", action="append", default=[])
    ap.add_argument("--kernels-include", required=True)
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--projects", default=os.path.join(HERE, "projects.json"))
    ap.add_argument("--split", choices=("tuning", "heldback", "all"), default="all")
    ap.add_argument("--work-dir")
    ap.add_argument("--json-out")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--candidates-only", action="store_true",
                    help="only files whose text has an idiom a fix-it rewrites (CANDIDATE_RE): each torch TU "
                         "takes ~15 s or more to parse, and a file without one cannot get a fix")
    args = ap.parse_args()
    projects = [p for p in score.load_projects(args.projects) if args.split in ("all", p["split"])]
    work = args.work_dir or tempfile.mkdtemp(prefix="nosync-fixcheck-")
    rows, applied, changed, broken, skipped = [], 0, 0, [], 0
    for p in projects:
        root = os.path.join(work, score.label_file_name(p["repo"])[:-4])
        if not os.path.isdir(root):
            score.export_tree(score.find_git_dir(args.mirrors, p["repo"]), p["commit"], root)
        for path in p["files"]:
            full = os.path.join(root, path)
            if args.candidates_only:
                with open(full, errors="replace") as fh:
                    if not CANDIDATE_RE.search(fh.read()):
                        continue
            cargs = score.compile_args(p, root, path, args.torch_include, ["-isystem", args.kernels_include])
            rc, out = lint(args, full, cargs, fix=True)
            m = APPLIED_RE.search(out)
            n = int(m.group(1)) if m else 0
            row = {"repo": p["repo"], "file": path, "parsed": rc != 3, "fixes": n}
            before = compile_errors(out)
            if n == 0:
                status = "no fix" + ("" if rc != 3 else " (parsed with errors)")
            else:
                applied += n
                changed += 1
                skipped += rc == 3
                rc2, out2 = lint(args, full, cargs, fix=False)
                new_errors = sorted(compile_errors(out2) - before)
                row["parses_after"] = not new_errors and (rc2 != 3 or rc == 3)
                row["new_errors"] = new_errors
                if row["parses_after"]:
                    status = "%d fixes, %s" % (n, "parses after" if rc != 3 else
                                               "no new error (it parsed with %d errors before)" % len(before))
                else:
                    broken.append(row)
                    status = "%d fixes, BROKE IT: %s" % (n, "; ".join(new_errors[:3]) or "exit 3")
            print("%-45s %-60s %s" % (p["repo"], path, status), flush=True)
            rows.append(row)
    print("\n%d fixes applied in %d files of %d linted (%d of the changed files parsed with errors before: "
          "compared by their errors); %d files got a compile error --fix made" % (
              applied, changed, len(rows), skipped, len(broken)))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump({"files": rows, "applied": applied, "changed": changed, "broken": broken}, fh, indent=1)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
