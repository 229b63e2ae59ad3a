// What the multi-site fix-its need to know about the code around a finding:
// the hot loop a declaration can be hoisted in front of, whether an
// expression still means the same there, a name that is free, and the edit
// that inserts a statement on a line of its own.
#pragma once

#include "clang/AST/Expr.h"
#include "clang/Basic/Diagnostic.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace clang::tidy::nosync {

/// The outermost loop around `S` inside its function (a lambda counts as a
/// function): where a per-loop object (a stager, an accumulator) is declared
/// once. Null when `S` is not in a loop.
const Stmt *outermostLoop(const Stmt *S, ASTContext &Ctx);

/// The function or lambda body `S` is in.
const Stmt *enclosingBody(const Stmt *S, ASTContext &Ctx);

/// Whether `E` can be evaluated right before `Loop` with the same meaning:
/// every variable it names is a parameter, a global, or a local declared
/// before `Loop` in a block that encloses it; no call result or temporary
/// whose value could change inside the loop.
bool isHoistableBefore(const Expr *E, const Stmt *Loop, ASTContext &Ctx);

/// A variable of type c10::Device (torch::Device) usable right before `Loop`
/// (a parameter or a local declared before it), for the fixes that build a
/// device object before the loop. Its name, or "" when there is none.
std::string deviceVariableBefore(const Stmt *Loop, ASTContext &Ctx);

/// `Base`, or `Base` with a number appended, so that the name is spelled
/// nowhere in `Body` as an identifier (comments and strings do not count):
/// the new declaration cannot shadow or be shadowed by anything there.
std::string freshName(llvm::StringRef Base, const Stmt *Body, ASTContext &Ctx);

/// The variable `E` initializes (`torch::Tensor x = E;` -> "x"), or "".
std::string initializedVariable(const Expr *E, ASTContext &Ctx);

/// An identifier made of the letters and digits of `Text` (`batch.x` ->
/// `batch_x`).
std::string identifierFrom(llvm::StringRef Text);

/// Inserts `Text` as a statement on its own line before `S`, with `S`'s
/// indentation. Nothing when `S` does not start its line or is in a macro.
std::optional<FixItHint> insertStatementBefore(const Stmt *S, llvm::StringRef Text, ASTContext &Ctx);

/// The source range of `S` when every edge of it is in the file itself (no
/// macro), as a char range; nullopt otherwise.
std::optional<CharSourceRange> fileRange(SourceRange R, const ASTContext &Ctx);

}  // namespace clang::tidy::nosync
