#include "DeviceToHostCheck.h"

#include "utils/AstHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/RawCopy.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

std::string advice() { return std::string(::nosync::rules::get(Op::Cpu).advice); }

bool isMove(const OpEntry &E) { return E.op == Op::Cpu || E.op == Op::To; }

// `x.cpu().data_ptr<T>()[i]` or `x.cpu().item()`: a host read of the copy
// (nosync-item's ElementRead and Item, which outrank the copy).
bool feedsElementRead(const CXXMemberCallExpr *Call, ASTContext &Ctx) {
  const DynTypedNode Node = DynTypedNode::create(*Call);
  DynTypedNodeList Parents = Ctx.getParents(Node);
  // Up through implicit nodes, and elements and views of the copy
  // (x.cpu()[0], x.cpu().squeeze()), to the call that reads it.
  while (!Parents.empty() && Parents[0].get<Expr>()) {
    const Expr *P = Parents[0].get<Expr>();
    const auto *View = dyn_cast<CXXMemberCallExpr>(P);
    const auto *Element = dyn_cast<CXXOperatorCallExpr>(P);
    bool Through = isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr, MemberExpr>(P) ||
                   (View && isTensorType(View->getType()) && !tensorMethodName(View).empty()) ||
                   (Element && Element->getOperator() == OO_Subscript && isTensorType(Element->getType()));
    if (!Through)
      break;
    Parents = Ctx.getParents(Parents[0]);
  }
  const auto *Ptr = Parents.empty() ? nullptr : Parents[0].get<CXXMemberCallExpr>();
  // x.cpu().item<float>(): the value read is the point; nosync-item reports it.
  if (opOfCall(Ptr, [](const OpEntry &E) { return E.rule == RuleId::Item && E.form == OpForm::Call; }))
    return true;
  if (!opOfCall(Ptr, [](const OpEntry &E) { return E.op == Op::ElementRead; }))
    return false;
  DynTypedNodeList Up = Ctx.getParents(*Ptr);
  while (!Up.empty() && Up[0].get<ImplicitCastExpr>())
    Up = Ctx.getParents(Up[0]);
  if (Up.empty())
    return false;
  if (Up[0].get<ArraySubscriptExpr>())
    return true;
  const auto *Deref = Up[0].get<UnaryOperator>();
  return Deref && Deref->getOpcode() == UO_Deref;
}

bool isSerializationCall(const CallExpr *Call) {
  const FunctionDecl *F = Call ? Call->getDirectCallee() : nullptr;
  return F && inGroup(OpGroup::Serialization, F->getQualifiedNameAsString());
}

// The copy is written out (torch::save(t.cpu(), path), or through a local:
// auto w = t.cpu(); torch::save(w, path)): an export, whatever loop it is in.
bool feedsSerialization(const CXXMemberCallExpr *Call, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(*Call);
  while (!Parents.empty() && Parents[0].get<Expr>() && !Parents[0].get<CallExpr>())
    Parents = Ctx.getParents(Parents[0]);
  if (!Parents.empty() && isSerializationCall(Parents[0].get<CallExpr>()))
    return true;
  const auto *Var = Parents.empty() ? nullptr : Parents[0].get<VarDecl>();
  const auto *Fn = Var ? dyn_cast_or_null<FunctionDecl>(Var->getParentFunctionOrMethod()) : nullptr;
  if (!Fn || !Fn->hasBody())
    return false;
  auto Use = ignoringImplicit(declRefExpr(to(varDecl(equalsNode(Var)))));
  auto Uses = match(stmt(forEachDescendant(callExpr(hasAnyArgument(Use)).bind("use"))), *Fn->getBody(), Ctx);
  return llvm::any_of(Uses, [](const BoundNodes &N) { return isSerializationCall(N.getNodeAs<CallExpr>("use")); });
}

}  // namespace

DeviceToHostCheck::DeviceToHostCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void DeviceToHostCheck::registerMatchers(MatchFinder *Finder) {
  Finder->addMatcher(callExpr(opCall({Op::CudaMemcpy})).bind("rawcopy"), this);
  registerDroppedCodeMatcher(Finder);
  Finder->addMatcher(cxxMemberCallExpr(opCall(isMove)).bind("move"), this);
  Finder->addMatcher(cxxMemberCallExpr(opCall({Op::CopyInto})).bind("copy"), this);
  Finder->addMatcher(
      cxxOperatorCallExpr(torch_matchers::tensorCopyAssignment(wordsOf(::nosync::rules::get(Op::AssignInto).methods)))
          .bind("assign"),
      this);
}

