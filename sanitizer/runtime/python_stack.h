// The calling thread's Python stack, for a CUDA call that blocked. Runs
// inside a CUPTI callback, so it must never wait for the GIL: the ATen
// bindings release it around dispatch, and the thread now holding it may be
// waiting for a lock this thread holds (torch's caching allocator, the CUDA
// host allocator; torch/csrc/profiler/python/combined_traceback.cpp describes
// that deadlock). So no Python C API that needs the GIL is called at all:
// CPython's faulthandler dumper (_Py_DumpTraceback, "signal safe": no GIL,
// no allocation) writes this thread's frames into a per-thread memfd. This
// thread is inside the callback, so its frames cannot change meanwhile.
//
// Nothing links Python: the entry points are looked up with dlsym when the
// sanitizer starts. A process without Python (a C++ program) finds none and
// every call here returns 0 at once.
#pragma once

#include <cstddef>

namespace nosync::san {

// Looks up the interpreter's entry points (idempotent). False when the
// process runs no Python or the interpreter lacks the dumper.
bool python_stack_init();

// True after a successful python_stack_init().
bool python_stack_available();

// Writes the calling thread's Python frames (faulthandler text, innermost
// first, header stripped) into `buf`; returns the length, 0 when the thread
// has no Python frames (autograd engine threads, C++ threads, interpreter
// not running or finalizing).
std::size_t capture_python_stack(char* buf, std::size_t cap);

// fork(): the child must not share the parent's memfd offsets.
void python_stack_after_fork_child();

}  // namespace nosync::san
