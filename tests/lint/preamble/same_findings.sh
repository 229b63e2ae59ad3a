#!/usr/bin/env bash
# usage: same_findings.sh <nosync-lint> <file>... -- <compile args>
# Lints the files (the real checks against the real LibTorch headers) once
# parsing every file whole (--no-cache) and once through preambles built
# first (--preamble=wait, an empty cache), and requires the same findings,
# byte for byte, and the same exit code.
set -u
LINT=$1; shift
files=()
while [[ $# -gt 0 && $1 != -- ]]; do files+=("$1"); shift; done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$LINT" --no-cache --format=json --min-severity=note "${files[@]}" "$@" >"$tmp/whole.json" 2>"$tmp/whole.err"
whole_rc=$?
# The size bound keeps the disk use to about two PCHs of torch/torch.h.
"$LINT" --cache-dir="$tmp/cache" --preamble=wait --preamble-cache-limit=400 --format=json --min-severity=note \
  "${files[@]}" "$@" >"$tmp/pre.json" 2>"$tmp/pre.err"
pre_rc=$?
used=$(grep -c "preamble built" "$tmp/pre.err")
echo "${#files[@]} files: exit $whole_rc parsed whole, $pre_rc with preambles ($used built and used)"
fail=0
if [[ $whole_rc -ne $pre_rc ]]; then echo "FAIL exit codes differ"; fail=1; fi
if ! cmp -s "$tmp/whole.json" "$tmp/pre.json"; then
  echo "FAIL findings differ:"; diff <(python3 -m json.tool "$tmp/whole.json") <(python3 -m json.tool "$tmp/pre.json") | head -40
  fail=1
fi
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/whole.json" 2>/dev/null || echo 0)
if [[ $n -eq 0 ]]; then echo "FAIL no findings at all: nothing was compared"; fail=1; fi
# Every file that #includes something has a preamble, except one whose block
# has a missing #include (fixtures/missing_include.cpp): parsed whole. Fewer,
# and the comparison proves less than it claims.
with_includes=$(grep -l '^#include' "${files[@]}" | wc -l)
if [[ ${#files[@]} -gt 1 && $used -lt $((with_includes - 1)) ]]; then
  echo "FAIL only $used of the $with_includes files with #includes used a preamble"
  sed 's/^/    /' "$tmp/pre.err" | head -30; fail=1
fi
[[ $fail -eq 0 ]] && echo "ok   $n findings, the same with and without preambles"
exit $fail
