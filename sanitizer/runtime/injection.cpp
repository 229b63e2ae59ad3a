// Entry point for CUDA_INJECTION64_PATH: when the variable names this
// library, the CUDA driver loads it during cuInit and calls
// InitializeInjection, so C++ and Python programs are checked with no
// rebuild. Must be exported with default visibility (the library is built
// with hidden visibility), else the driver silently skips it.
#include "runtime.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  nosync::san::runtime_start("CUDA_INJECTION64_PATH");
  // 1 = handled. A failure to subscribe was already reported as one warning;
  // returning success keeps the driver from printing its own.
  return 1;
}
