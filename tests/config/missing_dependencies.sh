#!/usr/bin/env bash
# usage: missing_dependencies.sh <cmake> <source dir> <torch dir>
# Configures the project three times, each time without one dependency, and
# checks that exactly the parts needing it are OFF with a reason, the others
# stay ON, and configure still succeeds without a CMake error.
set -u
CMAKE=$1 SRC=$2 TORCH=${3:-$2/.venv}
pass=0 fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# configure <name> <expectations...> -- <cmake args...>
# expectation: "<part>:ON" or "<part>:OFF:<text the reason must contain>"
configure() {
  local name=$1; shift
  local expects=()
  while [[ $1 != -- ]]; do expects+=("$1"); shift; done; shift
  local log="$tmp/$name.log"
  if ! "$CMAKE" -S "$SRC" -B "$tmp/$name" -DNOSYNC_TESTS=OFF "$@" >"$log" 2>&1; then
    echo "FAIL $name: configure failed"; tail -20 "$log"; fail=$((fail+1)); return
  fi
  if grep -q 'CMake Error' "$log"; then
    echo "FAIL $name: CMake Error in output"; grep -A5 'CMake Error' "$log"; fail=$((fail+1)); return
  fi
  local ok=1
  for e in "${expects[@]}"; do
    IFS=: read -r part state reason <<<"$e"
    local line; line=$(grep -E "^  $part: " "$log")
    if [[ $state == ON && $line != "  $part: ON" ]] || [[ $state == OFF && ( $line != "  $part: OFF ("* || $line != *"$reason"* ) ]]; then
      echo "FAIL $name: expected $part $state${reason:+ ($reason)}, got: ${line:-nothing}"; ok=0
    fi
  done
  if [[ $ok -eq 1 ]]; then echo "ok   $name"; pass=$((pass+1)); else fail=$((fail+1)); fi
}

configure no-llvm lint:OFF:Clang/LLVM sanitizer:ON kernels:ON examples:ON -- \
  -DNOSYNC_TORCH_DIR="$TORCH" -DCMAKE_DISABLE_FIND_PACKAGE_Clang=ON
configure no-torch lint:ON sanitizer:ON kernels:OFF:"LibTorch not found" examples:OFF:"LibTorch not found" -- \
  -DNOSYNC_TORCH_DIR="$tmp/no-such-torch"
configure no-cuda lint:ON sanitizer:OFF:"CUDA toolkit" kernels:OFF:"CUDA toolkit" examples:OFF:"CUDA toolkit" -- \
  -DNOSYNC_TORCH_DIR="$TORCH" -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON

echo "config.missing_dependencies: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
