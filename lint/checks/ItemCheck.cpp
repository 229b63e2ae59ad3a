#include "ItemCheck.h"

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

}  // namespace

ItemCheck::ItemCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, ::nosync::rules::RuleId::Item) {}

void ItemCheck::registerMatchers(MatchFinder *Finder) {
  Finder->addMatcher(cxxMemberCallExpr(torch_matchers::tensorMethodCall({"item"})).bind("item"), this);
  // x.cpu().data_ptr<float>()[0] and *x.cpu().data_ptr<float>()
  auto HostCopy = cxxMemberCallExpr(anyOf(torch_matchers::tensorMethodCall({"cpu"}),
                                          torch_matchers::tensorMethodCall({"to"})))
                      .bind("cpu");
  auto PtrOfHostCopy = ignoringParenImpCasts(
      cxxMemberCallExpr(torch_matchers::tensorMethodCall({"data_ptr", "data", "const_data_ptr"}),
                        on(ignoringImplicit(HostCopy))));
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
  if (isInControlFlowCondition(Call, Ctx) || isProvablyOnCpu(receiverOf(Call), Ctx))
    return;
  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'item()'";
  F.Value = receiverOf(Call);
  F.Advice = adviceFor(Call, Ctx);
  if (const CXXMemberCallExpr *Conv = scalarConversionOf(Call, Ctx)) {
    if (isInControlFlowCondition(Conv, Ctx))
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
  if (tensorMethodName(CpuCall) == "to") {
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
  F.Advice = "this copies the whole tensor to read one element; if you need the value on the host, use "
             ".item<T>() on a one-element slice, and better keep it on the device";
  report(F, Ctx);
}

}  // namespace clang::tidy::nosync
