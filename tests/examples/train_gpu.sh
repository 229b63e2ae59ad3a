#!/usr/bin/env bash
# usage: train_gpu.sh check <train_fixed> <train_graphed>
#        train_gpu.sh bench <train_hazards> <train_fixed> <train_graphed> [<graphed_kernel_time>]
#   check: on the GPU, train_graphed follows train_fixed's loss curve (fp32
#          tolerance: its learning rate is a device tensor, so p -= lr*buf
#          rounds once more); a loss.item() planted in the captured step is
#          named by file:line and rule (exit 3); the replays block nothing
#          under SyncFreeScope when the sanitizer is built in.
#   bench: steps/s of the three programs, 5 runs of 200 steps each, every run
#          listed and the median; with the kernel-time probe, the graphed
#          step's wall time against the sum of its kernels' times (CUPTI).
# Writes examples-steps.md to $NOSYNC_RESULTS_DIR (bench). Exit 77 without a GPU.
set -uo pipefail
MODE=$1; shift
RESULTS=${NOSYNC_RESULTS_DIR:-.}
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no CUDA GPU on this machine; this test runs on the GPU machine (tests/gpu/run)"
  exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; fail=$((fail+1)); fi; }

check_mode() {
  local FIXED=$1 GRAPHED=$2
  local args=(--device cuda --steps 60 --seed 5)
  "$FIXED" "${args[@]}" > "$tmp/fixed.txt" 2>&1; check "train_fixed ran (exit $?)" '[[ -s $tmp/fixed.txt ]]'
  "$GRAPHED" "${args[@]}" > "$tmp/graphed.txt" 2>&1; local rc=$?
  check "train_graphed ran on the GPU (exit $rc)" '[[ $rc -eq 0 ]]'
  check "train_graphed captured its step once" 'grep -q "captures=1" "$tmp/graphed.txt"'
  python3 - "$tmp/fixed.txt" "$tmp/graphed.txt" > "$tmp/cmp.txt" <<'PY'
import re, sys
def losses(p):
    v = {int(m[1]): float(m[2]) for m in re.finditer(r"^loss\[(\d+)\]=(\S+)$", open(p).read(), re.M)}
    return [v[i] for i in range(len(v))]
f, g = losses(sys.argv[1]), losses(sys.argv[2])
worst = max(abs(a - b) / max(abs(a), 1e-6) for a, b in zip(f, g)) if f and len(f) == len(g) else float("inf")
print(f"{len(f)} {len(g)} {worst:.3e}")
sys.exit(0 if worst < 1e-3 else 1)
PY
  local cmp_rc=$?
  check "train_graphed follows train_fixed's loss curve on the GPU (steps, steps, worst relative gap: $(cat "$tmp/cmp.txt"))" '[[ $cmp_rc -eq 0 ]]'
  "$GRAPHED" "${args[@]}" --plant-sync 1 > "$tmp/planted.txt" 2>&1; rc=$?
  local line; line=$(grep -n 'planted: a host sync' "$(dirname "$0")/../../examples/train_graphed.cpp" | cut -d: -f1)
  check "a planted loss.item() fails the capture with CaptureSyncError (exit $rc, want 3)" '[[ $rc -eq 3 ]]'
  check "the error names train_graphed.cpp:$line and nosync-item" \
    'grep -q "train_graphed.cpp:$line" "$tmp/planted.txt" && grep -q "\[nosync-item\]" "$tmp/planted.txt"'
  grep -m3 'nosync:' "$tmp/planted.txt"
  if [[ ${NOSYNC_WITH_SANITIZER:-0} == 1 ]]; then  # SyncFreeScope is compiled in only then
    "$GRAPHED" "${args[@]}" --assert-sync-free 1 > "$tmp/free.txt" 2>&1; rc=$?
    check "train_graphed --assert-sync-free: no replay blocks the host (exit $rc)" '[[ $rc -eq 0 ]]'
    [[ $rc -eq 0 ]] || tail -5 "$tmp/free.txt"
  else
    echo "note: built without nosync::sanitizer; --assert-sync-free not checked"
  fi
}

# steps/s of 5 runs; prints the runs space-separated, or nothing if one fails.
runs() {
  local out=()
  for _ in 1 2 3 4 5; do
    local v; v=$("$@" 2>/dev/null | sed -n 's/^steps_per_sec=//p')
    [[ -n "$v" ]] || return 1
    out+=("$v")
  done
  echo "${out[*]}"
}

bench_mode() {
  local HAZARDS=$1 FIXED=$2 GRAPHED=$3 PROBE=${4:-}
  local h f g
  h=$(runs "$HAZARDS" --device cuda --steps 200); check "train_hazards ran 5 x 200 steps" '[[ -n "$h" ]]'
  f=$(runs "$FIXED" --device cuda --steps 200); check "train_fixed ran 5 x 200 steps" '[[ -n "$f" ]]'
  g=$(runs "$GRAPHED" --device cuda --steps 200); check "train_graphed ran 5 x 200 steps" '[[ -n "$g" ]]'
  [[ -n "$h" && -n "$f" && -n "$g" ]] || return
  local probe=""
  [[ -n "$PROBE" ]] && probe=$("$PROBE" 2>&1 | tail -1)
  python3 - "$h" "$f" "$g" "$probe" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)" \
    > "$RESULTS/examples-steps.md" <<'PY'
import statistics, sys
h, f, g = ([float(x) for x in a.split()] for a in sys.argv[1:4])
probe, gpu = sys.argv[4], sys.argv[5]
mh, mf, mg = (statistics.median(v) for v in (h, f, g))
print("### End to end: hazards / fixed / graphed (steps/s, 200 steps per run)")
print()
print("| program | median of 5 | runs | × hazards |")
print("|---|---|---|---|")
for name, v, m in (("train_hazards", h, mh), ("train_fixed", f, mf), ("train_graphed", g, mg)):
    print(f"| {name} | {m:.1f} | {' '.join(f'{x:.1f}' for x in v)} | {m / mh:.2f}× |")
print()
print(f"Goals: train_fixed ≥ 2× hazards: {mf / mh:.2f}×; train_graphed ≥ 6× hazards: {mg / mh:.2f}×.")
if probe:
    print()
    print(f"Graphed step vs its kernels (CUPTI activity): {probe}")
print()
print(f"GPU: {gpu}; model: 72 residual blocks, 292 parameter tensors, batch 256.")
PY
  cat "$RESULTS/examples-steps.md"
}

case $MODE in
  check) check_mode "$@" ;;
  bench) bench_mode "$@" ;;
  *) echo "usage: train_gpu.sh check|bench ..." >&2; exit 2 ;;
esac
echo "examples.gpu_$MODE: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
