// Where a sync happens decides how loud its finding is. A `.item()` in the
// training loop costs a full pipeline drain every step; the same call in
// throttled logging, a unit test or one-off setup code costs almost nothing.
// This file classifies the surroundings of a statement; checks turn the
// class into a diagnostic level (see RuleCheck).
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace clang::tidy::nosync {

enum class ContextKind {
  InLoop,          // inside a loop body or loop condition
  CalledFromLoop,  // in a function (or lambda) that a loop in this TU calls
  Plain,           // nothing known: the catalog's default severity
  Throttled,       // under `if (step % N == 0)`: runs every N-th iteration
  TestCode,        // a GoogleTest/doctest/Catch2 test body
  OneOff,          // setup/teardown/export, main() outside its loops, or a
                   // loop in main() after the training loop (final evaluation)
  RarelyCalled,    // in a function whose every caller is throttled, test or
                   // one-off code (its loops included)
};

struct SyncContext {
  ContextKind Kind = ContextKind::Plain;
  /// The named function the statement is in (lambdas are looked through).
  const FunctionDecl *Function = nullptr;

  /// Throttled, test and one-off code: reported as a remark, or silenced.
  bool isLowSeverity() const {
    return Kind == ContextKind::Throttled || Kind == ContextKind::TestCode ||
           Kind == ContextKind::OneOff || Kind == ContextKind::RarelyCalled;
  }
  bool isHot() const { return Kind == ContextKind::InLoop || Kind == ContextKind::CalledFromLoop; }
  /// A short phrase for the diagnostic, e.g. "inside a loop"; "" for Plain.
  std::string describe() const;
};

/// Classifies statements of one translation unit. Knows which functions are
/// called from loops in the TU; that call graph is built lazily, once per
/// ASTContext, over user code only (declarations in system headers such as
/// LibTorch's are skipped).
class SyncContextAnalyzer {
public:
  SyncContext classify(const Stmt *S, ASTContext &Ctx);

  /// True when `S` runs once per iteration of an enclosing loop of its own
  /// function (its body, condition or increment; not a for-init or the range
  /// of a range-for).
  static bool isInLoop(const Stmt *S, ASTContext &Ctx);

  /// True when the function (or lambda call operator) is called from a loop
  /// somewhere in this TU, directly or through other such functions.
  bool isCalledFromLoop(const FunctionDecl *F, ASTContext &Ctx);

  /// True when every call of the function in this TU is in rarely-run code:
  /// throttled (`if (step % N == 0)`), a test body, setup/export code, or
  /// another such function. Its loops run rarely too.
  bool isRarelyCalled(const FunctionDecl *F, ASTContext &Ctx);

  /// True when every call is straight-line code of main() (or of another
  /// such function): its own straight-line code runs once; its loops are
  /// still loops (a train() called once from main holds the hot loop).
  bool isCalledOnce(const FunctionDecl *F, ASTContext &Ctx);

private:
  void buildCallGraph(ASTContext &Ctx);

  const ASTContext *BuiltFor = nullptr;
  llvm::DenseSet<const FunctionDecl *> HotFunctions;
  llvm::DenseSet<const FunctionDecl *> RarelyCalledFunctions;
  llvm::DenseSet<const FunctionDecl *> CalledOnceFunctions;
};

}  // namespace clang::tidy::nosync
