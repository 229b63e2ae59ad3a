#include "BoolConditionCheck.h"

#include "utils/AstHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "nosync/kernel_names.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {


// Is this condition a NaN/Inf test? Those have a dedicated device-side fix.
bool mentionsNonFinite(const Stmt *S) {
  if (!S)
    return false;
  if (const auto *Call = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *F = Call->getDirectCallee(); F && F->getDeclName().isIdentifier())
      if (inGroup(OpGroup::NonFinitePredicate, F->getName()))
        return true;
  return llvm::any_of(S->children(), mentionsNonFinite);
}

std::string adviceFor(const Expr *Call, ASTContext &Ctx) {
  const Stmt *Root = statementRoot(Call, Ctx);
  if (mentionsNonFinite(Root))
    return std::string(::nosync::rules::get(::nosync::rules::FixId::NonfiniteFlag).left_as_note);
  StringRef Macro = outermostMacroName(Call->getBeginLoc(), Ctx);
  if (inGroup(OpGroup::AssertMacro, Macro))
    return "assert on the device instead: at::_assert_async(condition_tensor) fails the stream without "
           "stopping the host";
  return "compute both outcomes on the device and select with torch::where(mask, a, b), or keep the "
         "decision in a device tensor and read it once outside the hot loop";
}

// Reads that yield a host bool, which nosync-bool-condition owns in a
// condition.
bool isBranchRead(const OpEntry &E) { return E.in_condition == RuleId::BoolCondition && E.is_static(); }

}  // namespace

BoolConditionCheck::BoolConditionCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void BoolConditionCheck::registerMatchers(MatchFinder *Finder) {
  Finder->addMatcher(callExpr(opCall(isBranchRead)).bind("read"), this);
  registerDroppedCodeMatcher(Finder);
}

void BoolConditionCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("read");
  ASTContext &Ctx = *Result.Context;
  if (!opOfCall(Call, isBranchRead) || !isInControlFlowCondition(Call, Ctx))
    return;
  // The tensors involved: the receiver, then tensor arguments.
  const Expr *Receiver = receiverOf(Call);
  llvm::SmallVector<const Expr *, 3> Tensors;
  if (Receiver)
    Tensors.push_back(Receiver);
  for (const Expr *Arg : Call->arguments())
    if (isTensorExpr(Arg))
      Tensors.push_back(Arg);
  // Every one on the CPU: comparing host memory costs nothing.
  bool AllOnCpu = llvm::all_of(Tensors, [&](const Expr *T) {
    return isProvablyOnCpu(T, Ctx) && (T != Receiver || !isHostCopyOfDeviceValue(T, Ctx));
  });
  if (AllOnCpu)
    return;

  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'" + Call->getDirectCallee()->getName().str() + "()' in a condition";
  F.Value = receiverOf(Call) ? receiverOf(Call) : (Call->getNumArgs() ? Call->getArg(0) : nullptr);
  // One tensor decides it; with two (equal(a, b)) both would have to be known.
  if (Tensors.size() == 1)
    F.PlacedBy = Tensors.front();
  F.Advice = adviceFor(Call, Ctx);
  report(std::move(F), Ctx);
}

}  // namespace clang::tidy::nosync
