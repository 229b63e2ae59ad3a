#include "utils/ListLoopRewrite.h"

#include "utils/AstHelpers.h"
#include "utils/FixHelpers.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "nosync/kernel_names.h"
#include "llvm/ADT/StringSwitch.h"

namespace clang::tidy::nosync {
namespace {

namespace kn = ::nosync::rules::kernel_names;
using ::nosync::rules::FixId;

// What a loop walks: the element variable (range-for) or the index variable
// and container (index loop), and the list expression every element of which
// the loop visits.
struct LoopShape {
  const VarDecl *Elem = nullptr;   // range-for variable
  const VarDecl *Index = nullptr;  // index loop variable
  const Expr *Container = nullptr;
  bool Named = false;  // named_parameters(): the element is item.value()
  std::string List;    // source text of the list of elements
  const Stmt *Body = nullptr;
};

// Which per-element tensor an operand is: the element itself, its gradient,
// or its .data().
enum class Part { None, Elem, Grad, Data };

bool refersTo(const Expr *E, const VarDecl *V) {
  const auto *D = dyn_cast_or_null<DeclRefExpr>(stripImplicit(E));
  return D && V && D->getDecl() == V;
}

bool sameText(const Expr *A, const Expr *B, ASTContext &Ctx) {
  StringRef TA = sourceText(A, Ctx), TB = sourceText(B, Ctx);
  return !TA.empty() && TA == TB;
}

// `p`, `item.value()`, `params[i]`, `params.at(i)`.
bool isElement(const Expr *E, const LoopShape &L, ASTContext &Ctx) {
  E = stripImplicit(E);
  if (L.Elem && !L.Named)
    return refersTo(E, L.Elem);
  if (L.Elem && L.Named) {
    const auto *Call = dyn_cast<CXXMemberCallExpr>(E);
    return Call && Call->getMethodDecl() && Call->getMethodDecl()->getName() == "value" &&
           refersTo(Call->getImplicitObjectArgument(), L.Elem);
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    return Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2 && refersTo(Op->getArg(1), L.Index) &&
           sameText(Op->getArg(0), L.Container, Ctx);
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    return Call->getMethodDecl() && Call->getMethodDecl()->getName() == "at" && Call->getNumArgs() == 1 &&
           refersTo(Call->getArg(0), L.Index) && sameText(Call->getImplicitObjectArgument(), L.Container, Ctx);
  return false;
}

Part partOf(const Expr *E, const LoopShape &L, ASTContext &Ctx) {
  E = stripImplicit(E);
  if (isElement(E, L, Ctx))
    return Part::Elem;
  StringRef M = tensorMethodName(E);
  const auto *Call = dyn_cast<CXXMemberCallExpr>(E);
  if (Call && Call->getNumArgs() == 0 && isElement(Call->getImplicitObjectArgument(), L, Ctx)) {
    if (M == "grad")
      return Part::Grad;
    if (M == "data" || M == "detach")
      return Part::Data;
  }
  return Part::None;
}

// The list of the per-element tensors of `P`.
std::string listOf(Part P, const LoopShape &L, bool &CallsKernels) {
  if (P == Part::Grad) {
    CallsKernels = true;
    return std::string(kn::kGradsOf) + "(" + L.List + ")";
  }
  return L.List;
}

// Whether `E` mentions the loop's variables (then it differs per element).
bool mentionsLoopVars(const Expr *E, const LoopShape &L) {
  struct Scan : RecursiveASTVisitor<Scan> {
    const LoopShape &L;
    bool Found = false;
    explicit Scan(const LoopShape &L) : L(L) {}
    bool VisitDeclRefExpr(DeclRefExpr *D) {
      Found = Found || D->getDecl() == L.Elem || D->getDecl() == L.Index;
      return !Found;
    }
  } S(L);
  S.TraverseStmt(const_cast<Expr *>(E));
  return S.Found;
}

bool isLiteral(const Expr *E, double Value) {
  E = stripImplicit(E);
  if (const auto *I = dyn_cast<IntegerLiteral>(E))
    return I->getValue() == static_cast<uint64_t>(Value);
  if (const auto *F = dyn_cast<FloatingLiteral>(E))
    return F->getValueAsApproximateDouble() == Value;
  return false;
}

const CXXMemberCallExpr *tensorCall(const Expr *E, StringRef Name, unsigned Args) {
  const auto *C = dyn_cast_or_null<CXXMemberCallExpr>(stripImplicit(E));
  unsigned Explicit = 0;
  if (C)
    for (const Expr *A : C->arguments())
      Explicit += !isa<CXXDefaultArgExpr>(A);
  return C && tensorMethodName(C) == Name && Explicit == Args ? C : nullptr;
}

const Expr *receiver(const CXXMemberCallExpr *C) { return C->getImplicitObjectArgument(); }

// `P.norm()` / `P.norm(2)`: the per-element operand, or null.
const Expr *normOperand(const Expr *E) {
  if (const auto *N = tensorCall(E, "norm", 0))
    return receiver(N);
  if (const auto *N = tensorCall(E, "norm", 1); N && isLiteral(N->getArg(0), 2))
    return receiver(N);
  return nullptr;
}

// The per-element expression of a reduction as one multi-tensor expression.
std::optional<std::string> reductionOf(const Expr *E, const LoopShape &L, ASTContext &Ctx, bool &CallsKernels) {
  auto Operand = [&](const Expr *X) -> std::optional<std::string> {
    Part P = partOf(X, L, Ctx);
    if (P != Part::Elem && P != Part::Grad)
      return std::nullopt;
    CallsKernels = true;
    return listOf(P, L, CallsKernels);
  };
  auto SquaredOperand = [&](const Expr *X) -> const Expr * {  // X is P.pow(2) / P.square() / P * P
    if (const auto *Pow = tensorCall(X, "pow", 1); Pow && isLiteral(Pow->getArg(0), 2))
      return receiver(Pow);
    if (const auto *Sq = tensorCall(X, "square", 0))
      return receiver(Sq);
    if (const auto *Mul = dyn_cast<CXXOperatorCallExpr>(stripImplicit(X));
        Mul && Mul->getOperator() == OO_Star && Mul->getNumArgs() == 2 && sameText(Mul->getArg(0), Mul->getArg(1), Ctx))
      return Mul->getArg(0);
    return nullptr;
  };
  if (const auto *Sum = tensorCall(E, "sum", 0)) {
    const Expr *X = receiver(Sum);
    if (const Expr *Sq = SquaredOperand(X))  // sum of squares
      if (auto List = Operand(Sq))
        return std::string(kn::kL2Norm) + "(" + *List + ").pow(2)";
    if (const auto *Abs = tensorCall(X, "abs", 0))  // L1
      if (auto List = Operand(receiver(Abs)))
        return std::string(kn::kSum) + "(at::_foreach_abs(" + *List + "))";
    if (auto List = Operand(X))
      return std::string(kn::kSum) + "(" + *List + ")";
    return std::nullopt;
  }
  if (const Expr *Sq = SquaredOperand(E))  // p.norm().pow(2): squared norms
    if (const Expr *N = normOperand(Sq))
      if (auto List = Operand(N))
        return std::string(kn::kL2Norm) + "(" + *List + ").pow(2)";
  if (const Expr *N = normOperand(E))  // a sum of norms
    if (auto List = Operand(N))
      return std::string(kn::kL2NormPerTensor) + "(" + *List + ").sum()";
  return std::nullopt;
}

// `acc += <reduction of the element>` with a tensor accumulator declared
// outside the loop.
std::optional<std::string> rewriteReduction(const Stmt *S, const LoopShape &L, ASTContext &Ctx, bool &CallsKernels) {
  const auto *Op = dyn_cast<CXXOperatorCallExpr>(S);
  if (!Op || Op->getOperator() != OO_PlusEqual || Op->getNumArgs() != 2 || !isTensorExpr(Op->getArg(0)) ||
      mentionsLoopVars(Op->getArg(0), L))
    return std::nullopt;
  std::optional<std::string> Total = reductionOf(Op->getArg(1), L, Ctx, CallsKernels);
  StringRef Acc = sourceText(Op->getArg(0), Ctx);
  if (!Total || Acc.empty())
    return std::nullopt;
  return Acc.str() + " += " + *Total;
}

// `T.mul_(s)`, `T.div_(s)`, `T.add_(U, alpha)`, `T.sub_(U, alpha)`,
// `T.add_(s)`, `T.zero_()` on per-element tensors with loop-invariant
// scalars.
std::optional<std::string> rewriteUpdate(const Stmt *S, const LoopShape &L, ASTContext &Ctx, bool &CallsKernels) {
  const auto *Call = dyn_cast<CXXMemberCallExpr>(S);
  StringRef M = Call ? tensorMethodName(Call) : "";
  if (!llvm::StringSwitch<bool>(M).Cases("mul_", "div_", "add_", "sub_", "zero_", true).Default(false))
    return std::nullopt;
  Part Target = partOf(receiver(Call), L, Ctx);
  if (Target == Part::None)
    return std::nullopt;
  std::string Args = listOf(Target, L, CallsKernels);
  for (const Expr *A : Call->arguments()) {
    if (isa<CXXDefaultArgExpr>(A))
      continue;
    Part P = partOf(A, L, Ctx);
    StringRef Text = sourceText(A, Ctx);
    if (P == Part::Elem || P == Part::Grad)
      Args += ", " + listOf(P, L, CallsKernels);
    else if (P == Part::None && !mentionsLoopVars(A, L) && !Text.empty())
      Args += ", " + Text.str();
    else
      return std::nullopt;
  }
  std::string Update = "at::_foreach_" + M.str() + "(" + Args + ")";
  // .data() updates bypass autograd; the list of parameters needs the guard.
  if (Target == Part::Data)
    return "{ torch::NoGradGuard no_grad; " + Update + "; }";
  return Update;
}

// The loop's one statement, skipping `if (!p.grad().defined()) continue;`
// (what grads_of does) in front of it.
const Stmt *singleStatement(const Stmt *Body, const LoopShape &L, ASTContext &Ctx, bool &SkipsUndefinedGrads) {
  const auto *Block = dyn_cast<CompoundStmt>(Body);
  if (!Block)
    return Body;
  if (Block->size() == 1)
    return Block->body_front();
  if (Block->size() != 2)
    return nullptr;
  const auto *If = dyn_cast<IfStmt>(Block->body_front());
  const auto *Not = If ? dyn_cast<UnaryOperator>(stripImplicit(If->getCond())) : nullptr;
  const auto *Defined = Not && Not->getOpcode() == UO_LNot ? tensorCall(Not->getSubExpr(), "defined", 0) : nullptr;
  if (!Defined || If->getElse() || !isa<ContinueStmt>(If->getThen()) ||
      partOf(receiver(Defined), L, Ctx) != Part::Grad)
    return nullptr;
  SkipsUndefinedGrads = true;
  return Block->body_back();
}

// for (size_t i = 0; i < c.size(); ++i): every element of c, in order.
bool isFullIndexLoop(const ForStmt *For, LoopShape &L, ASTContext &Ctx) {
  const auto *Init = dyn_cast_or_null<DeclStmt>(For->getInit());
  const auto *V = Init && Init->isSingleDecl() ? dyn_cast<VarDecl>(Init->getSingleDecl()) : nullptr;
  if (!V || !V->getInit() || !isLiteral(V->getInit(), 0))
    return false;
  const auto *Cond = dyn_cast_or_null<BinaryOperator>(stripImplicit(For->getCond()));
  const auto *Size = Cond ? dyn_cast<CXXMemberCallExpr>(stripImplicit(Cond->getRHS())) : nullptr;
  if (!Cond || Cond->getOpcode() != BO_LT || !refersTo(Cond->getLHS(), V) || !Size || !Size->getMethodDecl() ||
      Size->getMethodDecl()->getName() != "size" || !sameText(Size->getImplicitObjectArgument(), L.Container, Ctx))
    return false;
  const auto *Inc = dyn_cast_or_null<UnaryOperator>(stripImplicit(For->getInc()));
  if (!Inc || !Inc->isIncrementOp() || !refersTo(Inc->getSubExpr(), V))
    return false;
  L.Index = V;
  return true;
}

std::optional<LoopShape> shapeOf(const Stmt *Loop, const Expr *Range, ASTContext &Ctx) {
  LoopShape L;
  L.Container = Range;
  L.List = sourceText(Range, Ctx).str();
  if (L.List.empty())
    return std::nullopt;
  if (const auto *RF = dyn_cast<CXXForRangeStmt>(Loop)) {
    L.Elem = RF->getLoopVariable();
    L.Body = RF->getBody();
    // named_parameters() yields (name, tensor) items: the list is .values().
    L.Named = !isTensorType(L.Elem->getType().getNonReferenceType());
    if (L.Named) {
      if (tensorMethodName(stripImplicit(Range)) != "" ||
          !StringRef(sourceText(Range, Ctx)).contains("named_"))
        return std::nullopt;
      L.List += ".values()";
    }
    return L;
  }
  const auto *For = dyn_cast<ForStmt>(Loop);
  if (!For || !isFullIndexLoop(For, L, Ctx))
    return std::nullopt;
  L.Body = For->getBody();
  return L;
}

}  // namespace

std::optional<ListLoopRewrite> rewriteListLoop(const Stmt *Loop, const Expr *Range, ASTContext &Ctx) {
  std::optional<LoopShape> L = shapeOf(Loop, Range, Ctx);
  if (!L || !L->Body)
    return std::nullopt;
  bool SkipsUndefinedGrads = false;
  const Stmt *S = singleStatement(L->Body, *L, Ctx, SkipsUndefinedGrads);
  const auto *E = dyn_cast_or_null<Expr>(S);
  if (!E)
    return std::nullopt;
  E = E->IgnoreImplicit();
  ListLoopRewrite R{FixItHint(), FixId::ListReduction, false};
  std::optional<std::string> Text = rewriteReduction(E, *L, Ctx, R.CallsKernels);
  if (!Text) {
    R.Fix = FixId::ForeachUpdate;
    Text = rewriteUpdate(E, *L, Ctx, R.CallsKernels);
  }
  // The skipped undefined gradients are skipped by grads_of only.
  if (!Text || (SkipsUndefinedGrads && Text->find(kn::kGradsOf) == std::string::npos))
    return std::nullopt;
  // A braced body ends with `}`: the new statement needs its `;`. An
  // unbraced one ends at the expression, before the `;` that stays.
  std::optional<CharSourceRange> Whole = fileRange(Loop->getSourceRange(), Ctx);
  if (!Whole)
    return std::nullopt;
  std::string New = *Text;
  if (isa<CompoundStmt>(L->Body) && New.front() != '{')
    New += ";";
  R.Edit = FixItHint::CreateReplacement(*Whole, New);
  return R;
}

}  // namespace clang::tidy::nosync
