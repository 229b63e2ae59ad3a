#include "ItemCheck.h"

#include "utils/AstHelpers.h"
#include "utils/FixHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

// c10::Scalar conversions that `.item<T>()` spells directly: item<T>() is
// defined as item().to<T>(), so the rewrite keeps behaviour exactly.
StringRef itemTypeForConversion(StringRef Conversion) {
  return llvm::StringSwitch<StringRef>(Conversion)
      .Case("toFloat", "float")
      .Case("toDouble", "double")
      .Case("toLong", "int64_t")
      .Case("toInt", "int")
      .Case("toBool", "bool")
      .Default("");
}

// The Scalar conversion call wrapped around an untyped `x.item()`, if any.
const CXXMemberCallExpr *scalarConversionOf(const CXXMemberCallExpr *Item, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(*Item);
  while (!Parents.empty()) {
    if (const auto *Member = Parents[0].get<MemberExpr>()) {
      DynTypedNodeList Up = Ctx.getParents(*Member);
      const auto *Conv = Up.empty() ? nullptr : Up[0].get<CXXMemberCallExpr>();
      const CXXMethodDecl *M = Conv ? Conv->getMethodDecl() : nullptr;
      if (M && M->getParent()->getQualifiedNameAsString() == "c10::Scalar" &&
          M->getDeclName().isIdentifier() && !itemTypeForConversion(M->getName()).empty())
        return Conv;
      return nullptr;
    }
    const auto *E = Parents[0].get<Expr>();
    if (!E || !(isa<MaterializeTemporaryExpr, CXXBindTemporaryExpr, ImplicitCastExpr>(E)))
      return nullptr;
    Parents = Ctx.getParents(*E);
  }
  return nullptr;
}

// A hint for the most common shape: summing a per-step loss on the host.
std::string adviceFor(const CXXMemberCallExpr *Call, ASTContext &Ctx) {
  const auto *Root = dyn_cast<Expr>(statementRoot(Call, Ctx));
  const auto *Assign = Root ? dyn_cast<CompoundAssignOperator>(Root->IgnoreImplicit()) : nullptr;
  if (Assign && Assign->getOpcode() == BO_AddAssign)
    return "accumulate on the device instead: keep a tensor accumulator (acc += " +
           sourceText(receiverOf(Call), Ctx).str() + ".detach()) and call .item() once after the loop";
  return "";
}

// Host reads of a tensor value: item() (the rows of rule nosync-item that are
// plain calls).
bool isValueRead(const OpEntry &E) {
  return E.rule == RuleId::Item && E.form == OpForm::Call && E.is_static();
}

// Every reference to `V` in `Body`.
std::vector<const DeclRefExpr *> usesOf(const VarDecl *V, const Stmt *Body) {
  struct Scan : RecursiveASTVisitor<Scan> {
    const VarDecl *V;
    std::vector<const DeclRefExpr *> Uses;
    bool VisitDeclRefExpr(DeclRefExpr *D) {
      if (D->getDecl() == V)
        Uses.push_back(D);
      return true;
    }
  } S;
  S.V = V;
  S.TraverseStmt(const_cast<Stmt *>(Body));
  return S.Uses;
}

// `stream << v`: the value is only printed there.
bool isPrinted(const DeclRefExpr *Use, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(*Use);
  while (!Parents.empty() && Parents[0].get<ImplicitCastExpr>())
    Parents = Ctx.getParents(*Parents[0].get<ImplicitCastExpr>());
  const auto *Op = Parents.empty() ? nullptr : Parents[0].get<CXXOperatorCallExpr>();
  return Op && Op->getOperator() == OO_LessLess && Op->getNumArgs() == 2 &&
         stripImplicit(Op->getArg(1)) == Use;
}

// The device tensor a host scalar was read from: `x` for `v = x.item<T>()`,
// `x.sqrt()` for `v = std::sqrt(x.item<T>())`; "" for anything else.
std::string deviceValueOf(const Expr *Init, const Expr *Read, ASTContext &Ctx) {
  const Expr *Tensor = receiverOf(Read);
  StringRef Text = sourceText(Tensor, Ctx);
  if (Text.empty())
    return "";
  bool Simple = isa<DeclRefExpr, MemberExpr, CallExpr>(stripImplicit(Tensor));
  std::string Value = Simple ? Text.str() : "(" + Text.str() + ")";
  Init = stripImplicit(Init);
  if (Init == stripImplicit(Read))
    return Value;
  const auto *Sqrt = dyn_cast<CallExpr>(Init);
  const FunctionDecl *F = Sqrt ? Sqrt->getDirectCallee() : nullptr;
  if (F && F->getDeclName().isIdentifier() && F->getName() == "sqrt" && Sqrt->getNumArgs() == 1 &&
      stripImplicit(Sqrt->getArg(0)) == stripImplicit(Read))
    return Value + ".sqrt()";
  return "";
}

