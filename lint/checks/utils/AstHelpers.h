// Small AST helpers every nosync check uses: where a diagnostic points, whether
// a value decides control flow, statement roots, macro names, source text,
// the words of an identifier, and
// looking through the implicit nodes LibTorch's overloads introduce.
#pragma once

#include "clang/AST/Expr.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace clang::tidy::nosync {

/// `E` without the implicit nodes LibTorch's overloads introduce (temporaries,
/// conversions to TensorOptions / std::optional) and without parens: what the
/// user wrote.
const Expr *stripImplicit(const Expr *E);

/// "c10::Device", "at::Tensor", ... for a (possibly sugared, referenced,
/// cv-qualified) type; "" for types without a tag declaration.
std::string qualifiedTagName(QualType T);

/// Where a diagnostic about a call points: the method name of a member call
/// (`x.cpu()` -> `cpu`), the start of any other call.
SourceLocation callNameLoc(const CallExpr *Call);

/// True when the expression's value decides host control flow: it sits in
/// the condition of if/while/for/do or ?:, is an operand of && / || / !, or
/// an argument of assert-like macros (which expand to one of those).
bool isInControlFlowCondition(const Expr *E, ASTContext &Ctx);

/// The outermost expression of the statement that contains `E`; two syncs
/// with the same statement root are "in one statement".
const Stmt *statementRoot(const Expr *E, ASTContext &Ctx);

/// The macro the user wrote at the outermost expansion of `Loc` (e.g.
/// "TEST_F" for a GoogleTest body, "TORCH_CHECK"); "" outside macros.
llvm::StringRef outermostMacroName(SourceLocation Loc, const ASTContext &Ctx);

/// Source text of `E` (for messages and duplicate detection); empty when it
/// comes from a macro body that has no spelling in the file.
llvm::StringRef sourceText(const Expr *E, const ASTContext &Ctx);

/// Lower-case words of an identifier: "initWeights" and "init_weights" both
/// give {"init", "weights"}.
llvm::SmallVector<std::string, 4> identifierWords(llvm::StringRef Name);

}  // namespace clang::tidy::nosync
