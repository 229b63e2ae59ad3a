// The tool's own view of one diagnostic, independent of clang-tidy types, for
// the machine-readable writers (JSON, SARIF).
#pragma once

#include "nosync/rules.h"

#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace nosync::lint {

struct Edit {
  std::string file;  // absolute
  unsigned offset = 0, length = 0;
  std::string replacement;
};

struct Location {
  std::string file;  // absolute
  unsigned line = 0, column = 0;  // 1-based; 0 when the diagnostic has no location
};

struct FindingNote {
  Location where;
  std::string message;
};

struct Finding {
  Location where;
  std::string rule;  // check name; "clang-diagnostic-error" for compiler errors
  rules::Severity severity = rules::Severity::Warning;
  std::string message;
  std::vector<Edit> fixes;
  std::vector<FindingNote> notes;
  // What decided the severity (the loop, the caller, the throttle, ...), from
  // the check's "nosync-context:" note; empty for compiler errors.
  std::string context;
};

// The prefix of the note a check adds, with ExplainContext on, to say what
// decided a finding's severity. Writers move it into `context`.
inline constexpr llvm::StringLiteral kContextNotePrefix = "nosync-context: ";
bool isContextNote(const clang::tooling::DiagnosticMessage& note);

// Maps byte offsets to line/column, reading each file once.
class LineIndex {
 public:
  Location locate(const std::string& absFile, unsigned offset);

 private:
  llvm::StringMap<std::vector<unsigned>> lineStarts_;
};

// Absolute, dot-free form of a diagnostic path (clang-tidy keeps them as the
// compiler opened them, often relative to the build directory).
std::string absolutePath(llvm::StringRef path, llvm::StringRef buildDir);

// Severity in nosync terms: Remark is nosync's low-severity "note".
rules::Severity severityOf(clang::tooling::Diagnostic::Level level);

bool isCompilerError(const clang::tidy::ClangTidyError& e);

Finding toFinding(const clang::tidy::ClangTidyError& e, LineIndex& lines);

}  // namespace nosync::lint
