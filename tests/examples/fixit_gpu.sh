#!/usr/bin/env bash
# usage: fixit_gpu.sh <nosync-run> <train_hazards> <train_hazards_fixit>
# On the GPU: the hazard example and its `nosync-lint --fix` output
# (examples/train_hazards_fixit.cpp) side by side.
#  - host syncs per step under the sanitizer: blocking calls of a 200-step run
#    minus those of a 100-step run, over 100 (set-up and exit cancel out);
#  - steps/s without the sanitizer, median of 3 runs of 200 steps;
#  - the same loss curve on the GPU (relative gap < 1e-3).
# The fixed copy must block the host fewer times per step and run faster.
# Writes examples-fixit.md to $NOSYNC_RESULTS_DIR. Exit 77 without a GPU.
set -uo pipefail
RUN=$1 HAZARDS=$2 FIXIT=$3
RESULTS=${NOSYNC_RESULTS_DIR:-.}
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no CUDA GPU on this machine; this test runs on the GPU machine (tests/gpu/run -R examples.fixit_gpu)"
  exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass+1)); else echo "FAIL $1"; fail=$((fail+1)); fi; }

# Blocking host calls of one run under the sanitizer (report mode, JSON).
blocking() {
  local name=$1 steps=$2; shift 2
  "$RUN" --mode report --format json --min-stall-us 0 --log "$tmp/$name.$steps" -- \
    "$@" --device cuda --steps "$steps" --seed 5 > "$tmp/$name-$steps.stdout" 2>&1 || return 1
  # The glob below reads the sanitizer's logs, $tmp/$name.$steps.<pid>: the
  # program's output must not match it.
  python3 -c 'import glob, json, sys
print(sum(json.load(open(f))["totals"]["blocking_calls"] for f in glob.glob(sys.argv[1] + ".*")))' "$tmp/$name.$steps"
}
per_step() {
  local a b; a=$(blocking "$1" 100 "$2") && b=$(blocking "$1" 200 "$2") || return 1
  python3 -c "print(f'{($b - $a) / 100:.2f}')"
}
speed() {
  local out=()
  for _ in 1 2 3; do
    local v; v=$("$@" --device cuda --steps 200 --seed 5 2>/dev/null | sed -n 's/^steps_per_sec=//p')
    [[ -n "$v" ]] || return 1
    out+=("$v")
  done
  python3 -c 'import statistics, sys; print(f"{statistics.median(map(float, sys.argv[1:])):.1f}")' "${out[@]}"
}

hs=$(per_step hazards "$HAZARDS"); check "hazards ran under the sanitizer (syncs/step: ${hs:-?})" '[[ -n "$hs" ]]'
fs=$(per_step fixit "$FIXIT"); check "fixed copy ran under the sanitizer (syncs/step: ${fs:-?})" '[[ -n "$fs" ]]'
hv=$(speed "$HAZARDS"); check "hazards steps/s: ${hv:-?}" '[[ -n "$hv" ]]'
fv=$(speed "$FIXIT"); check "fixed copy steps/s: ${fv:-?}" '[[ -n "$fv" ]]'
"$HAZARDS" --device cuda --steps 60 --seed 5 > "$tmp/h.txt" 2>&1
"$FIXIT" --device cuda --steps 60 --seed 5 > "$tmp/f.txt" 2>&1
gap=$(python3 - "$tmp/h.txt" "$tmp/f.txt" <<'PY'
import re, sys
def losses(p):
    v = {int(m[1]): float(m[2]) for m in re.finditer(r"^loss\[(\d+)\]=(\S+)$", open(p).read(), re.M)}
    return [v[i] for i in range(len(v))]
h, f = losses(sys.argv[1]), losses(sys.argv[2])
print(f"{max(abs(a - b) / max(abs(a), 1e-6) for a, b in zip(h, f)):.2e}" if h and len(h) == len(f) else "inf")
PY
)
check "the fixed copy follows the hazard loss curve on the GPU (worst relative gap $gap)" \
  'python3 -c "import sys; sys.exit(0 if float(\"$gap\") < 1e-3 else 1)"'
if [[ -n "$hs" && -n "$fs" && -n "$hv" && -n "$fv" ]]; then
  check "fewer host syncs per step after --fix ($hs -> $fs)" 'python3 -c "import sys; sys.exit(0 if $fs < $hs else 1)"'
  check "faster after --fix ($hv -> $fv steps/s)" 'python3 -c "import sys; sys.exit(0 if $fv > $hv else 1)"'
  {
    echo "# examples/train_hazards.cpp before and after nosync-lint --fix (H200)"
    echo
    echo "| program | host syncs / step (sanitizer) | steps/s (median of 3 x 200) |"
    echo "|---|---|---|"
    echo "| train_hazards | $hs | $hv |"
    echo "| train_hazards_fixit (--fix) | $fs | $fv |"
    echo
    echo "Loss curves: worst relative gap $gap over 60 steps."
  } > "$RESULTS/examples-fixit.md"
  cat "$RESULTS/examples-fixit.md"
fi
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
