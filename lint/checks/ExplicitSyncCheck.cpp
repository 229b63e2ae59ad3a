#include "ExplicitSyncCheck.h"

#include "utils/AstHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

bool isExplicitSync(const OpEntry &E) { return E.rule == RuleId::ExplicitSync && E.is_static(); }

// "CUDAStream::synchronize", "torch::cuda::synchronize", "cudaDeviceSynchronize".
std::string displayName(const FunctionDecl *F) {
  if (const auto *M = dyn_cast<CXXMethodDecl>(F))
    return M->getParent()->getName().str() + "::" + M->getName().str();
  return F->getQualifiedNameAsString();
}

}  // namespace

ExplicitSyncCheck::ExplicitSyncCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void ExplicitSyncCheck::registerMatchers(MatchFinder *Finder) {
  registerDroppedCodeMatcher(Finder);
  Finder->addMatcher(callExpr(opCall(isExplicitSync)).bind("sync"), this);
}

void ExplicitSyncCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CallExpr>("sync");
  const OpEntry *Sync = opOfCall(Call, isExplicitSync);
  if (!Sync)
    return;
  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'" + displayName(Call->getDirectCallee()) + "()'";
  F.Advice = std::string(Sync->advice);
  report(std::move(F), *Result.Context);
}

}  // namespace clang::tidy::nosync
