// The linter's view of the op table (rules/include/nosync/ops.def): matchers
// for the calls of a set of ops, and the op a matched call belongs to. Checks
// pick ops by rule or form and never spell an ATen name themselves.
#pragma once

#include "clang/AST/Expr.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "nosync/ops.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace clang::tidy::nosync {

using ::nosync::rules::Op;
using ::nosync::rules::OpEntry;
using ::nosync::rules::OpForm;
using ::nosync::rules::OpGroup;
using ::nosync::rules::RuleId;
using OpFilter = llvm::function_ref<bool(const OpEntry &)>;

/// The words of a space-separated list from the op table, as StringRefs into
/// the table's static storage.
std::vector<llvm::StringRef> wordsOf(std::string_view List);

/// A call of any spelling of the ops `Which` selects: an at::Tensor method in
/// their Methods, or a function in their Functions.
ast_matchers::internal::Matcher<Stmt> opCall(OpFilter Which);
/// The same for a list of ops.
ast_matchers::internal::Matcher<Stmt> opCall(std::initializer_list<Op> Ops);

/// The op among those `Which` selects whose spelling `Call` is; nullptr when
/// none is (a user's own function of the same name).
const OpEntry *opOfCall(const CallExpr *Call, OpFilter Which);

/// Whether `Name` is in a name group of op_groups.def.
bool inGroup(OpGroup Group, llvm::StringRef Name);

}  // namespace clang::tidy::nosync
