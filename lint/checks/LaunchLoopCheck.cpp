#include "LaunchLoopCheck.h"

#include "utils/AstHelpers.h"
#include "utils/ListLoopRewrite.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/SyncContext.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "nosync/kernel_names.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

namespace kn = ::nosync::rules::kernel_names;

// Tensor methods that touch only metadata or views: no kernel launch.
bool isMetadataMethod(StringRef Name) { return inGroup(OpGroup::MetadataMethod, Name); }

// Collects the kernel-launching tensor operations in a loop body. An op whose
// result is on the CPU (`torch::tensor(next, torch::kLong)`, a method of a
// host tensor) runs on the host and launches nothing on the GPU.
struct LaunchScan {
  explicit LaunchScan(ASTContext &Ctx) : Ctx(Ctx) {}

  llvm::StringSet<> Ops;   // names of the launching ops seen
  bool OnlyInit = true;    // every launch is torch::nn::init::*

  void scan(const Stmt *S) {
    if (!S)
      return;
    if (const auto *E = dyn_cast<Expr>(S))
      visit(E);
    for (const Stmt *Child : S->children())
      scan(Child);
  }

private:
  ASTContext &Ctx;

  bool onHost(const Expr *E) const { return placementOf(E, Ctx) == DeviceKind::Cpu; }

  void visit(const Expr *E) {
    // In a template, an operand of a dependent type leaves the operator
    // unresolved (`momentum.at(i) + grads.value().at(i) * delta` with `grads`
    // from a dependent call): a tensor operand still makes it a launch.
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      OverloadedOperatorKind K = Op->getOperator();
      if (K != OO_Equal && K != OO_Subscript && (isTensorExpr(Op) || Op->isTypeDependent()) &&
          llvm::any_of(Op->arguments(), [](const Expr *A) { return isTensorExpr(A); }))
        add(getOperatorSpelling(K), false);
      return;
    }
    if (const auto *B = dyn_cast<BinaryOperator>(E); B && B->isTypeDependent() && !B->isAssignmentOp() &&
                                                    (isTensorExpr(B->getLHS()) || isTensorExpr(B->getRHS()))) {
      add(B->getOpcodeStr(), false);
      return;
    }
    StringRef Method = tensorMethodName(E);
    if (!Method.empty()) {
      if (!isMetadataMethod(Method) && !onHost(E))
        add(Method, false);
      return;
    }
    const auto *Call = dyn_cast<CallExpr>(E);
    const FunctionDecl *F = Call ? Call->getDirectCallee() : nullptr;
    if (!F || !F->getDeclName().isIdentifier() || isa<CXXMethodDecl>(F))
      return;
    std::string Q = F->getQualifiedNameAsString();
    bool ReturnsTensor = isTensorType(F->getReturnType());
    if (StringRef(Q).starts_with("torch::nn::init::"))
      Ops.insert(F->getName());  // launches, but once at initialisation
    else if (ReturnsTensor && (StringRef(Q).starts_with("at::") || StringRef(Q).starts_with("torch::")) && !onHost(E))
      add(F->getName(), false);
  }

  void add(StringRef Name, bool IsInit) {
    Ops.insert(Name);
    OnlyInit = OnlyInit && IsInit;
  }
};

// A loop over a handful of tensors: at most four turns with constant bounds
// (`for (int i = 0; i < LOSS_TYPE_NUM; i++)` over two losses), or a range-for
// over a `std::array` or C array of at most four. Its launches cost what the
// same lines written out would; a multi-tensor kernel wins on a model's
// parameter list, not on a pair.
bool overFewTensors(const Stmt *Loop, const Expr *Range, ASTContext &Ctx) {
  if (isTinyLoop(Loop, Ctx))
    return true;
  QualType T = Range->getType().getNonReferenceType();
  if (const ConstantArrayType *A = Ctx.getAsConstantArrayType(T))
    return A->getSize().ule(4);
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(T->getAsCXXRecordDecl());
  if (!Spec || Spec->getQualifiedNameAsString() != "std::array" || Spec->getTemplateArgs().size() < 2 ||
      Spec->getTemplateArgs()[1].getKind() != TemplateArgument::Integral)
    return false;
  return Spec->getTemplateArgs()[1].getAsIntegral().getExtValue() <= 4;
}

