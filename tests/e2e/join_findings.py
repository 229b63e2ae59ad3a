#!/usr/bin/env python3
"""Joins nosync-lint's findings on examples/train_hazards.cpp with the
sanitizer's findings from a GPU run of the same program.

Every runtime sync should sit on a line the linter flagged, and every static
warning on a line the sanitizer saw block. Lines where the two legitimately
differ are listed in EXPLAINED with the reason; anything else fails the test.
The runtime side comes from results/e2e/ (tests/gpu/run writes it on the GPU
machine, which has no LLVM); its source hash must match the current file.

usage: join_findings.py <nosync-lint> <train_hazards.cpp> <results/e2e dir> -- <compile flags>
"""
import hashlib
import json
import os
import subprocess
import sys

# (side, source-line fragment) -> why the two tools differ there.
EXPLAINED = {
    ("runtime-only", "model->to(device)"):
        "one-off setup: the parameters are copied from pageable memory once; the linter never flags "
        "Module::to (the issue says so) because setup copies are not a per-step cost",
    ("static-only", "for (const auto& p : model->parameters())"):
        "a launch loop does not block the host, so no blocking call marks it; the sanitizer reports it as "
        "nosync-launch-bound only with activity=1, and this report was taken without kernel activity",
}


def load_runtime(results_dir, source):
    digest_file = os.path.join(results_dir, "e2e-hazards-source.sha256")
    report_file = os.path.join(results_dir, "e2e-hazards-sanitizer.json")
    if not (os.path.exists(digest_file) and os.path.exists(report_file)):
        sys.exit(f"FAIL no runtime findings in {results_dir}: run tests/gpu/run -R e2e on the GPU machine "
                 "and commit e2e-hazards-sanitizer.json and e2e-hazards-source.sha256 there")
    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if open(digest_file).read().split()[0] != digest:
        sys.exit(f"FAIL runtime findings in {results_dir} are for another version of {source}: "
                 "re-run tests/gpu/run -R e2e on the GPU machine and commit the new files")
    report = json.load(open(report_file))
    name = os.path.basename(source)
    return {(f["line"], f["rule"]) for f in report["findings"] if os.path.basename(f["file"]) == name}


def load_static(lint, source, flags):
    proc = subprocess.run([lint, "--format=json", "--min-severity=note", "--no-cache", source, "--", *flags],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"FAIL nosync-lint exited {proc.returncode}:\n{proc.stderr}")
    name = os.path.basename(source)
    return {(f["line"], f["rule"], f["severity"]) for f in json.loads(proc.stdout)
            if os.path.basename(f["file"]) == name}


def main():
    sep = sys.argv.index("--")
    lint, source, results_dir = sys.argv[1:sep]
    flags = sys.argv[sep + 1:]
    lines = open(source).read().splitlines()
    runtime = load_runtime(results_dir, source)
    static = load_static(lint, source, flags)
    static_lines = {line for line, _, sev in static if sev == "warning"}
    any_static_lines = {line for line, _, _ in static}
    runtime_lines = {line for line, _ in runtime}

    print(f"{'line':>5}  {'static (nosync-lint)':<40} {'runtime (sanitizer)':<32} source")
    for line in sorted(any_static_lines | runtime_lines):
        s = ", ".join(sorted(f"{r} ({sev})" for l, r, sev in static if l == line)) or "-"
        r = ", ".join(sorted(rule for l, rule in runtime if l == line)) or "-"
        print(f"{line:>5}  {s:<40} {r:<32} {lines[line - 1].strip()[:60]}")

    unexplained = []
    for side, missing in (("runtime-only", runtime_lines - any_static_lines),
                          ("static-only", static_lines - runtime_lines)):
        for line in sorted(missing):
            text = lines[line - 1]
            reason = next((why for (s, frag), why in EXPLAINED.items() if s == side and frag in text), None)
            print(f"{side} line {line}: " + (f"explained: {reason}" if reason else "UNEXPLAINED") +
                  f"\n    {text.strip()}")
            if not reason:
                unexplained.append(line)
    passed = int(not unexplained)
    print(f"{passed} passed, {1 - passed} failed")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
