#include "utils/RawCopy.h"

#include "utils/AstHelpers.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Type.h"

namespace clang::tidy::nosync {
namespace {

// The cudaMemcpyKind enumerator an argument names, by its name: the value
// cudaMemcpyDefault (4) would need the pointers.
StringRef kindName(const Expr *Kind) {
  const auto *Ref = dyn_cast<DeclRefExpr>(Kind->IgnoreParenImpCasts());
  const auto *Enumerator = Ref ? dyn_cast<EnumConstantDecl>(Ref->getDecl()) : nullptr;
  return Enumerator && Enumerator->getDeclName().isIdentifier() ? Enumerator->getName() : "";
}

// A container whose data() is ordinary heap or stack memory.
bool isHostContainer(QualType T) {
  const CXXRecordDecl *R = T.getNonReferenceType()->getAsCXXRecordDecl();
  if (!R)
    return false;
  std::string Q = R->getQualifiedNameAsString();
  return Q == "std::vector" || Q == "std::array" || Q == "std::basic_string";
}

bool isPageable(const Expr *E, ASTContext &Ctx, int Depth) {
  if (!E || Depth > 4)
    return false;
  E = E->IgnoreParenCasts();
  // v.data(), t.data_ptr<float>()
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *M = Call->getMethodDecl();
    if (!M || !M->getDeclName().isIdentifier())
      return false;
    const Expr *Object = Call->getImplicitObjectArgument();
    if (M->getName() == "data" && isHostContainer(Object->getType()))
      return true;
    return (M->getName() == "data_ptr" || M->getName() == "mutable_data_ptr") && isTensorExpr(Object) &&
           isProvablyOnCpu(Object, Ctx) && !isPinned(Object, Ctx);
  }
  // &v[0]
  if (const auto *Address = dyn_cast<UnaryOperator>(E); Address && Address->getOpcode() == UO_AddrOf) {
    const auto *Element = dyn_cast<CXXOperatorCallExpr>(Address->getSubExpr()->IgnoreParens());
    return Element && Element->getOperator() == OO_Subscript && isHostContainer(Element->getArg(0)->getType());
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(Ref->getDecl());
    if (!V || isa<ParmVarDecl>(V))
      return false;
    if (V->getType()->isConstantArrayType())  // float out[16]
      return true;
    return V->getType()->isPointerType() && V->getInit() && isPageable(V->getInit(), Ctx, Depth + 1);
  }
  return false;
}

}  // namespace

std::optional<RawCopy> rawCopyOf(const CallExpr *Call) {
  if (!Call || Call->getNumArgs() < 4)
    return std::nullopt;
  const FunctionDecl *F = Call->getDirectCallee();
  StringRef Kind = kindName(Call->getArg(3));
  RawCopy Copy;
  Copy.Async = F && F->getDeclName().isIdentifier() && F->getName().ends_with("Async");
  if (Kind == "cudaMemcpyDeviceToHost") {
    Copy.Rule = RuleId::DeviceToHost;
    Copy.Host = Call->getArg(0);
  } else if (Kind == "cudaMemcpyHostToDevice") {
    Copy.Rule = RuleId::PageableH2D;
    Copy.Host = Call->getArg(1);
  } else {
    return std::nullopt;
  }
  return Copy;
}

bool hostWaitsFor(const RawCopy &Copy, ASTContext &Ctx) { return !Copy.Async || isPageable(Copy.Host, Ctx, 0); }

std::optional<Finding> rawCopyFinding(const CallExpr *Call, RuleId Rule, ASTContext &Ctx) {
  std::optional<RawCopy> Copy = rawCopyOf(Call);
  if (!Copy || Copy->Rule != Rule || !hostWaitsFor(*Copy, Ctx))
    return std::nullopt;
  bool Download = Rule == RuleId::DeviceToHost;
  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'" + Call->getDirectCallee()->getName().str() + "()' " +
           (Download ? (Copy->Async ? "into pageable host memory" : "from the device to the host")
                     : (Copy->Async ? "from pageable host memory to the device" : "from the host to the device"));
  F.Advice = std::string(::nosync::rules::get(Op::CudaMemcpy).advice);
  return F;
}

}  // namespace clang::tidy::nosync
