// Restricts AST matching to the user's code.
//
// clang-tidy 19 runs every matcher over the whole translation unit, and a
// LibTorch TU is ~99% library headers: matching them costs more than the
// checks' real work and every finding there is thrown away by the header
// filter anyway. Before the matchers run, this consumer narrows the
// ASTContext's traversal scope to the top-level declarations outside system
// headers and excluded paths -- what clangd does before it runs clang-tidy
// checks, and what clang-tidy itself does from LLVM 21 with SystemHeaders off.
// Declarations outside the scope stay reachable through references (a
// matcher can still look at the declaration of a called torch function).
#pragma once

#include "clang/AST/ASTConsumer.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"

#include <memory>
#include <string>

namespace nosync::lint {

class UserCodeScope : public clang::ASTConsumer {
 public:
  // excludedPaths: headers matching it are left out even if not system headers
  // (LibTorch included with -I from a virtualenv).
  explicit UserCodeScope(const std::string& excludedPaths) : excluded_(llvm::StringRef(excludedPaths)) {}

  void HandleTranslationUnit(clang::ASTContext& context) override;

 private:
  llvm::Regex excluded_;
};

}  // namespace nosync::lint
