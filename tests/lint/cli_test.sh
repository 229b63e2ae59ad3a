#!/usr/bin/env bash
# usage: cli_test.sh <nosync-lint> <fixtures dir> <torch include dirs, ':'-separated> <rules.def>
# Each check runs the real binary and asserts its exit code and output.
set -u
LINT=$1 FIX=$2 TORCH_INC=$3 RULES_DEF=$4
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# expect <name> <expected exit code> <regex the output must match> -- <command...>
expect() {
  local name=$1 code=$2 pattern=$3; shift 4
  "$@" >"$tmp/out" 2>&1; local rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL $name: exit $rc, expected $code"; sed 's/^/    /' "$tmp/out" | head -20; fail=$((fail+1)); return
  fi
  if [[ -n $pattern ]] && ! grep -Eq -- "$pattern" "$tmp/out"; then
    echo "FAIL $name: output does not match /$pattern/"; sed 's/^/    /' "$tmp/out" | head -20; fail=$((fail+1)); return
  fi
  echo "ok   $name"; pass=$((pass+1))
}

expect version 0 '^nosync-lint [0-9]+\.[0-9]+\.[0-9]+ \(Clang/LLVM 1[0-9]\.' -- "$LINT" --version
expect help 0 'usage: nosync-lint' -- "$LINT" --help
expect unknown-option 2 "unknown option '--bogus'" -- "$LINT" --bogus
expect no-input 2 'no input files' -- "$LINT"
expect missing-file 2 'no such file: .*does-not-exist.cpp' -- "$LINT" "$FIX/does-not-exist.cpp" --

# --list-rules prints exactly the catalog: one line per NOSYNC_RULE entry.
n_rules=$(grep -c '^NOSYNC_RULE(' "$RULES_DEF")
"$LINT" --list-rules >"$tmp/rules" 2>&1
listed=$(grep -c '^nosync-' "$tmp/rules")
if [[ $listed -eq $n_rules && $n_rules -ge 9 ]]; then echo "ok   list-rules ($listed rules)"; pass=$((pass+1))
else echo "FAIL list-rules: listed $listed, catalog has $n_rules"; fail=$((fail+1)); fi

# Real parses. The LibTorch one needs the torch headers; without them it is skipped, visibly.
expect parse-plain 0 '' -- "$LINT" "$FIX/parse_ok_plain.cpp" -- -std=c++17
expect parse-error 3 'could not parse' -- "$LINT" "$FIX/parse_error.cpp" -- -std=c++17
if [[ -n "$TORCH_INC" ]]; then
  inc=(); IFS=: read -ra dirs <<<"$TORCH_INC"; for d in "${dirs[@]}"; do inc+=(-isystem "$d"); done
  expect parse-libtorch 0 '' -- "$LINT" "$FIX/parse_ok_libtorch.cpp" -- -std=c++17 "${inc[@]}"
else
  echo "SKIP parse-libtorch: LibTorch headers not found (run ./scripts/setup)"; skip=$((skip+1))
fi

echo "lint.cli: $pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
