#include "HiddenSyncCheck.h"

#include "utils/AstHelpers.h"
#include "utils/FixHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

bool isBoolMaskExpr(const Expr *E, int Depth = 0);

// torch::kBool / ScalarType::Bool, also inside options (`.dtype(torch::kBool)`)
// and through a local holding them (`auto BoolType = opts.dtype(kBool)`).
bool namesBoolDtype(const Stmt *S, int Depth = 0) {
  if (!S || Depth > 3)
    return false;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(S)) {
    const ValueDecl *D = Ref->getDecl();
    if (D->getDeclName().isIdentifier() &&
        (D->getName() == "kBool" || (isa<EnumConstantDecl>(D) && D->getName() == "Bool")))
      return true;
    if (const auto *V = dyn_cast<VarDecl>(D); V && V->getInit() && !isa<ParmVarDecl>(V))
      return namesBoolDtype(V->getInit(), Depth + 1);
    return false;
  }
  return llvm::any_of(S->children(), [Depth](const Stmt *C) { return namesBoolDtype(C, Depth); });
}

// A tensor whose name says it is a mask (`mask`, `valid_mask`, `keepMask`,
// `visibility_filter`, `point_valid_flags`): not an index (`mask_idx`) or a
// count (`num_mask`).
bool namedLikeMask(const NamedDecl *D) {
  if (!D->getDeclName().isIdentifier())
    return false;
  llvm::SmallVector<std::string, 4> Words = identifierWords(D->getName());
  auto Has = [&](std::initializer_list<const char *> Any) {
    return llvm::any_of(Words, [&](const std::string &W) { return llvm::is_contained(Any, W); });
  };
  return Has({"mask", "masks", "filter", "flags", "valid", "visible", "keep", "alive"}) &&
         !Has({"idx", "index", "indices", "inds", "ids", "id", "num", "count", "sum", "ratio"});
}

// A boolean tensor built from a comparison or a predicate: x > 0, x.eq(y),
// torch::isnan(x), ~m, a & b, x.to(torch::kBool); locals initialized that
// way; and tensors named like a mask (a parameter, a member, a local made
// elsewhere), which is what a tensor used as an index and named so is.
bool isBoolMaskExpr(const Expr *E, int Depth) {
  if (!E || Depth > 6)
    return false;
  E = E->IgnoreUnlessSpelledInSource()->IgnoreParens();
  if (!isTensorExpr(E))
    return false;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    switch (Op->getOperator()) {
    case OO_Less: case OO_Greater: case OO_LessEqual: case OO_GreaterEqual: case OO_EqualEqual:
    case OO_ExclaimEqual: case OO_Exclaim:
      return true;
    case OO_Tilde: case OO_Amp: case OO_Pipe:
      return isBoolMaskExpr(Op->getArg(0), Depth + 1);
    default:
      return false;
    }
  }
  // `first ? torch::full_like(m, false, torch::kBool) : alive`: either value.
  if (const auto *C = dyn_cast<AbstractConditionalOperator>(E))
    return isBoolMaskExpr(C->getTrueExpr(), Depth + 1) || isBoolMaskExpr(C->getFalseExpr(), Depth + 1);
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F || !F->getDeclName().isIdentifier())
      return false;
    // x.to(torch::kBool), torch::full({n}, false, opts.dtype(torch::kBool)),
    // torch::full_like(x, false, torch::kBool).
    if (tensorMethodName(Call) == "to" || inGroup(OpGroup::ConstantFactory, F->getName()) ||
        F->getName().ends_with("_like"))
      return llvm::any_of(Call->arguments(), [](const Expr *A) { return namesBoolDtype(A); });
    // A view of a mask is a mask: `alive.squeeze(-1)`, `mask.view({-1})`.
    if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
        Member && (inGroup(OpGroup::MetadataMethod, F->getName()) || F->getName() == "contiguous" ||
                   F->getName() == "clone"))
      return isBoolMaskExpr(receiverOf(Member), Depth + 1);
    return inGroup(OpGroup::MaskPredicate, F->getName());
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    if (V && V->getInit() && !isa<ParmVarDecl>(V) && isBoolMaskExpr(V->getInit(), Depth + 1))
      return true;
    return namedLikeMask(DRE->getDecl());
  }
  if (const auto *M = dyn_cast<MemberExpr>(E))
    return namedLikeMask(M->getMemberDecl());
  return false;
}

// Any boolean mask among the indices of x.index({...}) / x[mask].
bool hasBoolMaskIndex(const Stmt *S) {
  if (!S)
    return false;
  if (const auto *E = dyn_cast<Expr>(S); E && isBoolMaskExpr(E))
    return true;
  return llvm::any_of(S->children(), hasBoolMaskIndex);
}

