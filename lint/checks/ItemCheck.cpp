#include "ItemCheck.h"

#include "utils/AstHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
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
  F.Value = receiverOf(Call);
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
  F.Value = receiverOf(CpuCall);
  F.Advice = std::string(::nosync::rules::get(Op::ElementRead).advice);
  report(F, Ctx);
}

}  // namespace clang::tidy::nosync
