// Remembers each translation unit's diagnostics so that a rerun on unchanged
// input (a pre-commit hook on a branch) does not parse it again.
//
// An entry is keyed by a hash of everything that can change the result: the
// main file's content, the compile command, the nosync-lint and Clang
// versions and binary (a rebuild with changed checks), the config file content
// and the --checks override. It also lists the user headers the file included
// (from a -MMD dependency file written during the parse) with their content
// hashes; an entry whose header changed is a miss. Headers that came from a
// preamble are listed too (the dependency file does not show them). System
// and -isystem headers (LibTorch, CUDA) are not tracked: they change only
// with the compile command's include paths or an upgrade.
#pragma once

#include "InputPlan.h"
#include "TranslationUnit.h"

#include <optional>
#include <string>

namespace nosync::lint {

class ResultCache {
 public:
  // toolIdentity: changes whenever the binary does (see binaryIdentity), so a
  // rebuilt nosync-lint with changed checks never reuses old results.
  // preambles: parse misses with them (nullptr: parse whole files).
  ResultCache(std::string dir, std::string toolIdentity, PreambleCache* preambles = nullptr)
      : dir_(std::move(dir)), toolIdentity_(std::move(toolIdentity)), preambles_(preambles) {}

  // Path, size and modification time of the running executable.
  static std::string binaryIdentity(const char* argv0);

  struct Entry {
    std::vector<clang::tidy::ClangTidyError> errors;
    std::vector<ExportedCall> calls;
    bool namesCuda = true;
    bool hasMain = false;
    bool trains = false;
  };
  // The cached diagnostics and call graph for this job, or nullopt on a miss.
  std::optional<Entry> lookup(const LintJob& job, const CommandLineOverrides& overrides);

  // Lints the job (writing the dependency file the entry needs) and stores it.
  TuResult lintAndStore(const LintJob& job, const CommandLineOverrides& overrides);

  const std::string& dir() const { return dir_; }

 private:
  std::string keyFor(const LintJob& job, const CommandLineOverrides& overrides) const;
  std::string entryPath(const std::string& key) const;

  std::string dir_;
  std::string toolIdentity_;
  PreambleCache* preambles_;
};

}  // namespace nosync::lint
