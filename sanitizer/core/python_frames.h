// Python frames of a blocking call. The runtime hands the core the calling
// thread's Python stack as CPython's faulthandler writes it (one
//   File "/path/train.py", line 42 in step
// line per frame, innermost first); the core parses it into Frames whose
// module is kPythonModule and splices them where the interpreter's native
// frames were, so the first user frame of a Python program is a .py line.
// Nothing here links or includes Python.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frames.h"

namespace nosync::san {

// Module name given to Python frames (no real module starts with '<').
inline constexpr std::string_view kPythonModule = "<python>";

inline bool is_python_frame(const Frame& f) { return f.module == kPythonModule; }

// Frames of a faulthandler dump, innermost first; lines that are not frames
// (the "Stack (most recent call first):" header, "<no Python frame>", "...")
// are skipped. A frame whose line is unknown ("???") gets line 0.
std::vector<Frame> parse_python_stack(std::string_view dump);

// `native` (innermost first) up to its first interpreter frame, then the
// Python frames. The native frames beyond that point are the interpreter's
// own (or Python-to-C calls further out) and are dropped: the Python frames
// say where the program was. When the native stack never reached the
// interpreter (truncated at stack_depth) the Python frames follow it.
std::vector<Frame> splice_python_frames(std::vector<Frame> native, std::vector<Frame> python);

// For a call made by autograd's engine with no user frame (backward runs on
// the engine's threads, which have no Python frames): the generated backward
// node it ran in, e.g. "EmbeddingBackward0", or "" when none is on the stack.
std::string backward_node_of(const std::vector<Frame>& frames);

// "in backward of embedding (EmbeddingBackward0)": how a finding without a
// user frame names a sync that happened in backward.
std::string describe_backward(const std::string& node);

}  // namespace nosync::san