// The multi-tensor replacement for what the loop body does.
std::string adviceFor(const LaunchScan &Scan) {
  auto Has = [&](OpGroup Group) {
    return llvm::any_of(Scan.Ops.keys(), [&](StringRef N) { return inGroup(Group, N); });
  };
  if (Has(OpGroup::NonFinitePredicate))
    return "check all tensors in one launch: " + std::string(kn::kNonfiniteFlag) + "(tensors)";
  if (Has(OpGroup::NormOp))
    return "compute the norms in one launch: " + std::string(kn::kL2NormPerTensor) + "(tensors) (or " +
           std::string(kn::kL2Norm) + " for the total), or at::_foreach_norm(tensors); to clip, " +
           std::string(kn::kClipGradNorm) + "(parameters, max_norm)";
  if (Has(OpGroup::SumOp))
    return "sum in one launch: " + std::string(kn::kSum) + "(tensors) (or " + std::string(kn::kSumPerTensor) +
           " per tensor)";
  if (Has(OpGroup::MeanOp))
    return "average in one launch: " + std::string(kn::kMean) + "(tensors)";
  if (Has(OpGroup::ElementwiseUpdate))
    return "update all tensors in one launch with the multi-tensor ops: at::_foreach_mul_(tensors, scale), "
           "at::_foreach_add_, at::_foreach_addcmul_, at::_foreach_zero_ (or " +
           std::string(kn::kClipGradNorm) + " for gradient clipping)";
  return "batch the per-tensor work into multi-tensor launches: at::_foreach_* ops or nosync::kernels";
}

}  // namespace

LaunchLoopCheck::LaunchLoopCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void LaunchLoopCheck::registerMatchers(MatchFinder *Finder) {
  using namespace torch_matchers;
  auto Container = expr(hasType(tensorContainerType()));
  Finder->addMatcher(cxxForRangeStmt(hasRangeInit(Container.bind("range"))).bind("loop"), this);
  // Index loops: `for (size_t i = 0; ...; ++i) params[i]...` where the
  // subscript is the loop's own induction variable (a loop merely
  // containing such a loop is not one).
  auto Induction = ignoringParenImpCasts(declRefExpr(to(varDecl(equalsBoundNode("ivar")))));
  auto Subscript = expr(anyOf(
      cxxOperatorCallExpr(hasOverloadedOperatorName("[]"), hasArgument(0, Container.bind("range")),
                          hasArgument(1, Induction)),
      cxxMemberCallExpr(callee(cxxMethodDecl(hasName("at"))), on(Container.bind("range")), hasArgument(0, Induction))));
  Finder->addMatcher(forStmt(hasLoopInit(declStmt(hasSingleDecl(varDecl().bind("ivar")))),
                             hasBody(hasDescendant(Subscript)))
                         .bind("loop"),
                     this);
}

void LaunchLoopCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const auto *Loop = Result.Nodes.getNodeAs<Stmt>("loop");
  const auto *Range = Result.Nodes.getNodeAs<Expr>("range");
  const Stmt *Body = nullptr;
  if (const auto *RF = dyn_cast<CXXForRangeStmt>(Loop))
    Body = RF->getBody();
  else if (const auto *For = dyn_cast<ForStmt>(Loop))
    Body = For->getBody();

  LaunchScan Scan(Ctx);
  Scan.scan(Body);
  if (Scan.Ops.empty() || Scan.OnlyInit || overFewTensors(Loop, Range, Ctx))
    return;
  // A loop that runs once (constructor, setup function, main() outside its
  // loops) launches its kernels once: not worth a finding at any level.
  if (contextAnalyzer().classify(Loop, Ctx).Kind == ContextKind::OneOff)
    return;
  // Host tensors (a collate function padding the examples of a batch): their
  // ops run on the CPU and launch nothing on the GPU.
  if (placementOf(Range, Ctx) == DeviceKind::Cpu)
    return;

  Finding F;
  F.Site = Loop;
  F.Loc = Loop->getBeginLoc();
  F.What = "loop over '" + sourceText(Range, Ctx).str() + "'";
  F.Advice = adviceFor(Scan);
  if (std::optional<ListLoopRewrite> R = rewriteListLoop(Loop, Range, Ctx)) {
    F.Fixes.push_back(R->Edit);
    F.Fix = R->Fix;
    F.FixCallsKernels = R->CallsKernels;
  }
  report(std::move(F), Ctx);
}

}  // namespace clang::tidy::nosync