const Expr *argumentFor(const CallExpr *Call, StringRef ParamName) {
  const FunctionDecl *F = Call->getDirectCallee();
  for (unsigned I = 0, N = std::min(F->getNumParams(), Call->getNumArgs()); I < N; ++I)
    if (F->getParamDecl(I)->getName() == ParamName)
      return Call->getArg(I);
  return nullptr;
}

// histc(bins, min, max) reads the data's range on the host when min == max
// (both left at their default 0, or equal constants).
bool usesDataRange(const CallExpr *Call, const ASTContext &Ctx) {
  const Expr *Min = argumentFor(Call, "min"), *Max = argumentFor(Call, "max");
  auto IsDefault = [](const Expr *E) { return !E || isa<CXXDefaultArgExpr>(E); };
  if (IsDefault(Min) && IsDefault(Max))
    return true;
  Expr::EvalResult A, B;
  if (IsDefault(Min) || IsDefault(Max) || Min->isValueDependent() || Max->isValueDependent() ||
      !Min->EvaluateAsRValue(A, Ctx) || !Max->EvaluateAsRValue(B, Ctx))
    return false;
  if (A.Val.isInt() && B.Val.isInt())
    return A.Val.getInt() == B.Val.getInt();
  if (A.Val.isFloat() && B.Val.isFloat())
    return A.Val.getFloat().bitwiseIsEqual(B.Val.getFloat());
  return false;
}

// Whether a call of an op of this form synchronizes (the form's condition).
bool formSyncs(const OpEntry &E, const CallExpr *Call, const ASTContext &Ctx) {
  switch (E.form) {
  case OpForm::OneArgument:
    return Call->getNumArgs() + (receiverOf(Call) ? 1 : 0) == 1;
  case OpForm::NoOutputSize: {
    const Expr *Repeats = receiverOf(Call) && !argumentFor(Call, "repeats") ? receiverOf(Call)
                                                                           : argumentFor(Call, "repeats");
    const Expr *OutputSize = argumentFor(Call, "output_size");
    return Repeats && isTensorExpr(Repeats) && (!OutputSize || isa<CXXDefaultArgExpr>(OutputSize));
  }
  case OpForm::DefaultRange:
    return usesDataRange(Call, Ctx);
  case OpForm::NeverSyncs:
    return false;
  default:
    return true;
  }
}

// The ops this check reports as calls (boolean-mask indexing, subscripts and
// printing have matchers of their own).
bool isHiddenSyncCall(const OpEntry &E) {
  return E.rule == RuleId::HiddenSync && E.form != OpForm::BoolMaskIndex && E.form != OpForm::TensorSubscript &&
         E.form != OpForm::StreamInsertion;
}

// Whether the value of `Call` is thrown away: an expression statement of its
// own (or cast to void).
bool isResultDiscarded(const Expr *Call, ASTContext &Ctx) {
  const Stmt *Child = Call;
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(*Child);
    if (Parents.empty())
      return false;
    if (const auto *E = Parents[0].get<Expr>()) {
      const auto *Cast = dyn_cast<ExplicitCastExpr>(E);
      if (isa<ExprWithCleanups, ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr>(E) ||
          (Cast && Cast->getType()->isVoidType())) {
        Child = E;
        continue;
      }
      return false;
    }
    // A statement that holds the call as a sub-statement: a block, a loop or
    // if body. Conditions, returns and declarations are Stmts too, but they
    // reach the call through an expression or a VarDecl, handled above.
    const Stmt *P = Parents[0].get<Stmt>();
    if (!P)
      return false;
    if (isa<CompoundStmt>(P))
      return true;
    if (const auto *If = dyn_cast<IfStmt>(P))
      return Child == If->getThen() || Child == If->getElse();
    if (const auto *F = dyn_cast<ForStmt>(P))
      return Child == F->getBody();
    if (const auto *RF = dyn_cast<CXXForRangeStmt>(P))
      return Child == RF->getBody();
    if (const auto *W = dyn_cast<WhileStmt>(P))
      return Child == W->getBody();
    return false;
  }
}

// torch::nn::utils::clip_grad_norm_(params, max_norm) whose double is thrown
// away -> nosync::kernels::clip_grad_norm_(params, max_norm): the same norm
// (2-norm over every gradient), the same clip coefficient
// max_norm / (norm + 1e-6) applied when below 1, no sync. Only with the
// default norm_type and error_if_nonfinite (which would read the norm on the
// host).
std::optional<FixItHint> clipFix(const CallExpr *Call, ASTContext &Ctx) {
  if (Call->getNumArgs() < 2)
    return std::nullopt;
  for (unsigned I = 2; I < Call->getNumArgs(); ++I)
    if (!isa<CXXDefaultArgExpr>(Call->getArg(I)))
      return std::nullopt;
  const Expr *Callee = Call->getCallee()->IgnoreImplicit();
  std::optional<CharSourceRange> Name = fileRange(Callee->getSourceRange(), Ctx);
  if (!Name || !isa<DeclRefExpr>(Callee))
    return std::nullopt;
  return FixItHint::CreateReplacement(*Name, ::nosync::rules::kernel_names::kClipGradNorm);
}

}  // namespace

