// Resolving every input file to its compile flags and config before any
// parsing starts, so bad input fails fast with one line per problem.
#pragma once

#include "CompileDatabase.h"
#include "ConfigFile.h"

#include <string>
#include <vector>

namespace nosync::lint {

struct LintJob {
  std::string file;  // absolute
  const clang::tooling::CompilationDatabase* db = nullptr;
  const LintConfig* config = nullptr;
  // "file:line" of the #include this header is parsed through, when it
  // cannot be parsed alone (HeaderContext.h); "" otherwise.
  std::string includer;
};

// True for the file name extensions nosync-lint parses as C++ (or CUDA).
bool isCxxSource(llvm::StringRef file);

// One job per input, or the problems found (one line each, without prefix).
std::vector<LintJob> planJobs(const std::vector<std::string>& files, CompileDatabases& dbs,
                              ConfigDiscovery& configs, std::vector<std::string>& problems);

}  // namespace nosync::lint
