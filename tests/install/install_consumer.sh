#!/usr/bin/env bash
# usage: install_consumer.sh <cmake> <nosync build dir> <consumer source dir>
set -euo pipefail
CMAKE=$1 BUILD=$2 CONSUMER=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$CMAKE" --install "$BUILD" --prefix "$tmp/prefix" > "$tmp/install.log"
for f in lib/cmake/nosync/nosyncConfig.cmake include/nosync/kernels.h include/nosync/sanitizer.h \
         include/nosync/rules.h lib/libnosync_kernels.so lib/libnosync_sanitizer.so bin/nosync-run; do
  [[ -e "$tmp/prefix/$f" ]] || { echo "FAIL: install lacks $f"; exit 1; }
done
"$CMAKE" -S "$CONSUMER" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log"; echo "FAIL: consumer configure"; exit 1; }
"$CMAKE" --build "$tmp/build" -j 2 > "$tmp/build.log" 2>&1 \
  || { tail -30 "$tmp/build.log"; echo "FAIL: consumer build"; exit 1; }
"$tmp/build/consumer"
echo "1 passed, 0 failed"
