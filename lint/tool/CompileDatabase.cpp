#include "CompileDatabase.h"

#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <mutex>

namespace nosync::lint {
namespace {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
using clang::tooling::CompilationDatabase;

// A header given without a language is C to the driver ("-std=c++17 not
// allowed with 'C'"), but LibTorch code is C++ whatever its extension; an
// explicit -x (an interpolated database command carries one) is kept.
clang::tooling::ArgumentsAdjuster headersAreCxx() {
  return [](const clang::tooling::CommandLineArguments& args, llvm::StringRef file) {
    if (!isHeaderFile(file) || llvm::any_of(args, [](llvm::StringRef a) { return a.starts_with("-x"); }))
      return args;
    clang::tooling::CommandLineArguments out(args);
    // The header is the main file here; its #pragma once is not a mistake.
    out.insert(out.begin() + (out.empty() ? 0 : 1), {"-xc++", "-Wno-pragma-once-outside-header"});
    return out;
  };
}

// LibTorch 2.x headers need C++17: under a project's older -std (a CMake
// file written for LibTorch 1.x says c++14; one says c++11) nearly every
// Tensor call fails to resolve and the file's findings are lost with them.
// The standard is raised to C++17 (gnu++ stays gnu++), once said on stderr.
// Code valid as C++14 but not C++17 (`register`, dynamic exception
// specifications) then shows as a compiler error at its line.
clang::tooling::ArgumentsAdjuster atLeastCxx17() {
  return [](const clang::tooling::CommandLineArguments& args, llvm::StringRef file) {
    const llvm::Regex old("^(-std=|--std=|-std:)(c|gnu)[+][+](98|03|0x|11|1y|14)$");
    clang::tooling::CommandLineArguments out(args);
    for (std::string& a : out) {
      llvm::SmallVector<llvm::StringRef, 4> m;
      if (!old.match(a, &m)) continue;
      static std::once_flag said;
      std::string was = a;
      a = m[1].str() + m[2].str() + "++17";
      std::call_once(said, [&] {
        llvm::errs() << "nosync-lint: note: LibTorch 2.x needs C++17; parsing with " << a << " instead of the "
                     << "compile command's " << was << " (first: " << file << ")\n";
      });
    }
    return out;
  };
}

// ClangTool derives the builtin-header directory from the running binary's
// location, which is wrong for a build-tree or /usr/local nosync-lint; point
// it at the Clang installation we were built against instead.
// -fno-caret-diagnostics: the compiler's own printer is unused (findings are
// printed by clang-tidy's reporter), and without carets it also stops printing
// "N warnings generated." for warnings nobody sees.
// -ferror-limit=0: a file with errors (an unknown type from a missing include)
// is still matched to its end instead of stopping at clang's 20th error.
// -fno-spell-checking: with an include missing, typo correction guesses wrong
// and the guess costs more than the error: `void D::detect(cv::Mat img)` with
// `img` "corrected" to a torch function becomes a variable of type void with
// an initialiser, and the whole body of detect() is skipped as junk.
std::unique_ptr<CompilationDatabase> withResourceDir(std::unique_ptr<CompilationDatabase> db) {
  auto adjusting = std::make_unique<clang::tooling::ArgumentsAdjustingCompilations>(std::move(db));
  adjusting->appendArgumentsAdjuster(headersAreCxx());
  adjusting->appendArgumentsAdjuster(atLeastCxx17());
  adjusting->appendArgumentsAdjuster(clang::tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" NOSYNC_CLANG_RESOURCE_DIR, "-fno-caret-diagnostics", "-ferror-limit=0",
       "-fno-spell-checking"},
      clang::tooling::ArgumentInsertPosition::END));
  return adjusting;
}

bool hasDatabase(llvm::StringRef dir) {
  llvm::SmallString<256> p(dir);
  path::append(p, "compile_commands.json");
  return fs::exists(p);
}

// Build directories one level below `dir/build` (CMake presets: build/cpu),
// sorted so discovery is deterministic.
std::vector<std::string> presetBuildDirs(llvm::StringRef dir) {
  std::vector<std::string> out;
  llvm::SmallString<256> build(dir);
  path::append(build, "build");
  std::error_code ec;
  for (fs::directory_iterator it(build, ec), end; it != end && !ec; it.increment(ec))
    if (hasDatabase(it->path())) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

bool mentionsFile(const CompilationDatabase& db, llvm::StringRef absFile) {
  auto files = db.getAllFiles();
  return std::find(files.begin(), files.end(), absFile.str()) != files.end();
}

}  // namespace

