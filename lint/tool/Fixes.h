// --fix and --export-fixes.
#pragma once

#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace nosync::lint {

struct FixSummary {
  unsigned applied = 0;    // findings whose fix went in
  unsigned conflicts = 0;  // findings skipped because their edits overlap an earlier one
  unsigned files = 0;      // files rewritten
};

// Applies the fix-its attached to the findings themselves. Fixes attached to
// notes (the ones that change timing or semantics) are never applied. Each
// finding's edits go in all together or not at all; an identical edit reached
// through two translation units (a shared header) is applied once; two
// findings inserting at one point (two declarations before one loop) both go
// in, in finding order. `#include <nosync/kernels.h>` is an edit of its file:
// added once if any applied fix of the file calls nosync::kernels, whichever
// finding carried it.
llvm::Expected<FixSummary> applyFixes(const std::vector<clang::tidy::ClangTidyError>& findings);

// Writes clang-apply-replacements YAML (clang-tidy's --export-fixes format)
// for every finding of the run.
llvm::Error exportFixes(const std::string& yamlPath, const std::string& mainFile,
                        const std::vector<clang::tidy::ClangTidyError>& findings);

}  // namespace nosync::lint