HiddenSyncCheck::HiddenSyncCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void HiddenSyncCheck::registerMatchers(MatchFinder *Finder) {
  registerDroppedCodeMatcher(Finder);
  using namespace torch_matchers;
  Finder->addMatcher(callExpr(opCall(isHiddenSyncCall)).bind("op"), this);
  Finder->addMatcher(callExpr(opCall({Op::MaskIndex})).bind("index"), this);
  Finder->addMatcher(cxxOperatorCallExpr(hasOverloadedOperatorName("[]"), hasArgument(0, tensorExpr()),
                                         hasArgument(1, tensorExpr()))
                         .bind("subscript"),
                     this);
  std::vector<StringRef> Printers = wordsOf(::nosync::rules::get(Op::Print).functions);
  Finder->addMatcher(cxxOperatorCallExpr(hasOverloadedOperatorName("<<"), hasArgument(1, tensorExpr()),
                                         callee(functionDecl(hasAnyName(Printers))))
                         .bind("print"),
                     this);
}

void HiddenSyncCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const auto &Nodes = Result.Nodes;
  const CallExpr *Call = nullptr;
  const OpEntry *Entry = nullptr;
  if ((Call = Nodes.getNodeAs<CallExpr>("op"))) {
    Entry = opOfCall(Call, isHiddenSyncCall);
    // In a condition the op's InCondition rule owns it (equal, allclose and
    // is_nonzero belong to nosync-bool-condition there).
    if (!Entry || Entry->static_rule(isInControlFlowCondition(Call, Ctx)) != RuleId::HiddenSync ||
        !formSyncs(*Entry, Call, Ctx))
      return;
  } else if ((Call = Nodes.getNodeAs<CallExpr>("index"))) {
    if (Call->getNumArgs() < 1 || !hasBoolMaskIndex(Call->getArg(0)))
      return;
    Entry = &::nosync::rules::get(Op::MaskIndex);
  } else if ((Call = Nodes.getNodeAs<CallExpr>("subscript"))) {
    Entry = &::nosync::rules::get(Op::TensorSubscript);
  } else if ((Call = Nodes.getNodeAs<CallExpr>("print"))) {
    Entry = &::nosync::rules::get(Op::Print);
  } else {
    return;
  }

  // Host tensors never sync. A call without a tensor operand (a factory such
  // as randperm) is placed by its own options; clip_grad_norm_ takes a list
  // we cannot place, so it is always reported. A subscript reads its index,
  // wherever the indexed tensor is.
  const Expr *Subject = Entry->form == OpForm::TensorSubscript ? Call->getArg(1) : receiverOf(Call);
  if (!Subject)
    for (const Expr *Arg : Call->arguments())
      if (isTensorExpr(Arg)) {
        Subject = Arg;
        break;
      }
  if (!Subject && isTensorExpr(Call))
    Subject = Call;
  if (Subject && isProvablyOnCpu(Subject, Ctx))
    return;

  Finding F;
  F.Site = Call;
  F.Loc = Entry->form == OpForm::TensorSubscript ? Subject->getBeginLoc()
          : isa<CXXOperatorCallExpr>(Call)        ? Call->getExprLoc()
                                                  : callNameLoc(Call);
  const FunctionDecl *Callee = Call->getDirectCallee();
  F.What = Entry->form == OpForm::BoolMaskIndex     ? "boolean-mask indexing"
           : Entry->form == OpForm::TensorSubscript ? "a tensor subscript"
           : Entry->form == OpForm::StreamInsertion ? "printing a tensor"
                                                 : "'" + Callee->getName().str() + "()'";
  F.Advice = std::string(Entry->advice);
  F.PlacedBy = Subject;
  if (Entry->op == Op::ClipGradNorm) {
    std::optional<FixItHint> Fix = isResultDiscarded(Call, Ctx) ? clipFix(Call, Ctx) : std::nullopt;
    if (Fix) {
      F.Fixes.push_back(*Fix);
      F.Fix = ::nosync::rules::FixId::ClipGradNorm;
      F.FixCallsKernels = true;
    } else if (!isResultDiscarded(Call, Ctx)) {
      F.Advice = std::string(::nosync::rules::get(::nosync::rules::FixId::ClipGradNorm).left_as_note);
    }
  }
  report(std::move(F), Ctx);
}

}  // namespace clang::tidy::nosync