// `double v = x.item<double>();` (or std::sqrt of it) in a loop, with `v`
// used once, in a print: a MetricAccumulator declared before the loop takes
// `x` every step and is polled where `v` was printed. All three edits or
// none.
std::vector<FixItHint> metricFix(const CallExpr *Read, ASTContext &Ctx) {
  const Expr *Root = dyn_cast<Expr>(statementRoot(Read, Ctx));
  DynTypedNodeList Parents = Ctx.getParents(*Root);
  const auto *V = Parents.empty() ? nullptr : Parents[0].get<VarDecl>();
  if (!V || V->getInit() != Root || !V->getType()->isRealFloatingType() || !V->getDeclName().isIdentifier())
    return {};
  DynTypedNodeList DeclParents = Ctx.getParents(*V);
  const auto *DS = DeclParents.empty() ? nullptr : DeclParents[0].get<DeclStmt>();
  const Stmt *Loop = DS && DS->isSingleDecl() ? outermostLoop(DS, Ctx) : nullptr;
  const Stmt *Body = Loop ? enclosingBody(Loop, Ctx) : nullptr;
  std::string Value = deviceValueOf(V->getInit(), Read, Ctx);
  std::string Device = Loop ? deviceVariableBefore(Loop, Ctx) : "";
  if (!Body || Value.empty() || Device.empty())
    return {};
  std::vector<const DeclRefExpr *> Uses = usesOf(V, Body);
  std::optional<CharSourceRange> DeclRange = fileRange(DS->getSourceRange(), Ctx);
  if (Uses.size() != 1 || !isPrinted(Uses[0], Ctx) || !DeclRange)
    return {};
  std::optional<CharSourceRange> UseRange = fileRange(Uses[0]->getSourceRange(), Ctx);
  std::string Name = V->getName().str();
  std::string Metric = freshName(Name + "_metric", Body, Ctx);
  std::optional<FixItHint> Declare = insertStatementBefore(
      Loop, std::string(::nosync::rules::kernel_names::kMetricAccumulator) + " " + Metric + "(" + Device + ");", Ctx);
  if (!Declare || !UseRange)
    return {};
  return {*Declare, FixItHint::CreateReplacement(*DeclRange, Metric + ".add(\"" + Name + "\", " + Value + ");"),
          FixItHint::CreateReplacement(*UseRange, Metric + ".poll_interval(\"" + Name + "\")")};
}

}  // namespace

ItemCheck::ItemCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void ItemCheck::registerMatchers(MatchFinder *Finder) {
  registerDroppedCodeMatcher(Finder);
  Finder->addMatcher(cxxMemberCallExpr(opCall(isValueRead)).bind("item"), this);
  // x.cpu().data_ptr<float>()[0] and *x.cpu().data_ptr<float>()
  auto HostCopy = cxxMemberCallExpr(opCall({Op::Cpu, Op::To})).bind("cpu");
  auto PtrOfHostCopy =
      ignoringParenImpCasts(cxxMemberCallExpr(opCall({Op::ElementRead}), on(ignoringImplicit(HostCopy))));
  Finder->addMatcher(arraySubscriptExpr(hasBase(PtrOfHostCopy)), this);
  Finder->addMatcher(unaryOperator(hasOperatorName("*"), hasUnaryOperand(PtrOfHostCopy)), this);
}

void ItemCheck::check(const MatchFinder::MatchResult &Result) {
  if (const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("item"))
    checkItemCall(Call, *Result.Context);
  else if (const auto *Cpu = Result.Nodes.getNodeAs<CXXMemberCallExpr>("cpu"))
    checkHostElementRead(Cpu, *Result.Context);
}

void ItemCheck::checkItemCall(const CXXMemberCallExpr *Call, ASTContext &Ctx) {
  const OpEntry *Read = opOfCall(Call, isValueRead);
  // In a condition the read belongs to the op's InCondition rule.
  auto OwnedHere = [&](const Expr *Value) {
    return Read->static_rule(isInControlFlowCondition(Value, Ctx)) == RuleId::Item;
  };
  if (!Read || !OwnedHere(Call))
    return;
  // A CPU tensor's item() costs nothing, unless the CPU tensor is a copy made
  // right here of one that may be on the GPU (x.cpu().item()): then this read
  // is the sync, reported once, as an item read.
  if (isProvablyOnCpu(receiverOf(Call), Ctx) && !isHostCopyOfDeviceValue(receiverOf(Call), Ctx))
    return;
  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'item()'";
  F.Value = F.PlacedBy = receiverOf(Call);
  F.Advice = adviceFor(Call, Ctx);
  if (const CXXMemberCallExpr *Conv = scalarConversionOf(Call, Ctx)) {
    if (!OwnedHere(Conv))
      return;
    StringRef Type = itemTypeForConversion(Conv->getMethodDecl()->getName());
    F.What = "'item()." + Conv->getMethodDecl()->getName().str() + "()'";
    SourceRange Old(F.Loc, Conv->getEndLoc());
    if (Old.getBegin().isFileID() && Old.getEnd().isFileID())
      F.Fixes.push_back(FixItHint::CreateReplacement(Old, ("item<" + Type + ">()").str()));
  }
  if (std::vector<FixItHint> Metric = metricFix(Call, Ctx); !Metric.empty()) {
    F.Fixes = std::move(Metric);
    F.Fix = ::nosync::rules::FixId::MetricAccumulator;
    F.FixCallsKernels = true;
  }
  report(F, Ctx);
}

void ItemCheck::checkHostElementRead(const CXXMemberCallExpr *CpuCall, ASTContext &Ctx) {
  // `.to(...)` only counts when it moves to the CPU.
  if (opOfCall(CpuCall, [](const OpEntry &E) { return E.op == Op::To; })) {
    const Expr *Dev = deviceArgOfTo(CpuCall);
    if (!Dev || classifyDevice(Dev, Ctx) != DeviceKind::Cpu)
      return;
  }
  if (isProvablyOnCpu(receiverOf(CpuCall), Ctx))
    return;
  Finding F;
  F.Site = CpuCall;
  F.Loc = callNameLoc(CpuCall);
  F.What = "'" + tensorMethodName(CpuCall).str() + "()' to read one element";
  F.Value = F.PlacedBy = receiverOf(CpuCall);
  F.Advice = std::string(::nosync::rules::get(Op::ElementRead).advice);
  report(F, Ctx);
}

}  // namespace clang::tidy::nosync
