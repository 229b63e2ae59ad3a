#!/usr/bin/env bash
# usage: fix_trains.sh <nosync-lint> <cmake> <nosync source dir> <Torch_DIR> <torch include dirs, ':'-separated>
# `nosync-lint --fix` on a copy of the hazard program must apply at least one
# fix, and the fixed program must still compile against LibTorch and train.
set -uo pipefail
LINT=$1 CMAKE=$2 SRC=$3 TORCH_DIR=$4 TORCH_INC=$5
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp -r "$SRC/examples" "$tmp/examples"
flags=(-std=c++17 -I"$tmp/examples")
IFS=: read -ra dirs <<<"$TORCH_INC"; for d in "${dirs[@]}"; do flags+=(-isystem "$d"); done
"$LINT" --no-cache --fix "$tmp/examples/train_hazards.cpp" -- "${flags[@]}" > "$tmp/lint.out" 2>&1
rc=$?
if [[ $rc -ne 0 && $rc -ne 1 ]]; then cat "$tmp/lint.out"; echo "FAIL nosync-lint --fix exited $rc"; exit 1; fi
if diff -u "$SRC/examples/train_hazards.cpp" "$tmp/examples/train_hazards.cpp"; then
  echo "FAIL nosync-lint --fix changed nothing in the hazard program"; exit 1
fi
echo "ok   nosync-lint --fix applied the diff above"
"$CMAKE" -S "$SRC/tests/e2e/fixed_program" -B "$tmp/build" -DEXAMPLE_DIR="$tmp/examples" \
  -DNOSYNC_CMAKE_DIR="$SRC/cmake" -DTorch_DIR="$TORCH_DIR" > "$tmp/configure.log" 2>&1 \
  || { tail -30 "$tmp/configure.log"; echo "FAIL configuring the fixed program"; exit 1; }
"$CMAKE" --build "$tmp/build" -j 2 > "$tmp/build.log" 2>&1 \
  || { grep -E 'error' -A3 "$tmp/build.log" | head -30; echo "FAIL the fixed program does not compile"; exit 1; }
echo "ok   the fixed program compiles"
bash "$SRC/tests/examples/train_runs.sh" "$tmp/build/train_hazards"
