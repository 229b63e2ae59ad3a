#!/usr/bin/env bash
# usage: preamble_test.sh <nosync-lint-fake> <fixtures dir>
# The preamble cache's mechanics, on the fake module's project fixture (small
# headers, so every parse is quick): the findings are the same with and
# without a preamble; an edit below the #include block reuses it; a header or
# a flag change rebuilds it; --preamble=off and --no-cache turn it off; the
# default builds it in the background; a block with a missing #include falls
# back to parsing the file whole; the size bound evicts.
set -u
FAKE=$1 FIX=$(cd "$2" && pwd)
pass=0 fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1
ok() { echo "ok   $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

P=$tmp/project
cp -r "$FIX/project" "$P"
FLAGS=(-- -std=c++17 "-I$P/site-packages" -isystem "$FIX/sysinc")
C=$tmp/cache
pchs() { find "$C/preambles" -name '*.pch' 2>/dev/null | wc -l; }
pch_id() { stat -c '%i %Y' "$C"/preambles/*.pch 2>/dev/null | sort | tr '\n' ' '; }
# lint <name> <args...>: JSON findings (notes too) and exit code into $tmp/<name>.{json,rc,err}
lint() {
  local name=$1; shift
  "$FAKE" --format=json --min-severity=note "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}
same() {  # same <a> <b>: identical findings and exit codes
  cmp -s "$tmp/$1.json" "$tmp/$2.json" && cmp -s "$tmp/$1.rc" "$tmp/$2.rc"
}

# ------------------------------------------------------------ built, then reused
lint whole --no-cache "$P/step.cpp" "${FLAGS[@]}"
check "fixture has findings, one in a header of the block" 'grep -q "step_helpers.h" "$tmp/whole.json"'
lint built --cache-dir="$C" --preamble=wait "$P/step.cpp" "${FLAGS[@]}"
check "--preamble=wait builds one preamble" '[[ $(pchs) -eq 1 ]]'
check "same findings with the preamble built now" 'same whole built'
check "no finding points into the cache" '! grep -q "preambles/" "$tmp/built.json"'
id=$(pch_id)
echo '// an edit below the #include block' >>"$P/step.cpp"
lint whole2 --no-cache "$P/step.cpp" "${FLAGS[@]}"
lint reused --cache-dir="$C" "$P/step.cpp" "${FLAGS[@]}"
check "an edited file reuses the preamble" '[[ $(pch_id) == "$id" && $(pchs) -eq 1 ]]'
check "same findings with the preamble reused" 'same whole2 reused'

# ------------------------------------------------------------ rebuilt
sed -i 's/return t.item(); }/return t.item() * 1.0f; }/' "$P/step_helpers.h"
lint whole3 --no-cache "$P/step.cpp" "${FLAGS[@]}"
lint header --cache-dir="$C" --preamble=wait "$P/step.cpp" "${FLAGS[@]}"
check "a header change rebuilds the preamble" '[[ $(pch_id) != "$id" && $(pchs) -eq 1 ]]'
check "same findings after the header change" 'same whole3 header'
lint flag --cache-dir="$C" --preamble=wait "$P/step.cpp" "${FLAGS[@]}" -DSOMETHING
check "a flag change builds another preamble" '[[ $(pchs) -eq 2 ]]'
check "same findings with the other flags" 'same whole3 flag'

# ------------------------------------------------------------ off
rm -rf "$C"
lint off --cache-dir="$C" --preamble=off "$P/step.cpp" "${FLAGS[@]}"
check "--preamble=off stores no preamble" '[[ ! -d $C/preambles ]]'
check "same findings with --preamble=off" 'same whole3 off'
rm -rf "$C"
lint nocache --no-cache --cache-dir="$C" "$P/step.cpp" "${FLAGS[@]}"
check "--no-cache writes no cache at all" '[[ ! -d $C ]]'
lint bogus --preamble=sometimes "$P/step.cpp" "${FLAGS[@]}"
check "--preamble=<bad> is a usage error" '[[ $(cat "$tmp/bogus.rc") -eq 2 ]] && grep -q "must be auto, wait or off" "$tmp/bogus.err"'

# ------------------------------------------------------------ default: built in the background
rm -rf "$C"
lint auto --cache-dir="$C" "$P/step.cpp" "${FLAGS[@]}"
check "a cold default run lints the file whole, same findings" 'same whole3 auto'
for _ in $(seq 1 120); do [[ $(pchs) -eq 1 && ! -e $(ls "$C"/preambles/*.lock 2>/dev/null | head -1) ]] && break; sleep 0.5; done
check "and builds its preamble in the background" '[[ $(pchs) -eq 1 ]]'
cp "$P/step.cpp" "$P/other.cpp"
"$FAKE" --cache-dir="$C" "$P/step.cpp" "$P/other.cpp" "${FLAGS[@]}" >/dev/null 2>"$tmp/progress"
check "progress says which files reused a preamble" 'grep -q "other.cpp (.*preamble reused)" "$tmp/progress"'

# ------------------------------------------------------------ a block that does not build
cat >"$P/missing.cpp" <<'CPP'
#include "step_helpers.h"
#include "not_installed/env.h"

float train(const Tensor& t) { return t.item(); }
CPP
lint miss_whole --no-cache "$P/missing.cpp" "${FLAGS[@]}"
lint miss --cache-dir="$C" --preamble=wait "$P/missing.cpp" "${FLAGS[@]}"
check "missing include: reported and linted on" 'grep -q "not_installed/env.h" "$tmp/miss_whole.json" && grep -q "missing.cpp" "$tmp/miss_whole.json"'
check "missing include in the block: parsed whole, same findings" 'same miss_whole miss'
check "missing include in the block: remembered as unusable" 'grep -lq "\"usable\":false" "$C"/preambles/*.json'

# ------------------------------------------------------------ the block inside an include guard, a macro of the block
cat >"$P/guarded.h" <<'CPP'
#ifndef GUARDED_H
#define GUARDED_H
#include "step_helpers.h"
#define READ(t) (t).item()
float guarded(const Tensor& t) { return READ(t); }
#endif
CPP
lint guard_whole --no-cache "$P/guarded.h" "${FLAGS[@]}"
lint guard --cache-dir="$C" --preamble=wait "$P/guarded.h" "${FLAGS[@]}"
check "a header's include guard: finding in its body" 'grep -q "guarded.h" "$tmp/guard_whole.json"'
check "a header's include guard: same findings with the preamble" 'same guard_whole guard'
check "a header's include guard: its block has a preamble" '[[ $(pchs) -eq 2 ]]'
check "a macro of the block: its note is placed in the file" 'grep -q "guarded.h" "$tmp/guard.json" && ! grep -q "preambles/" "$tmp/guard.json"'

# ------------------------------------------------------------ size bound
rm -rf "$C"
lint lim1 --cache-dir="$C" --preamble=wait --preamble-cache-limit=0 "$P/step.cpp" "${FLAGS[@]}"
touch -d '-1 hour' "$C"/preambles/*.json  # not in use by any run any more
lint lim2 --cache-dir="$C" --preamble=wait --preamble-cache-limit=0 "$P/step.cpp" "${FLAGS[@]}" -DOTHER
check "the size bound keeps only the preamble in use" '[[ $(pchs) -eq 1 ]]'
lint lim3 --cache-dir="$C" --preamble=wait --preamble-cache-limit=0 "$P/step.cpp" "${FLAGS[@]}" -DTHIRD
check "but not one another run used within the minute" '[[ $(pchs) -eq 2 ]]'

echo "lint.preamble: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
