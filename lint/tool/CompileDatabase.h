// Where each file's compile flags come from: `--` arguments, -p, or a
// compile_commands.json discovered above the file.
#pragma once

#include "ConfigFile.h"

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace nosync::lint {

// Header and template-implementation file names (.h, .hpp, .cuh, .tpp, ...).
bool isHeaderFile(llvm::StringRef file);

// Hands out one compilation database per input file and keeps the loaded
// databases alive for the whole run (several files usually share one).
class CompileDatabases {
 public:
  // `--` arguments win over -p, as in clang-tidy; an empty buildPath means
  // "discover per file".
  CompileDatabases(std::vector<std::string> fixedArgs, bool haveFixedArgs, std::string buildPath);

  // The database to use for `absFile`, or an error whose message is one line.
  // `config` supplies the last resort: its CompileFlags, when no database is
  // found.
  llvm::Expected<const clang::tooling::CompilationDatabase*> forFile(llvm::StringRef absFile,
                                                                     const LintConfig& config);

  // Keeps a database made for one file (a wrapper around one of ours) alive
  // for the run.
  const clang::tooling::CompilationDatabase* adopt(std::unique_ptr<clang::tooling::CompilationDatabase> db);

  // Flags the file will be compiled with (after our adjustments): part of the
  // cache key.
  static std::vector<std::string> commandFor(const clang::tooling::CompilationDatabase& db,
                                             llvm::StringRef absFile);

 private:
  llvm::Expected<const clang::tooling::CompilationDatabase*> load(llvm::StringRef dir);
  std::string discover(llvm::StringRef absFile);

  std::unique_ptr<clang::tooling::CompilationDatabase> fixed_;
  std::string buildPath_;
  llvm::StringMap<std::unique_ptr<clang::tooling::CompilationDatabase>> byDir_;
  llvm::StringMap<std::unique_ptr<clang::tooling::CompilationDatabase>> byConfig_;
  std::vector<std::unique_ptr<clang::tooling::CompilationDatabase>> adopted_;
};

}  // namespace nosync::lint
