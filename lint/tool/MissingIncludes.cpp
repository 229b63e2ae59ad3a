#include "MissingIncludes.h"

#include "clang/Basic/Diagnostic.h"

namespace nosync::lint {

MissingIncludes::MissingIncludes(clang::Preprocessor& pp)
    : pp_(pp),
      diagId_(pp.getDiagnostics().getCustomDiagID(
          clang::DiagnosticsEngine::Error,
          "'%0' file not found; nosync-lint skipped it and linted the rest of the file (findings that need "
          "its declarations may be missing)")) {}

bool MissingIncludes::FileNotFound(llvm::StringRef) {
  skipping_ = true;
  return true;
}

void MissingIncludes::InclusionDirective(clang::SourceLocation hashLoc, const clang::Token&,
                                         llvm::StringRef fileName, bool, clang::CharSourceRange,
                                         clang::OptionalFileEntryRef file, llvm::StringRef, llvm::StringRef,
                                         const clang::Module*, bool, clang::SrcMgr::CharacteristicKind) {
  if (!skipping_ || file) return;
  skipping_ = false;
  pp_.getDiagnostics().Report(hashLoc, diagId_) << fileName;
}

}  // namespace nosync::lint
