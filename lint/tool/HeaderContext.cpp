#include "HeaderContext.h"

#include "CompileDatabase.h"
#include "ProjectScan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/raw_ostream.h"

namespace nosync::lint {
namespace {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

// How far into a header the "include X instead" guard is looked for.
constexpr unsigned kGuardLines = 40;

// `#  include "a/b.h"` or `#include <a/b.h>`: the name, or "".
llvm::StringRef includedName(llvm::StringRef line) {
  static const llvm::Regex include("^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">]");
  llvm::SmallVector<llvm::StringRef, 2> m;
  if (!include.match(line, &m)) return {};
  return m[1];
}

// The directive's name (`if`, `ifndef`, `endif`, `error`, ...) or "".
llvm::StringRef directiveOf(llvm::StringRef line) {
  line = line.ltrim();
  if (!line.consume_front("#")) return {};
  line = line.ltrim();
  return line.take_while([](char c) { return llvm::isAlnum(c) || c == '_'; });
}

// `#if`, `#ifdef`, `#ifndef`: a directive that opens a conditional.
bool opensConditional(llvm::StringRef directive) {
  return directive == "if" || directive == "ifdef" || directive == "ifndef";
}

std::string realPathOf(llvm::StringRef file) {
  llvm::SmallString<256> real;
  if (fs::real_path(file, real)) return file.str();
  return std::string(real);
}

// Whether `name` (as written in an #include) ends the header's path at a
// directory boundary: "Trainer.tpp", "include/Trainer.tpp".
bool isTailOf(llvm::StringRef name, llvm::StringRef header) {
  llvm::SmallString<256> n(name);
  path::remove_dots(n, /*remove_dot_dot=*/true);
  llvm::StringRef tail = n;
  if (!header.ends_with(tail)) return false;
  return header.size() == tail.size() || path::is_separator(header[header.size() - tail.size() - 1]);
}

// `#include <torch/torch.h>`, `<ATen/ATen.h>`, `<c10/...>`: LibTorch itself.
bool namesLibTorch(llvm::StringRef included) {
  return included.starts_with("torch/") || included.starts_with("ATen/") || included.starts_with("c10/");
}

// Whether `code` (a header's, comments blanked) may include LibTorch, itself
// or through the project headers it includes, `depth` levels down. A quoted
// include that does not resolve beside the file comes through an include path
// this test does not know: it may, so the answer is yes.
bool mayReachLibTorch(llvm::StringRef file, llvm::StringRef code, unsigned depth) {
  static const llvm::Regex quoted("^[ \t]*#[ \t]*include[ \t]*\"");
  llvm::SmallVector<llvm::StringRef, 256> lines;
  code.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    llvm::StringRef name = includedName(line);
    if (name.empty()) continue;
    if (namesLibTorch(name)) return true;
    if (!quoted.match(line)) continue;  // <vector>, <opencv2/...>: not the project's
    llvm::SmallString<256> near(path::parent_path(file));
    path::append(near, name);
    auto text = llvm::MemoryBuffer::getFile(near);
    if (!text || depth == 0) return true;
    if (mayReachLibTorch(near, codeWithoutComments((*text)->getBuffer()), depth - 1)) return true;
  }
  return false;
}

}  // namespace

bool needsIncluder(llvm::StringRef header, llvm::StringRef text) {
  if (!isHeaderFile(header)) return false;
  std::string ext = path::extension(header).lower();
  if (ext == ".tpp" || ext == ".ipp" || ext == ".inl") return true;
  std::string code = codeWithoutComments(text);
  llvm::SmallVector<llvm::StringRef, 64> lines;
  llvm::StringRef(code).split(lines, '\n', kGuardLines);
  // The conditions open at each line; an #error under one that tests the
  // compiler (`#if __cplusplus < 201703L`, `#ifndef __CUDACC__`) asks for a
  // compiler, not for an includer.
  llvm::SmallVector<llvm::StringRef, 4> open;
  for (size_t i = 0; i < lines.size() && i < kGuardLines; ++i) {
    llvm::StringRef d = directiveOf(lines[i]);
    if (opensConditional(d)) open.push_back(lines[i]);
    else if (d == "endif" && !open.empty()) open.pop_back();
    else if (d == "error" && !open.empty() && !open.back().contains("__")) return true;
  }
  // A header that writes LibTorch but does not include it, itself or through
  // its own headers, leans on its includer to have done so (cpp_torch.h
  // includes <torch/torch.h>, then "libtorch_utils.h"): alone, every torch
  // name in it is undeclared and its training loops give nothing.
  bool writesTorch = llvm::StringRef(code).contains("torch::") || llvm::StringRef(code).contains("at::Tensor");
  return writesTorch && !mayReachLibTorch(header, code, /*depth=*/3);
}

