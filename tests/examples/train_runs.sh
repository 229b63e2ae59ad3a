#!/usr/bin/env bash
# usage: train_runs.sh <train binary>
# Trains a few steps on the CPU; the loss must be finite and must fall.
set -euo pipefail
BIN=$1
first=$("$BIN" --device cpu --steps 1 --seed 3 | sed -n 's/^final_loss=\([^ ]*\).*/\1/p')
last=$("$BIN" --device cpu --steps 60 --seed 3 | sed -n 's/^final_loss=\([^ ]*\).*/\1/p')
echo "loss after 1 step: $first, after 60 steps: $last"
python3 - "$first" "$last" <<'PY'
import math, sys
first, last = map(float, sys.argv[1:])
assert math.isfinite(first) and math.isfinite(last), "loss is not finite"
assert last < 0.8 * first, f"loss did not fall by 20%: {first} -> {last}"
PY
echo "1 passed, 0 failed"
