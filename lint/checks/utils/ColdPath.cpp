#include "utils/ColdPath.h"

#include "utils/AstHelpers.h"

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

namespace clang::tidy::nosync {
namespace {

const FunctionDecl *noReturnCallee(const Stmt *S) {
  const auto *Call = dyn_cast_or_null<CallExpr>(S);
  const FunctionDecl *F = Call ? Call->getDirectCallee() : nullptr;
  return F && F->isNoReturn() ? F : nullptr;
}

// `throw std::runtime_error(..)`, `std::abort()`, `TORCH_CHECK(false, ..)`
// as a statement: nothing after it runs.
bool endsTheRun(const Stmt *S) {
  if (const auto *E = dyn_cast_or_null<Expr>(S))
    S = E->IgnoreImplicit();
  return isa_and_nonnull<CXXThrowExpr>(S) || noReturnCallee(S);
}

// `if (!ok) { std::cerr << t; throw ..; }`: a branch whose last statement
// throws or aborts runs only when the check fails.
bool branchEndsTheRun(const CompoundStmt *Block, const DynTypedNode &BlockParent) {
  const auto *If = BlockParent.get<IfStmt>();
  return If && (If->getThen() == Block || If->getElse() == Block) && !Block->body_empty() &&
         endsTheRun(Block->body_back());
}

// ACTS_VERBOSE, LOG_DEBUG, RCLCPP_DEBUG, SPDLOG_DEBUG, DLOG, VLOG.
bool isDebugLogMacro(llvm::StringRef Name) {
  if (Name == "DLOG" || Name == "VLOG" || Name == "DVLOG")
    return true;
  return llvm::any_of(identifierWords(Name), [](const std::string &W) { return W == "debug" || W == "verbose"; });
}

// spdlog::debug(..), logger->trace(..), log.verbose(..); not torch::trace(m),
// the trace of a matrix, nor torch::jit::trace.
bool isDebugLogCall(const FunctionDecl *F) {
  static const llvm::StringSet<> Names = {"debug", "trace", "verbose"};
  if (!F || !F->getDeclName().isIdentifier() || !Names.contains(F->getName()))
    return false;
  std::string Q = F->getQualifiedNameAsString();
  llvm::StringRef Name(Q);
  return !(Name.starts_with("torch::") || Name.starts_with("at::") || Name.starts_with("c10::"));
}

}  // namespace

ColdPath coldPathOf(const Stmt *S, ASTContext &Ctx) {
  if (isDebugLogMacro(outermostMacroName(S->getBeginLoc(), Ctx)))
    return ColdPath::DebugLog;
  DynTypedNode Child = DynTypedNode::create(*S);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty())
      return ColdPath::None;
    const DynTypedNode &P = Parents[0];
    if (P.get<FunctionDecl>() || P.get<LambdaExpr>())
      return ColdPath::None;
    if (P.get<CXXThrowExpr>())
      return ColdPath::Failure;
    if (const auto *Call = P.get<CallExpr>(); Call && Child.get<Stmt>() != Call->getCallee()) {
      if (noReturnCallee(Call))
        return ColdPath::Failure;
      if (isDebugLogCall(Call->getDirectCallee()))
        return ColdPath::DebugLog;
    }
    if (const auto *Block = P.get<CompoundStmt>()) {
      DynTypedNodeList Above = Ctx.getParents(P);
      if (!Above.empty() && branchEndsTheRun(Block, Above[0]))
        return ColdPath::Failure;
    }
    Child = P;
  }
}

}  // namespace clang::tidy::nosync
