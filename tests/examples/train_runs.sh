#!/usr/bin/env bash
# usage: train_runs.sh <train_hazards> [<train_fixed> [<train_graphed>]]
# Trains on the CPU. The hazard program's loss must be finite and fall; each
# twin given must produce the same loss curve (same seed, same data) within a
# float tolerance (train_graphed runs its step eagerly on the CPU).
set -euo pipefail
HAZARDS=$1 FIXED=${2:-} GRAPHED=${3:-}
args=(--device cpu --steps 40 --seed 3 --depth 24 --width 128 --batch 128)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$HAZARDS" "${args[@]}" > "$tmp/hazards.txt"
[[ -n "$FIXED" ]] && "$FIXED" "${args[@]}" > "$tmp/fixed.txt"
[[ -n "$GRAPHED" ]] && "$GRAPHED" "${args[@]}" > "$tmp/graphed.txt"
python3 - "$tmp/hazards.txt" ${FIXED:+"$tmp/fixed.txt"} ${GRAPHED:+"$tmp/graphed.txt"} <<'PY'
import math, re, sys

def losses(path):
    vals = {int(m[1]): float(m[2]) for m in re.finditer(r"^loss\[(\d+)\]=(\S+)$", open(path).read(), re.M)}
    return [vals[i] for i in range(len(vals))]

passed = failed = 0
def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    passed, failed = passed + ok, failed + (not ok)

h = losses(sys.argv[1])
check(len(h) == 40, f"hazards logged {len(h)} of 40 losses")
check(all(math.isfinite(v) for v in h), "hazards losses are finite")
first, last = sum(h[:5]) / 5, sum(h[-5:]) / 5
check(last < 0.8 * first, f"hazards loss falls by 20%: {first:.4f} -> {last:.4f}")
for name, path in zip(["fixed", "graphed"], sys.argv[2:]):
    f = losses(path)
    check(len(f) == len(h), f"{name} logged {len(f)} losses")
    worst = max(abs(a - b) / max(abs(a), 1e-6) for a, b in zip(h, f)) if f else math.inf
    check(worst < 1e-3, f"{name} twin follows the same loss curve (worst relative gap {worst:.2e})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
