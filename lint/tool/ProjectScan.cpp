#include "ProjectScan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace nosync::lint {
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {

constexpr unsigned kMaxFiles = 5000;
constexpr uint64_t kMaxBytes = 64ull << 20;
constexpr int kMaxLevels = 8;

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool holdsBuildFile(llvm::StringRef dir) {
  for (const char* name : {"CMakeLists.txt", "Makefile", "meson.build", "BUILD", "BUILD.bazel", "xmake.lua",
                           "premake5.lua", "SConstruct"}) {
    llvm::SmallString<256> p(dir);
    path::append(p, name);
    if (fs::exists(p)) return true;
  }
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    // Visual Studio solutions and projects, qmake projects.
    llvm::StringRef ext = path::extension(it->path());
    if (ext == ".sln" || ext == ".vcxproj" || ext == ".pro") return true;
  }
  return false;
}

bool isSource(llvm::StringRef file) {
  static const llvm::StringSet<> exts = {".c",   ".cc",  ".cpp", ".cxx", ".c++", ".cu",  ".cuh",
                                         ".h",   ".hh",  ".hpp", ".hxx", ".ipp", ".inl", ".tpp"};
  return exts.contains(path::extension(file).lower());
}

// Vendored libraries and build output say nothing about where the project's
// own tensors live.
bool isSkippedDir(llvm::StringRef name) {
  static const llvm::StringSet<> skipped = {".git",     "third_party", "third-party", "thirdparty", "3rdparty",
                                            "external", "extern",      "vendor",      "deps",       "node_modules",
                                            "out",      ".cache"};
  std::string lower = name.lower();
  return skipped.contains(lower) || llvm::StringRef(lower).starts_with("build") ||
         llvm::StringRef(lower).starts_with("cmake-build") || llvm::StringRef(lower).starts_with(".") ||
         lower == "venv" || lower == "site-packages";
}

// Test sources: their calls are test code, the lowest context there is, and a
// test suite's fixtures reuse the names of the code under test for programs
// of their own. Their text calls are not read (their main() and CUDA still
// count).
bool isTestPath(llvm::StringRef relative) {
  for (auto it = path::begin(relative), end = path::end(relative); it != end; ++it) {
    std::string lower = it->lower();
    if (lower == "test" || lower == "tests" || lower == "testing" || lower == "unittests") return true;
  }
  return false;
}

// `Device device(argv[1])`, `torch::Device(cfg.device)`: a device chosen at
// run time. The argument's first token is all we look at: a CPU constant or
// a string literal ("cpu"; "cuda" is caught as a word) is not.
bool buildsDeviceAtRunTime(llvm::StringRef text) {
  static const char* const cpuConstants[] = {"torch::kCPU", "at::kCPU", "c10::kCPU", "kCPU",
                                             "torch::DeviceType::CPU", "at::DeviceType::CPU",
                                             "c10::DeviceType::CPU", "DeviceType::CPU"};
  for (size_t at = text.find("Device"); at != llvm::StringRef::npos; at = text.find("Device", at + 1)) {
    size_t end = at + 6;
    if ((at > 0 && isIdentChar(text[at - 1])) || (end < text.size() && isIdentChar(text[end]))) continue;
    llvm::StringRef rest = text.drop_front(end).ltrim();
    // An optional variable name: `Device device(...)`.
    size_t name = 0;
    while (name < rest.size() && isIdentChar(rest[name])) ++name;
    rest = rest.drop_front(name).ltrim();
    if (rest.empty() || (rest.front() != '(' && rest.front() != '{')) continue;
    llvm::StringRef arg = rest.drop_front().ltrim();
    if (arg.empty() || arg.front() == ')' || arg.front() == '}' || arg.front() == '"') continue;
    bool cpu = llvm::any_of(cpuConstants, [&](const char* c) {
      return arg.starts_with(c) && (arg.size() == strlen(c) || !isIdentChar(arg[strlen(c)]));
    });
    if (!cpu) return true;
  }
  return false;
}

// Whether `name` stands somewhere as a whole identifier followed by `(` with
// a text before it that `visit` accepts.
template <typename Visit>
bool anyCallOfName(llvm::StringRef text, llvm::StringRef name, Visit visit) {
  for (size_t at = text.find(name); at != llvm::StringRef::npos; at = text.find(name, at + 1)) {
    size_t end = at + name.size();
    if ((at > 0 && (isIdentChar(text[at - 1]) || text[at - 1] == ':' || text[at - 1] == '.')) ||
        (end < text.size() && isIdentChar(text[end])))
      continue;
    if (text.drop_front(end).ltrim().starts_with("(") && visit(text.take_front(at).rtrim())) return true;
  }
  return false;
}