std::optional<Includer> findIncluder(llvm::StringRef header, llvm::StringRef root) {
  std::string target = realPathOf(header);
  std::optional<Includer> beside, byTail;
  // The directory walk's order is the file system's: keep the first path.
  auto keep = [](std::optional<Includer>& slot, Includer found) {
    if (!slot || found.file < slot->file) slot = std::move(found);
  };
  forEachProjectSource(root, [&](llvm::StringRef file, llvm::StringRef text) {
    std::string real = realPathOf(file);
    if (real == target) return;
    std::string code = codeWithoutComments(text);
    llvm::SmallVector<llvm::StringRef, 256> lines;
    llvm::StringRef(code).split(lines, '\n');
    for (size_t i = 0; i < lines.size(); ++i) {
      llvm::StringRef name = includedName(lines[i]);
      if (name.empty() || path::filename(name) != path::filename(header)) continue;
      llvm::SmallString<256> near(path::parent_path(file));
      path::append(near, name);
      Includer found{real, static_cast<unsigned>(i + 1)};
      if (fs::exists(near) && realPathOf(near) == target) {
        keep(beside, std::move(found));
        return;
      }
      if (isTailOf(name, target)) keep(byTail, std::move(found));
    }
  });
  return beside ? beside : byTail;
}

llvm::Expected<std::string> writeIncluderPrefix(const Includer& includer, llvm::StringRef header) {
  auto buf = llvm::MemoryBuffer::getFile(includer.file);
  if (!buf) return llvm::createStringError("cannot read " + includer.file);
  // Comments blanked: a `/*` left open by the cut cannot swallow what follows.
  std::string code = codeWithoutComments((*buf)->getBuffer());
  llvm::SmallVector<llvm::StringRef, 256> lines;
  llvm::StringRef(code).split(lines, '\n');
  std::string prefix = "#line 1 \"" + llvm::StringRef(includer.file).str() + "\"\n";
  unsigned open = 0;
  for (unsigned i = 0; i + 1 < includer.line && i < lines.size(); ++i) {
    llvm::StringRef d = directiveOf(lines[i]);
    if (opensConditional(d)) ++open;
    else if (d == "endif" && open) --open;
    prefix += lines[i].str() + "\n";
  }
  // An -include'd file must close what it opens; the macros it defined
  // (the includer's guard) stay defined.
  for (; open; --open) prefix += "#endif\n";

  llvm::SHA1 h;
  h.update(includer.file);
  h.update(std::to_string(includer.line));
  h.update(header);
  llvm::SmallString<256> dir;
  path::system_temp_directory(/*ErasedOnReboot=*/true, dir);
  path::append(dir, "nosync-lint-includers");
  if (std::error_code ec = fs::create_directories(dir))
    return llvm::createStringError("cannot create " + dir.str().str() + ": " + ec.message());
  llvm::SmallString<256> file(dir);
  path::append(file, llvm::toHex(h.final()).substr(0, 16) + "-" + path::filename(includer.file).str());
  // Write then rename: parallel runs may write the same prefix.
  std::string tmp = file.str().str() + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(tmp, ec);
    if (ec) return llvm::createStringError("cannot write " + tmp + ": " + ec.message());
    out << prefix;
  }
  if (std::error_code ec = fs::rename(tmp, file)) {
    fs::remove(tmp);
    return llvm::createStringError("cannot write " + file.str().str() + ": " + ec.message());
  }
  return std::string(file);
}

namespace {

class IncluderPrefixCompilations : public clang::tooling::CompilationDatabase {
 public:
  IncluderPrefixCompilations(const CompilationDatabase& base, std::string prefix, std::string includerDir)
      : base_(base), prefix_(std::move(prefix)), includerDir_(std::move(includerDir)) {}
  std::vector<clang::tooling::CompileCommand> getCompileCommands(llvm::StringRef file) const override {
    auto cmds = base_.getCompileCommands(file);
    for (auto& c : cmds) {
      // Right after the compiler's name: these are no inputs, so a later -x does not apply to them.
      auto at = c.CommandLine.empty() ? c.CommandLine.end() : c.CommandLine.begin() + 1;
      c.CommandLine.insert(at, {"-iquote", includerDir_, "-include", prefix_});
    }
    return cmds;
  }
  std::vector<std::string> getAllFiles() const override { return base_.getAllFiles(); }

 private:
  const CompilationDatabase& base_;
  std::string prefix_;
  std::string includerDir_;
};

}  // namespace

std::unique_ptr<clang::tooling::CompilationDatabase> withIncluderPrefix(
    const clang::tooling::CompilationDatabase& base, std::string prefix, std::string includerDir) {
  return std::make_unique<IncluderPrefixCompilations>(base, std::move(prefix), std::move(includerDir));
}

}  // namespace nosync::lint