void DeviceToHostCheck::check(const MatchFinder::MatchResult &Result) {
  if (const auto *Raw = Result.Nodes.getNodeAs<CallExpr>("rawcopy")) {
    if (std::optional<Finding> F = rawCopyFinding(Raw, Id, *Result.Context))
      report(std::move(*F), *Result.Context);
    return;
  }
  if (const auto *Move = Result.Nodes.getNodeAs<CXXMemberCallExpr>("move"))
    checkMove(Move, *Result.Context);
  else if (const auto *Copy = Result.Nodes.getNodeAs<CXXMemberCallExpr>("copy"))
    checkCopyInto(Copy, *Result.Context);
  else if (const auto *Assign = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("assign"))
    checkAssignment(Assign, *Result.Context);
}

void DeviceToHostCheck::checkMove(const CXXMemberCallExpr *Call, ASTContext &Ctx) {
  const OpEntry *Move = opOfCall(Call, isMove);
  if (!Move)
    return;
  if (Move->op == Op::To) {
    const Expr *Dev = deviceArgOfTo(Call);
    if (!Dev || classifyDevice(Dev, Ctx) != DeviceKind::Cpu)
      return;  // dtype conversions, to(other), moves to the GPU
    if (nonBlockingArg(Call, Ctx) != NonBlocking::No)
      return;  // already asynchronous; the reader must wait on an event
  }
  // A one-element read through the copy is reported once, by the op that
  // outranks the other (ElementRead: nosync-item).
  if (isProvablyOnCpu(receiverOf(Call), Ctx) ||
      (::nosync::rules::outranks(Op::ElementRead, Move->op) && feedsElementRead(Call, Ctx)) ||
      feedsSerialization(Call, Ctx))
    return;
  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.What = "'" + tensorMethodName(Call).str() + "()' to the CPU";
  F.Value = F.PlacedBy = receiverOf(Call);
  F.Advice = advice();
  report(std::move(F), Ctx);
}

void DeviceToHostCheck::checkCopyInto(const CXXMemberCallExpr *Copy, ASTContext &Ctx) {
  if (Copy->getNumArgs() < 1 || nonBlockingArg(Copy, Ctx) != NonBlocking::No)
    return;
  // Only a copy from the device into host memory blocks the host here.
  if (placementOf(receiverOf(Copy), Ctx) != DeviceKind::Cpu)
    return;
  // From an unknown source into a pinned buffer is as likely host-to-host
  // staging (the nosync-pageable-h2d fix) as a read-back: only report it when
  // the source is known to be on the GPU.
  DeviceKind From = placementOf(Copy->getArg(0), Ctx);
  if (From == DeviceKind::Cpu || (From == DeviceKind::Unknown && isPinned(receiverOf(Copy), Ctx)))
    return;
  Finding F;
  F.Site = Copy;
  F.Loc = callNameLoc(Copy);
  F.What = "'copy_()' into a CPU tensor";
  F.Value = Copy->getArg(0);
  F.Advice = advice();
  report(std::move(F), Ctx);
}

void DeviceToHostCheck::checkAssignment(const CXXOperatorCallExpr *Assign, ASTContext &Ctx) {
  // `cpu_buf[i] = t` assembles host data far more often than it reads the
  // GPU back: only a source known to be on the GPU is reported.
  const Expr *Src = Assign->getArg(1);
  if (placementOf(Assign->getArg(0), Ctx) != DeviceKind::Cpu || placementOf(Src, Ctx) != DeviceKind::Cuda)
    return;
  Finding F;
  F.Site = Assign;
  F.Loc = Assign->getOperatorLoc();
  F.What = "assigning a GPU tensor into a CPU tensor ('dst[i] = src' copies)";
  F.Value = Src;
  F.Advice = advice();
  report(std::move(F), Ctx);
}

}  // namespace clang::tidy::nosync