// A program's entry point, in a source with its comments blanked:
// `int main(`, `auto main() -> int`, `int WINAPI WinMain(`, `int wmain(`, or
// a GUI framework's macro that defines main() (`wxIMPLEMENT_APP(App)`).
bool codeDefinesMain(llvm::StringRef text) {
  auto returnsInt = [](llvm::StringRef before) {
    return before.ends_with("int") || before.ends_with("auto") || before.ends_with("WINAPI") ||
           before.ends_with("APIENTRY") || before.ends_with("CALLBACK");
  };
  for (llvm::StringRef entry : {"main", "wmain", "_tmain", "WinMain", "wWinMain"})
    if (anyCallOfName(text, entry, returnsInt)) return true;
  for (llvm::StringRef macro : {"wxIMPLEMENT_APP", "IMPLEMENT_APP", "wxIMPLEMENT_APP_CONSOLE", "IMPLEMENT_APP_CONSOLE"})
    if (anyCallOfName(text, macro, [](llvm::StringRef) { return true; })) return true;
  return false;
}

bool codeMayUseCuda(llvm::StringRef code) {
  return code.contains_insensitive("cuda") || buildsDeviceAtRunTime(code);
}

}  // namespace

// The code of a source, comments blanked ("add CUDA support later" says
// nothing about the program); string and character literals are kept.
std::string codeWithoutComments(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < text.size() && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      out.append(text.data() + i, std::min(j + 1, text.size()) - i);
      i = j;
    } else if (text.substr(i).starts_with("//")) {
      while (i < text.size() && text[i] != '\n') ++i;
      out.push_back('\n');
    } else if (text.substr(i).starts_with("/*")) {
      size_t end = text.find("*/", i + 2);
      size_t last = end == llvm::StringRef::npos ? text.size() : end + 2;
      // Its newlines stay, so that text calls are named by their own lines.
      out.push_back(' ');
      out.append(text.slice(i, last).count('\n'), '\n');
      i = last - 1;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool textDefinesMain(llvm::StringRef text) { return codeDefinesMain(codeWithoutComments(text)); }

bool textMayUseCuda(llvm::StringRef text) { return codeMayUseCuda(codeWithoutComments(text)); }

std::string projectRootOf(llvm::StringRef file) {
  llvm::SmallString<256> dir(file);
  fs::make_absolute(dir);
  path::remove_dots(dir, /*remove_dot_dot=*/true);
  path::remove_filename(dir);
  std::string topmostBuild;
  for (int level = 0; level < kMaxLevels && !dir.empty(); ++level) {
    llvm::SmallString<256> git(dir);
    path::append(git, ".git");
    if (fs::exists(git)) return std::string(dir);
    if (holdsBuildFile(dir)) topmostBuild = std::string(dir);
    llvm::StringRef parent = path::parent_path(dir);
    if (parent == dir) break;
    dir = parent;
  }
  return topmostBuild;
}

ProjectSources scanProject(llvm::ArrayRef<std::string> files) {
  ProjectSources out;
  for (const std::string& f : files) {
    std::string root = projectRootOf(f);
    if (root.empty() || (!out.root.empty() && root != out.root)) return ProjectSources{};
    out.root = root;
  }
  if (out.root.empty()) return out;
  out.mayUseCuda = false;
  llvm::StringSet<> inRun;
  // A run of test sources only: the project's own code never calls into its
  // tests (and their text is not read), so no text call can reach the run.
  bool runIsTests = true;
  for (const std::string& f : files) {
    llvm::SmallString<256> real;
    if (!fs::real_path(f, real)) inRun.insert(real);
    llvm::SmallString<256> rel(f);
    fs::make_absolute(rel);
    path::remove_dots(rel, /*remove_dot_dot=*/true);
    path::replace_path_prefix(rel, out.root + path::get_separator().str(), "");
    runIsTests = runIsTests && isTestPath(path::parent_path(rel));
  }
  out.complete = forEachProjectSource(out.root, [&](llvm::StringRef p, llvm::StringRef text) {
    ++out.files;
    std::string code = codeWithoutComments(text);
    out.definesMain = out.definesMain || codeDefinesMain(code);
    out.mayUseCuda = out.mayUseCuda || codeMayUseCuda(code);
    llvm::SmallString<256> real;
    llvm::SmallString<256> rel(p);
    path::replace_path_prefix(rel, out.root + path::get_separator().str(), "");
    collectTextTypes(code, rel, out.types);
    if (!runIsTests && !fs::real_path(p, real) && !inRun.contains(real) && !isTestPath(path::parent_path(rel)))
      collectTextCalls(code, rel, out.textCalls);
  });
  return out;
}

bool forEachProjectSource(llvm::StringRef root,
                          llvm::function_ref<void(llvm::StringRef file, llvm::StringRef text)> visit) {
  unsigned files = 0;
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec, /*follow_symlinks=*/false), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef p = it->path();
    if (fs::is_directory(p)) {
      if (isSkippedDir(path::filename(p))) it.no_push();
      continue;
    }
    if (!isSource(p)) continue;
    auto buf = llvm::MemoryBuffer::getFile(p);
    if (!buf) continue;
    bytes += (*buf)->getBufferSize();
    if (++files > kMaxFiles || bytes > kMaxBytes) return false;  // not complete
    visit(p, (*buf)->getBuffer());
  }
  return !ec;
}

}  // namespace nosync::lint
