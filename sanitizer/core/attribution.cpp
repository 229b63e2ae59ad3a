#include "attribution.h"

#include <cctype>
#include <string_view>

namespace nosync::san {

std::string basename_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Shared objects whose frames are never the user's. Matched on the basename's
// prefix so versioned names (libcudart.so.13) match too.
constexpr std::string_view kObserverModules[] = {"libnosync_sanitizer", "libcupti", "libcuda.so"};
constexpr std::string_view kRuntimeModules[] = {
    "libtorch", "libc10", "libcudart", "libcublas", "libcudnn", "libcusparse", "libcusolver", "libcufft",
    "libcurand", "libnccl", "libnvrtc", "libnvJitLink", "libstdc++", "libgcc_s", "libc.so", "libc-",
    "libpthread", "libm.so", "ld-linux", "libgomp", "libshm", "libtorch_python", "libnvToolsExt"};

// Function-name prefixes of library code that can be inlined into the user's
// binary (LibTorch's header-only API, the standard library).
constexpr std::string_view kRuntimeNamespaces[] = {"at::", "c10::", "torch::", "caffe2::", "std::", "__gnu_cxx::",
                                                    "void std::", "pybind11::", "_Py", "Py", "__libc_", "_start",
                                                    "__cxa_", "_Unwind_"};

// Header directories of those libraries, for inlined frames whose function is
// a user-visible template (e.g. at::Tensor::item<float> instantiated in place).
constexpr std::string_view kRuntimeSourceDirs[] = {"/torch/include/", "/include/ATen/", "/include/c10/",
                                                   "/include/torch/", "/include/c++/", "/aten/src/",
                                                   "/c10/", "/torch/csrc/"};

}  // namespace

bool is_interpreter_frame(const Frame& f) {
  const std::string base = basename_of(f.module);
  return starts_with(base, "python") || starts_with(base, "libpython");
}

bool is_observer_frame(const Frame& f) {
  const std::string base = basename_of(f.module);
  for (std::string_view m : kObserverModules)
    if (starts_with(base, m)) return true;
  return false;
}

bool is_python_library_file(const std::string& file) {
  if (starts_with(file, "<frozen ")) return true;
  if (contains(file, "/site-packages/") || contains(file, "/dist-packages/")) return true;
  // The standard library: <prefix>/lib/python3.11/runpy.py (a venv's own
  // lib/python3.11/ holds only site-packages, matched above).
  std::size_t at = file.find("/lib/python");
  if (at != std::string::npos) {
    std::size_t i = at + 11;
    while (i < file.size() && (std::isdigit(static_cast<unsigned char>(file[i])) || file[i] == '.')) ++i;
    if (i > at + 11 && i < file.size() && (file[i] == '/' || file[i] == 't')) return true;  // python3.13t: free-threaded
  }
  return false;
}

bool is_runtime_frame(const Frame& f) {
  // Python frames (module "<python>", spliced in by python_frames.cpp): a
  // library file or not; their function names ("PyTorchStep") must not be
  // matched against the C API prefixes below.
  if (f.module == "<python>") return is_python_library_file(f.file);
  if (is_observer_frame(f)) return true;
  const std::string base = basename_of(f.module);
  for (std::string_view m : kRuntimeModules)
    if (starts_with(base, m)) return true;
  if (is_interpreter_frame(f)) return true;
  // Return-type prefixes ("float at::Tensor::item<float>() const") are skipped
  // by looking at the qualified name after the last space before '('.
  std::string_view fn = f.function;
  std::size_t paren = fn.find('(');
  std::string_view head = fn.substr(0, paren);
  std::size_t space = head.rfind(' ');
  std::string_view qualified = space == std::string_view::npos ? fn : fn.substr(space + 1);
  for (std::string_view ns : kRuntimeNamespaces)
    if (starts_with(qualified, ns) || starts_with(fn, ns)) return true;
  for (std::string_view dir : kRuntimeSourceDirs)
    if (contains(f.file, dir)) return true;
  return false;
}

std::size_t first_user_frame(const std::vector<Frame>& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i)
    if (!is_runtime_frame(frames[i]) && (!frames[i].function.empty() || !frames[i].file.empty() ||
                                         !frames[i].module.empty()))
      return i;
  return frames.size();
}

std::size_t first_printed_frame(const std::vector<Frame>& frames) {
  std::size_t i = 0;
  while (i < frames.size() && is_observer_frame(frames[i])) ++i;
  return i == frames.size() ? 0 : i;
}

}  // namespace nosync::san
