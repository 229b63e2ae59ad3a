#!/usr/bin/env bash
# usage: fixit_test.sh <nosync-lint> <build dir> <source dir> <train_hazards> <libnosync_kernels> <Torch_DIR> [--update]
# The fix-its on the hazard example, end to end on the CPU:
#  1. nosync-lint --fix on a copy of examples/train_hazards.cpp applies at
#     least 5 fixes;
#  2. the result is examples/train_hazards_fixit.cpp byte for byte (that file
#     is what the GPU machine, which has no LLVM, builds; --update rewrites it);
#  3. the fixed copy builds in a separate CMake project against LibTorch and
#     libnosync_kernels;
#  4. it trains on the CPU with the hazard program's loss curve (train_runs.sh).
set -uo pipefail
LINT=$1 BUILD=$2 SRC=$3 HAZARDS=$4 KERNELS=$5 TORCH_DIR=$6 UPDATE=${7:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; fail=$((fail+1)); fi; }

# 1. A copy with the example's own compile command.
cp "$SRC/examples/train_hazards.cpp" "$tmp/train_hazards.cpp"
python3 - "$BUILD/compile_commands.json" "$SRC/examples/train_hazards.cpp" "$tmp" <<'PY'
import json, os, sys
db, src, tmp = sys.argv[1:]
entry = next(e for e in json.load(open(db)) if os.path.realpath(e["file"]) == os.path.realpath(src))
copy = os.path.join(tmp, "train_hazards.cpp")
entry = {"directory": entry["directory"], "file": copy, "command": entry["command"].replace(src, copy)}
json.dump([entry], open(os.path.join(tmp, "compile_commands.json"), "w"))
PY
"$LINT" "$tmp/train_hazards.cpp" -p "$tmp" --no-cache --fix > "$tmp/lint.out" 2> "$tmp/lint.err"
rc=$?
applied=$(sed -n 's/.*applied the fixes of \([0-9]*\) findings.*/\1/p' "$tmp/lint.err")
check "nosync-lint --fix ran (exit $rc: findings remain as notes)" '[[ $rc -eq 1 ]]'
check "--fix applied the fixes of ${applied:-0} findings (want >= 5)" '[[ ${applied:-0} -ge 5 ]]'
[[ ${applied:-0} -ge 5 ]] || cat "$tmp/lint.err"

# 2. The committed fixed copy is today's --fix output.
if [[ "$UPDATE" == --update ]]; then
  cp "$tmp/train_hazards.cpp" "$SRC/examples/train_hazards_fixit.cpp"
  echo "updated examples/train_hazards_fixit.cpp"
fi
check "examples/train_hazards_fixit.cpp is the --fix output (else: $0 ... --update)" \
  'diff -u "$SRC/examples/train_hazards_fixit.cpp" "$tmp/train_hazards.cpp" > "$tmp/diff.txt"'
head -40 "$tmp/diff.txt"

# 3. It builds outside nosync's tree.
cmake -S "$SRC/tests/examples/fixit_project" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release \
  -DFIXIT_SOURCE="$tmp/train_hazards.cpp" -DEXAMPLES_DIR="$SRC/examples" -DTorch_DIR="$TORCH_DIR" \
  -DNOSYNC_INCLUDE_DIRS="$SRC/kernels/include;$SRC/rules/include" -DNOSYNC_KERNELS_LIB="$KERNELS" \
  > "$tmp/configure.log" 2>&1 && cmake --build "$tmp/build" -j 2 > "$tmp/build.log" 2>&1
rc=$?
check "the fixed copy builds in a separate project against LibTorch and libnosync_kernels" '[[ $rc -eq 0 ]]'
[[ $rc -eq 0 ]] || { tail -30 "$tmp/configure.log" "$tmp/build.log"; }

# 4. Same loss curve as the hazard program (same seed and data, fp32 tolerance).
if [[ $rc -eq 0 ]]; then
  bash "$SRC/tests/examples/train_runs.sh" "$HAZARDS" "$tmp/build/train_fixit"
  rc=$?
  check "the fixed copy trains with the hazard program's loss curve" '[[ $rc -eq 0 ]]'
fi
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
