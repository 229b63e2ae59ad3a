// Keeps a translation unit going past an #include that cannot be found (a
// submodule not checked out, a library not installed where the hook runs), as
// clangd does: the directive is reported as an error at its line and skipped,
// and the rest of the file is still parsed and matched. Without it clang stops
// at the first missing include (a fatal error) and the file gets no findings.
#pragma once

#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"

namespace nosync::lint {

class MissingIncludes : public clang::PPCallbacks {
 public:
  explicit MissingIncludes(clang::Preprocessor& pp);

  // Skip the file instead of clang's fatal "file not found".
  bool FileNotFound(llvm::StringRef fileName) override;
  // Report the skipped directive at its location, as a (non-fatal) error.
  void InclusionDirective(clang::SourceLocation hashLoc, const clang::Token& includeTok, llvm::StringRef fileName,
                          bool isAngled, clang::CharSourceRange filenameRange, clang::OptionalFileEntryRef file,
                          llvm::StringRef searchPath, llvm::StringRef relativePath,
                          const clang::Module* suggestedModule, bool moduleImported,
                          clang::SrcMgr::CharacteristicKind fileType) override;

 private:
  clang::Preprocessor& pp_;
  unsigned diagId_;
  bool skipping_ = false;  // FileNotFound skipped the directive being processed
};

}  // namespace nosync::lint
