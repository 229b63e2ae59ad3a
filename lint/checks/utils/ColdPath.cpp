#include "utils/ColdPath.h"

#include "utils/AstHelpers.h"

#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <utility>

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

// `bool mult_error = false;` that no statement of its function assigns,
// increments, binds to a non-const reference or takes the address of: every
// use reads it.
bool neverChanged(const VarDecl *V, ASTContext &Ctx) {
  const auto *Fn = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
  if (!Fn || !Fn->getBody())
    return false;
  bool Changed = false;
  llvm::SmallVector<const Stmt *, 64> Work{Fn->getBody()};
  while (!Work.empty() && !Changed) {
    const Stmt *S = Work.pop_back_val();
    if (!S)
      continue;
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S); Ref && Ref->getDecl() == V) {
      DynTypedNodeList Parents = Ctx.getParents(*Ref);
      const auto *Cast = Parents.empty() ? nullptr : Parents[0].get<ImplicitCastExpr>();
      Changed = !Cast || Cast->getCastKind() != CK_LValueToRValue;
    }
    for (const Stmt *Child : S->children())
      Work.push_back(Child);
  }
  return !Changed;
}

// The branch of `If` that holds `Child`, when the build never takes it.
bool inDeadBranch(const IfStmt *If, const Stmt *Child) {
  if (If->isConsteval())
    return false;
  std::optional<bool> Value = constantCondition(If->getCond());
  return (Child == If->getThen() && Value == false) || (Child == If->getElse() && Value == true);
}

// The flag a condition tests and the value the branch must give it to close
// itself: `!ready_` and `ready_ == false` open while false (closed by true),
// `first` opens while true (closed by false). The flag is a bool variable or
// member, read directly.
const ValueDecl *flagOf(const Expr *E) {
  E = E->IgnoreParenImpCasts();
  const ValueDecl *D = nullptr;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    D = dyn_cast<VarDecl>(Ref->getDecl());
  else if (const auto *Member = dyn_cast<MemberExpr>(E))
    D = dyn_cast<FieldDecl>(Member->getMemberDecl());
  return D && D->getType()->isBooleanType() ? D : nullptr;
}

std::pair<const ValueDecl *, bool> guardFlag(const Expr *Cond) {
  Cond = Cond->IgnoreParenImpCasts();
  if (const auto *Not = dyn_cast<UnaryOperator>(Cond); Not && Not->getOpcode() == UO_LNot)
    return {flagOf(Not->getSubExpr()), true};
  if (const auto *B = dyn_cast<BinaryOperator>(Cond); B && B->getOpcode() == BO_EQ) {
    const auto *Literal = dyn_cast<CXXBoolLiteralExpr>(B->getRHS()->IgnoreParenImpCasts());
    if (Literal && !Literal->getValue())
      return {flagOf(B->getLHS()), true};
    return {nullptr, false};
  }
  return {flagOf(Cond), false};
}

// `Flag = Closes;` as a statement of the branch itself, which every run of
// the branch executes: not one nested in a loop or an `if` of the branch
// (`if (!done) { while (..) { ..; if (last) done = true; } }` runs until its
// work is done, not once).
bool assignsFlag(const Stmt *Branch, const ValueDecl *Flag, bool Closes) {
  auto Closing = [&](const Stmt *S) {
    const auto *B = dyn_cast_or_null<BinaryOperator>(S);
    if (!B || B->getOpcode() != BO_Assign || flagOf(B->getLHS()) != Flag)
      return false;
    const auto *Literal = dyn_cast<CXXBoolLiteralExpr>(B->getRHS()->IgnoreParenImpCasts());
    return Literal && Literal->getValue() == Closes;
  };
  if (const auto *Block = dyn_cast_or_null<CompoundStmt>(Branch))
    return llvm::any_of(Block->body(), Closing);
  return Closing(Branch);
}

}  // namespace

OnceGuard onceGuardOf(const IfStmt *If) {
  if (If->isConsteval() || !If->getCond())
    return OnceGuard::None;
  auto [Flag, Closes] = guardFlag(If->getCond());
  if (!Flag || !assignsFlag(If->getThen(), Flag, Closes))
    return OnceGuard::None;
  const auto *V = dyn_cast<VarDecl>(Flag);
  bool OwnedByTheCall = V && V->hasLocalStorage() && !V->getType()->isReferenceType();
  return OwnedByTheCall ? OnceGuard::PerCall : OnceGuard::PerObject;
}

std::optional<bool> constantCondition(const Expr *Cond) {
  Cond = Cond ? Cond->IgnoreParenImpCasts() : nullptr;
  if (!Cond || Cond->isValueDependent())
    return std::nullopt;
  if (const auto *B = dyn_cast<CXXBoolLiteralExpr>(Cond))
    return B->getValue();
  if (const auto *I = dyn_cast<IntegerLiteral>(Cond))
    return I->getValue() != 0;
  if (const auto *Not = dyn_cast<UnaryOperator>(Cond); Not && Not->getOpcode() == UO_LNot) {
    std::optional<bool> Inner = constantCondition(Not->getSubExpr());
    return Inner ? std::optional<bool>(!*Inner) : std::nullopt;
  }
  if (const auto *B = dyn_cast<BinaryOperator>(Cond); B && B->isLogicalOp()) {
    std::optional<bool> L = constantCondition(B->getLHS()), R = constantCondition(B->getRHS());
    bool Decisive = B->getOpcode() == BO_LOr;  // the value that decides alone
    if (L == Decisive || R == Decisive)
      return Decisive;
    if (L && R)
      return !Decisive;
    return std::nullopt;
  }
  const auto *Ref = dyn_cast<DeclRefExpr>(Cond);
  const auto *V = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  return V ? constantValue(V) : std::nullopt;
}

std::optional<bool> constantValue(const VarDecl *V) {
  if (!V->getInit() || V->getInit()->isValueDependent())
    return std::nullopt;
  ASTContext &Ctx = V->getASTContext();
  bool Fixed = V->getType().isConstQualified() || V->isConstexpr() ||
               (V->isLocalVarDecl() && !V->isStaticLocal() && V->getType()->isBooleanType() &&
                isa<CXXBoolLiteralExpr>(V->getInit()->IgnoreParenImpCasts()) && neverChanged(V, Ctx));
  bool Res = false;
  if (!Fixed || !V->getInit()->EvaluateAsBooleanCondition(Res, Ctx))
    return std::nullopt;
  return Res;
}

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
    if (const auto *If = P.get<IfStmt>(); If && inDeadBranch(If, Child.get<Stmt>()))
      return ColdPath::DeadBranch;
    if (const auto *If = P.get<IfStmt>();
        If && Child.get<Stmt>() == If->getThen() && onceGuardOf(If) == OnceGuard::PerObject)
      return ColdPath::LazyInit;
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