bool isHeaderFile(llvm::StringRef file) {
  return llvm::StringSwitch<bool>(path::extension(file))
      .Cases(".h", ".hh", ".hpp", ".hxx", ".h++", ".cuh", ".inl", ".ipp", ".tpp", true)
      .Default(false);
}

CompileDatabases::CompileDatabases(std::vector<std::string> fixedArgs, bool haveFixedArgs,
                                   std::string buildPath)
    : buildPath_(std::move(buildPath)) {
  if (haveFixedArgs)
    fixed_ = withResourceDir(
        std::make_unique<clang::tooling::FixedCompilationDatabase>(".", std::move(fixedArgs)));
}

llvm::Expected<const CompilationDatabase*> CompileDatabases::load(llvm::StringRef dir) {
  auto it = byDir_.find(dir);
  if (it != byDir_.end()) return it->second.get();
  llvm::SmallString<256> file(dir);
  path::append(file, "compile_commands.json");
  if (!fs::exists(file))
    return llvm::createStringError("no compile_commands.json in '" + dir.str() + "'");
  std::string err;
  auto json = clang::tooling::JSONCompilationDatabase::loadFromFile(
      file, err, clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!json) {
    // The JSON parser's message is multi-line for syntax errors; keep the first.
    llvm::StringRef first = llvm::StringRef(err).split('\n').first;
    return llvm::createStringError("cannot read " + file.str().str() + ": " + first.str());
  }
  // Headers and new files have no entry of their own: borrow the flags of the
  // closest listed file, as clangd does.
  auto db = withResourceDir(clang::tooling::inferMissingCompileCommands(std::move(json)));
  const CompilationDatabase* raw = db.get();
  byDir_[dir] = std::move(db);
  return raw;
}

// Walks up from the file; in each directory tries ./, ./build and ./build/*.
// Among several preset build dirs, one that lists the file wins.
std::string CompileDatabases::discover(llvm::StringRef absFile) {
  for (llvm::StringRef dir = path::parent_path(absFile); !dir.empty(); dir = path::parent_path(dir)) {
    if (hasDatabase(dir)) return dir.str();
    llvm::SmallString<256> build(dir);
    path::append(build, "build");
    if (hasDatabase(build)) return build.str().str();
    auto presets = presetBuildDirs(dir);
    for (const auto& p : presets) {
      auto db = load(p);
      if (!db) {
        llvm::consumeError(db.takeError());
        continue;
      }
      if (mentionsFile(**db, absFile)) return p;
    }
    if (!presets.empty()) return presets.front();
  }
  return {};
}

llvm::Expected<const CompilationDatabase*> CompileDatabases::forFile(llvm::StringRef absFile,
                                                                     const LintConfig& config) {
  if (fixed_) return fixed_.get();
  if (!buildPath_.empty()) {
    llvm::SmallString<256> dir(buildPath_);
    fs::make_absolute(dir);
    if (!fs::is_directory(dir))
      return llvm::createStringError("-p: '" + buildPath_ + "' is not a directory");
    return load(dir);
  }
  std::string dir = discover(absFile);
  if (!dir.empty()) return load(dir);
  if (!config.compileFlags.empty()) {
    auto& db = byConfig_[config.source];
    if (!db)
      db = withResourceDir(std::make_unique<clang::tooling::FixedCompilationDatabase>(
          path::parent_path(config.source), config.compileFlags));
    return db.get();
  }
  return llvm::createStringError(
      "no compile_commands.json found for " + absFile.str() +
      " (searched its directory, the parents and their build/ subdirectories); pass -p <build dir>, "
      "compile flags after --, or CompileFlags in a .nosync.yaml");
}

const CompilationDatabase* CompileDatabases::adopt(std::unique_ptr<CompilationDatabase> db) {
  adopted_.push_back(std::move(db));
  return adopted_.back().get();
}

std::vector<std::string> CompileDatabases::commandFor(const CompilationDatabase& db, llvm::StringRef absFile) {
  std::vector<std::string> out;
  for (const auto& cmd : db.getCompileCommands(absFile)) {
    out.push_back(cmd.Directory);
    out.insert(out.end(), cmd.CommandLine.begin(), cmd.CommandLine.end());
  }
  return out;
}

}  // namespace nosync::lint
