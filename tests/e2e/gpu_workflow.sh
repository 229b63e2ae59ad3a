#!/usr/bin/env bash
# usage: gpu_workflow.sh check|bench <train_hazards> <train_fixed> <nosync-run> <hazards source>
# The user's workflow on a GPU.
#   check: 1. the sanitizer on the hazard program finds its syncs (JSON kept
#             for the CPU-side join with nosync-lint: tests/e2e/join_findings.py);
#          2. the fixed twin runs every step after warm-up inside SyncFreeScope.
#   bench: steps per second of both, side by side (goal: fixed >= 2x hazards);
#          prints the figures next to the goal, fails only if a run fails.
# Writes e2e-hazards-sanitizer.json, e2e-hazards-source.sha256 (check) and
# e2e.md (bench) to $NOSYNC_RESULTS_DIR. Exit 77 (ctest: skipped) without a GPU.
set -uo pipefail
MODE=$1 HAZARDS=$2 FIXED=$3 RUN=$4 SOURCE=$5
RESULTS=${NOSYNC_RESULTS_DIR:-.}
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no CUDA GPU on this machine; this test runs on the GPU machine (tests/gpu/run)"
  exit 77
fi
mkdir -p "$RESULTS"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; fail=$((fail+1)); fi; }

check_workflow() {
# 1. Sanitizer on the hazard program.
"$RUN" --mode report --format json --log "$tmp/hazards" -- "$HAZARDS" --device cuda --steps 30 > "$tmp/hazards.out" 2>&1
report=$(ls "$tmp"/hazards.* 2>/dev/null | grep -v '\.out$' | head -1)
check "sanitizer wrote a JSON report for the hazard program" '[[ -n "$report" ]]'
if [[ -n "$report" ]]; then
  cp "$report" "$RESULTS/e2e-hazards-sanitizer.json"
  sha256sum < "$SOURCE" | cut -d' ' -f1 > "$RESULTS/e2e-hazards-source.sha256"
  for rule in nosync-item nosync-bool-condition nosync-device-to-host nosync-pageable-h2d nosync-explicit-sync; do
    check "sanitizer reports $rule on the hazard program" "grep -q '\"rule\": \"$rule\"' '$report'"
  done
fi

# 2. The fixed twin: no host sync in any step after the first.
"$FIXED" --device cuda --steps 50 --assert-sync-free 1 > "$tmp/fixed.out" 2>&1
rc=$?
check "train_fixed --assert-sync-free: no step after warm-up blocks the host (exit $rc)" '[[ $rc -eq 0 ]]'
[[ $rc -eq 0 ]] || tail -20 "$tmp/fixed.out"
}

# Best steps/s of three runs; empty if a run fails.
best() {
  local b=0
  for _ in 1 2 3; do
    local v; v=$("$@" | sed -n 's/^steps_per_sec=//p')
    [[ -n "$v" ]] || return 1
    b=$(python3 -c "print(max($b, $v))")
  done
  echo "$b"
}

bench_steps() {
h=$(best "$HAZARDS" --device cuda --steps 200); check "train_hazards ran 3 x 200 steps" '[[ -n "$h" ]]'
f=$(best "$FIXED" --device cuda --steps 200); check "train_fixed ran 3 x 200 steps" '[[ -n "$f" ]]'
[[ -n "$h" && -n "$f" ]] || return
ratio=$(python3 -c "print(f'{$f / $h:.2f}')")
echo "steps/s: train_hazards $h, train_fixed $f, ratio $ratio (goal >= 2)"
{
  echo "### End to end: hazard program vs its fixed twin"
  echo
  echo "| program | steps/s (best of 3, 200 steps) |"
  echo "|---|---|"
  echo "| train_hazards | $h |"
  echo "| train_fixed | $f |"
  echo "| ratio | $ratio (goal >= 2) |"
  echo
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); model: 72 residual blocks, 292 parameter tensors, batch 256."
} > "$RESULTS/e2e.md"
}

case $MODE in
  check) check_workflow ;;
  bench) bench_steps ;;
  *) echo "usage: gpu_workflow.sh check|bench ..." >&2; exit 2 ;;
esac
echo "e2e.$MODE: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
