#!/usr/bin/env bash
# Libraries that load into someone else's process (libnosync_kernels.so into
# Python, libnosync_sanitizer.so through CUDA_INJECTION64_PATH) must use that
# process's libstdc++.so.6. A private static copy has its own iostream and
# locale state: the first error message formatted through it crashed Python on
# the GPU machine, whose default compiler (/opt/gcc/bin/g++) links libstdc++
# statically.
#
#   libstdcxx_is_shared.sh <library.so>...
set -uo pipefail
status=0
for lib in "$@"; do
  needed=$(readelf -d "$lib" | grep NEEDED) || { echo "FAIL: cannot read $lib"; status=1; continue; }
  if grep -q 'libstdc++\.so' <<<"$needed"; then
    echo "ok: $lib needs libstdc++.so"
  else
    echo "FAIL: $lib does not need libstdc++.so: it carries a static copy (use a compiler that links it shared)"
    status=1
  fi
done
exit $status
