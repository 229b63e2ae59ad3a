// Code that runs only when something already went wrong, or only when a
// debug log level is on: the message of a failed TORCH_CHECK, what a branch
// does before it throws, a tensor printed by ACTS_VERBOSE or logger->debug().
// Its syncs cost nothing in a healthy run at the default log level, wherever
// the code sits.
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"

#include <optional>

namespace clang::tidy::nosync {

enum class ColdPath {
  None,
  Failure,     // an argument of a throw or of a [[noreturn]] call, or a branch that ends in one
  DebugLog,    // inside a DEBUG/VERBOSE logging macro, or an argument of debug()/trace()/verbose()
  DeadBranch,  // a branch whose condition the build fixes the other way (`if (DEBUG)`, DEBUG false)
  LazyInit,    // a branch that sets the member or global flag its condition tests (OnceGuard::PerObject)
};

/// How often the branch of `if (!ready_) { ready_ = true; ... }` runs: a
/// branch that sets the flag its condition tests to the value that closes it
/// runs once per object (the flag is a member), once per program (a global
/// or static local), or once per call of its function (a local), however
/// often the code around it runs.
enum class OnceGuard { None, PerCall, PerObject };

/// What the then-branch of `If` is, by the above.
OnceGuard onceGuardOf(const IfStmt *If);

/// The value of a condition the program fixes at build time: `false`, `0`,
/// a const or constexpr variable initialized with a constant (`const bool
/// IS_TRAIN = false;`, `#define DEBUG false`), a local initialized with a
/// literal that nothing in its function changes, `!`, `&&` and `||` of
/// those; none for anything decided at run time.
std::optional<bool> constantCondition(const Expr *Cond);

/// The value of a variable the program fixes at build time (const or
/// constexpr with a constant initializer, or a local bool initialized with a
/// literal that nothing changes); none otherwise.
std::optional<bool> constantValue(const VarDecl *V);

/// Whether `S` is on a cold path of its function (lambdas are looked into,
/// not through).
ColdPath coldPathOf(const Stmt *S, ASTContext &Ctx);

}  // namespace clang::tidy::nosync
