#!/usr/bin/env bash
# run_sanitized.sh <compute-sanitizer> <tool> <test binary> [args...]
# Runs the GPU test binary under compute-sanitizer; exits 77 (ctest: skipped)
# with a visible reason where there is no sanitizer or no GPU.
sanitizer=$1 tool=$2
shift 2
if [[ -z "$sanitizer" || ! -x "$sanitizer" ]]; then
  echo "[  SKIPPED ] compute-sanitizer not found; runs on the GPU machine (tests/gpu/run)"; exit 77
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "[  SKIPPED ] no CUDA GPU on this machine; runs on the GPU machine (tests/gpu/run)"; exit 77
fi
# racecheck checks shared-memory hazards inside our kernels; memcheck every
# global access. Torch's own kernels run too, so both tools see the whole op.
exec "$sanitizer" --tool "$tool" --error-exitcode 1 --print-limit 20 "$@"
