// Linting one translation unit through clang-tidy's library, and the result
// the writers and the cache share.
#pragma once

#include "ConfigFile.h"
#include "PreambleCache.h"
#include "TidyOptions.h"

#include "utils/CallGraph.h"

#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang/Tooling/CompilationDatabase.h"

#include <optional>
#include <string>
#include <vector>

namespace nosync::lint {

// One call of the unit's user code, keyed by function signature (see
// functionKey in lint/checks/utils/SyncContext.h) and placed as "file:line".
using ExportedCall = clang::tidy::nosync::CallEdge<std::string, std::string>;

struct TuResult {
  std::string file;  // absolute
  const LintConfig* config = nullptr;
  CommandLineOverrides overrides;
  // Every diagnostic clang-tidy kept (NOLINT and the header filter already
  // applied); each check reported at its configured severity.
  std::vector<clang::tidy::ClangTidyError> errors;
  // Its call graph, for the project-wide context (ProjectContext.h); empty
  // when nosync-lint was built without the checks.
  std::vector<ExportedCall> calls;
  // Whether its user code names a CUDA device (true when unknown: built
  // without the checks) and whether it defines main(): a run that holds
  // main() and no unit of which names CUDA is a CPU program.
  bool namesCuda = true;
  bool hasMain = false;
  // Whether something in it trains (backward(), an optimizer step): a loop
  // that does not, called once in a run where something does, is an
  // evaluation pass.
  bool trains = false;
  bool fromCache = false;
  double seconds = 0;
  // How the leading include block was parsed: from a preamble (built in this
  // run or reused), or with the file (no preamble cache, or none usable).
  enum class Preamble { None, Built, Reused } preamble = Preamble::None;
  // The project headers the preamble held, which the file's own dependency
  // list does not show (they were not parsed in it).
  std::vector<std::string> preambleHeaders;

  bool parseFailed() const;
  // How many compiler errors the translation unit had (0: it parsed cleanly).
  unsigned compilerErrors() const;
};

// Parses and checks one file. NOLINT handling, the header filter and check
// selection are clang-tidy's; we add the per-rule severity overrides and keep
// the matchers out of library headers (UserCodeScope). With `preambles`, the
// file's leading include block comes from a precompiled preamble when one can
// be built (the findings are the same).
TuResult lintTranslationUnit(const std::string& absFile, const clang::tooling::CompilationDatabase& db,
                             const LintConfig& config, const CommandLineOverrides& overrides,
                             PreambleCache* preambles = nullptr);

// Builds (when missing or stale) the preamble lintTranslationUnit would use
// for the file, and lints nothing.
void buildPreamble(const std::string& absFile, const clang::tooling::CompilationDatabase& db,
                   const LintConfig& config, const CommandLineOverrides& overrides, PreambleCache& preambles);

// A rule configured as `error` (its check's Severity option) is reported by
// the check as a warning, after NOLINT; this raises those warnings to errors.
// Findings a check lowered for their context (remarks) stay low.
void raiseConfiguredErrors(const LintConfig& config, std::vector<clang::tidy::ClangTidyError>& errors);

// The enabled check names for one file's options (empty: nothing would run).
std::vector<std::string> enabledChecks(const LintConfig& config, llvm::StringRef absFile,
                                       const CommandLineOverrides& overrides);

// The first --checks glob that matches no known check (a typo of a rule id),
// or nullopt when every glob matches something.
std::optional<std::string> unknownCheckGlob(llvm::StringRef globs);

}  // namespace nosync::lint
