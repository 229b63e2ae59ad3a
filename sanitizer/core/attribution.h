// Which frames belong to the user: the first frame outside the sanitizer,
// CUPTI, the CUDA driver/runtime, LibTorch (at/c10/torch/caffe2), the C++
// runtime and libc is the one a report points at.
#pragma once

#include <cstddef>
#include <vector>

#include "frames.h"

namespace nosync::san {

// True for frames that belong to a runtime library rather than to user code.
bool is_runtime_frame(const Frame& f);

// True for frames of the Python interpreter (python3.x, libpython): where a
// Python program's own code sits on a native stack.
bool is_interpreter_frame(const Frame& f);

// True for a Python source file that belongs to a library rather than to the
// program: anything under site-packages/dist-packages (torch, numpy, nosync
// itself once installed), the standard library (lib/pythonX.Y/) and frozen
// modules. A Python program's user frame is the innermost .py frame outside
// these (tests: "<string>" from python -c counts as the user's).
bool is_python_library_file(const std::string& file);

// True for frames of the machinery that observed the call (sanitizer, CUPTI,
// libcuda): they are dropped from printed stacks.
bool is_observer_frame(const Frame& f);

// Index of the first user frame (innermost first), or frames.size() if none.
std::size_t first_user_frame(const std::vector<Frame>& frames);

// Index of the first frame a report prints: observer frames on top are skipped.
std::size_t first_printed_frame(const std::vector<Frame>& frames);

// "libtorch_cuda.so" from "/x/y/libtorch_cuda.so".
std::string basename_of(const std::string& path);

}  // namespace nosync::san
