// Code that runs only when something already went wrong, or only when a
// debug log level is on: the message of a failed TORCH_CHECK, what a branch
// does before it throws, a tensor printed by ACTS_VERBOSE or logger->debug().
// Its syncs cost nothing in a healthy run at the default log level, wherever
// the code sits.
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/AST/Stmt.h"

namespace clang::tidy::nosync {

enum class ColdPath {
  None,
  Failure,   // an argument of a throw or of a [[noreturn]] call, or a branch that ends in one
  DebugLog,  // inside a DEBUG/VERBOSE logging macro, or an argument of debug()/trace()/verbose()
};

/// Whether `S` is on a cold path of its function (lambdas are looked into,
/// not through).
ColdPath coldPathOf(const Stmt *S, ASTContext &Ctx);

}  // namespace clang::tidy::nosync
