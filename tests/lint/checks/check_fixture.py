#!/usr/bin/env python3
"""Runs one nosync check over a fixture and compares with the expectations
written in the fixture, in the style of LLVM's check_clang_tidy.py.

Expectations (comments in the fixture):
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: text [nosync-item]
      a diagnostic (warning, remark or note) at that line and column whose
      message contains `text` ({{regex}} allowed, as in FileCheck). Every
      warning and remark the check produces must be expected (notes may be
      left unchecked).
      A fixture that expects an `error:` (code that does not compile on
      purpose, to test what the checks read around it) must expect every
      error; any other fixture must compile.
  // CHECK-FIXES: full line
      after `clang-tidy --fix`, the fixed file contains these lines, in this
      order (leading/trailing blanks ignored). A fixture without CHECK-FIXES
      must come out of --fix unchanged. Write one for a line a fix rewrites
      and one for a line left as a note (it must come out as it was); an
      #include the fixes add must be there once.
The fixed file is then parsed with `clang++ -fsyntax-only` to prove it still
compiles.

usage: check_fixture.py --clang-tidy BIN --clangxx BIN --plugin LIB
                        --check NAME [--config YAML] FIXTURE -- COMPILE_FLAGS...
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXPECT_RE = re.compile(r"//\s*CHECK-MESSAGES:\s*:\[\[@LINE([+-]\d+)?\]\]:(\d+):\s*(warning|remark|note|error):\s?(.*)$")
FIX_RE = re.compile(r"//\s*CHECK-FIXES:\s?(.*)$")
DIAG_RE = re.compile(r"^(.*?):(\d+):(\d+): (warning|remark|note|error): (.*)$")


def pattern_to_regex(text):
    """FileCheck-style pattern: literal text with {{regex}} islands."""
    parts, pos = [], 0
    for m in re.finditer(r"\{\{(.*?)\}\}", text):
        parts.append(re.escape(text[pos:m.start()]))
        parts.append(m.group(1))
        pos = m.end()
    parts.append(re.escape(text[pos:]))
    return re.compile("".join(parts))


def parse_expectations(lines):
    messages, fixes = [], []
    for number, line in enumerate(lines, start=1):
        m = EXPECT_RE.search(line)
        if m:
            offset = int(m.group(1) or 0)
            messages.append({"line": number + offset, "col": int(m.group(2)), "level": m.group(3),
                             "text": m.group(4).strip(), "regex": pattern_to_regex(m.group(4).strip()),
                             "source_line": number})
            continue
        m = FIX_RE.search(line)
        if m:
            fixes.append(m.group(1).strip())
        elif "CHECK-" in line:
            raise SystemExit(f"fixture line {number}: malformed CHECK line: {line.strip()}")
    return messages, fixes


def run_tidy(args, path, fix):
    cmd = [args.clang_tidy, f"--load={args.plugin}", f"--checks=-*,{args.check}", "--quiet"]
    if args.config:
        cmd.append(f"--config={args.config}")
    if fix:
        cmd.append("--fix")
    cmd += [path, "--"] + args.flags
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def diagnostics_in(output, path):
    diags = []
    for line in output.splitlines():
        m = DIAG_RE.match(line)
        if m and os.path.realpath(m.group(1)) == os.path.realpath(path):
            diags.append({"line": int(m.group(2)), "col": int(m.group(3)), "level": m.group(4),
                          "text": m.group(5)})
    return diags


def check_messages(expected, produced):
    errors, used = [], set()
    for exp in expected:
        match = next((i for i, d in enumerate(produced) if i not in used and d["line"] == exp["line"]
                      and d["col"] == exp["col"] and d["level"] == exp["level"]
                      and exp["regex"].search(d["text"])), None)
        if match is None:
            errors.append(f"expected (fixture line {exp['source_line']}) not produced: "
                          f"{exp['line']}:{exp['col']}: {exp['level']}: {exp['text']}")
        else:
            used.add(match)
    for i, d in enumerate(produced):
        if i not in used and d["level"] in ("warning", "remark", "error"):
            errors.append(f"unexpected: {d['line']}:{d['col']}: {d['level']}: {d['text']}")
    return errors


def check_fixes(expected_fixes, original, fixed):
    if not expected_fixes:
        return [] if fixed == original else ["--fix changed the file but the fixture has no CHECK-FIXES"]
    errors, pos = [], 0
    fixed_lines = [l.strip() for l in fixed.splitlines()]
    for want in expected_fixes:
        regex = pattern_to_regex(want)
        hit = next((i for i in range(pos, len(fixed_lines)) if regex.fullmatch(fixed_lines[i])), None)
        if hit is None:
            errors.append(f"CHECK-FIXES not found (in order) in the fixed file: {want}")
        else:
            pos = hit + 1
    return errors


def check_includes(original, fixed):
    """--fix adds an #include once per file, however many fixes need it."""
    def counts(text):
        lines = [l.strip() for l in text.splitlines() if l.strip().startswith("#include")]
        return {l: lines.count(l) for l in lines}
    before, after = counts(original), counts(fixed)
    return [f"--fix left {n} copies of '{inc}'" for inc, n in after.items() if n > 1 and n > before.get(inc, 0)]


def main():
    argv = sys.argv[1:]
    flags = []
    if "--" in argv:
        cut = argv.index("--")
        argv, flags = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clang-tidy", required=True)
    parser.add_argument("--clangxx", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--check", required=True)
    parser.add_argument("--config", default="")
    parser.add_argument("fixture")
    args = parser.parse_args(argv)
    args.flags = flags
    for tool in (args.clang_tidy, args.clangxx):
        if not shutil.which(tool):
            print(f"FAIL: {tool} not found (apt-get install clang-tidy-19 clang-19, or run scripts/setup)")
            return 1

    with open(args.fixture) as f:
        original = f.read()
    expected, expected_fixes = parse_expectations(original.splitlines())
    if not expected:
        print("FAIL: fixture has no CHECK-MESSAGES; a fixture must be able to fail")
        return 1

    errors = []
    with tempfile.TemporaryDirectory(prefix="nosync-fixture-") as tmp:
        name = os.path.basename(args.fixture)
        diag_path = os.path.join(tmp, "diag", name)
        fix_path = os.path.join(tmp, "fix", name)
        for p in (diag_path, fix_path):
            os.makedirs(os.path.dirname(p))
            shutil.copyfile(args.fixture, p)

        _, output = run_tidy(args, diag_path, fix=False)
        produced = diagnostics_in(output, diag_path)
        expects_errors = any(e["level"] == "error" for e in expected)
        if not expects_errors and (any(d["level"] == "error" for d in produced)
                                   or "error:" in output and not produced):
            errors.append("the fixture does not compile:\n" + output)
        errors += check_messages(expected, produced)

        run_tidy(args, fix_path, fix=True)
        with open(fix_path) as f:
            fixed = f.read()
        errors += check_fixes(expected_fixes, original, fixed)
        errors += check_includes(original, fixed)
        if fixed != original:
            proc = subprocess.run([args.clangxx, "-fsyntax-only", fix_path] + flags,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                errors.append("the fixed file does not compile:\n" + proc.stdout)

    if errors:
        print(f"FAIL: {args.check} on {args.fixture}")
        for e in errors:
            print("  " + e)
        print("--- clang-tidy output ---\n" + output)
        return 1
    print(f"PASS: {args.check}: {len(expected)} expected diagnostics matched, "
          f"{len(expected_fixes)} fixed lines verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
