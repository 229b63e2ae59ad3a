#include "PageableH2DCheck.h"

#include "utils/AstHelpers.h"
#include "utils/FixHelpers.h"
#include "utils/OpTable.h"
#include "utils/Placement.h"
#include "utils/RawCopy.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

std::string stagingAdvice() { return std::string(::nosync::rules::get(Op::Cuda).advice); }

bool isUpload(const OpEntry &E) { return E.op == Op::To || E.op == Op::Cuda; }

// torch::zeros_like(t), ones_like, empty_like, full_like, rand_like, ...
bool isLikeFactory(const Expr *E) {
  const auto *Call = dyn_cast<CallExpr>(stripImplicit(E));
  const FunctionDecl *F = Call ? Call->getDirectCallee() : nullptr;
  return F && F->getDeclName().isIdentifier() && F->getName().ends_with("_like");
}

// Factories whose values do not depend on where they run: building them on
// the device gives the same tensor, so the rewrite is behaviour-preserving.
bool isDeterministicFactory(const FunctionDecl *F) {
  std::string Q = F->getQualifiedNameAsString();
  return (StringRef(Q).starts_with("torch::") || StringRef(Q).starts_with("at::")) &&
         F->getDeclName().isIdentifier() && inGroup(OpGroup::ConstantFactory, F->getName());
}

bool isRandomFactory(const FunctionDecl *F) {
  return F->getDeclName().isIdentifier() && inGroup(OpGroup::RandomFactory, F->getName());
}

// `torch::tensor({})`: a tensor of no elements, whose copy moves no bytes
// (an accumulator reset before it is concatenated to).
bool holdsNoElements(const Expr *E) {
  const auto *Call = dyn_cast_or_null<CallExpr>(stripImplicit(E));
  const FunctionDecl *F = Call ? Call->getDirectCallee() : nullptr;
  if (!F || !F->getDeclName().isIdentifier() || F->getName() != "tensor" || Call->getNumArgs() == 0)
    return false;
  const Expr *Data = Call->getArg(0)->IgnoreImplicit();
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Data))
    return Construct->getNumArgs() == 0 && Construct->isListInitialization();
  const auto *List = dyn_cast<InitListExpr>(Data);
  return List && List->getNumInits() == 0;
}

// `torch::tensor(0.0f, device)`: one scalar, not a list or a vector.
// TensorDataContainer makes it with at::scalar_tensor, an empty tensor on the
// device filled by a kernel that takes the value as its argument: no copy.
bool holdsOneScalar(const CallExpr *Call) {
  if (Call->getNumArgs() == 0)
    return false;
  const Expr *Data = Call->getArg(0)->IgnoreImplicit();
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Data);
      Construct && Construct->getNumArgs() == 1 && !Construct->isListInitialization())
    Data = Construct->getArg(0)->IgnoreImplicit();
  return !isa<InitListExpr>(Data) && Data->getType()->isArithmeticType();
}

// `critic.forward(x).to(device)`, `out[0].toTensor().select(0, 0).to(dvc)`:
// a module's output (or a scripted module's, through its IValue), looked at
// through the views and indexing taken of it. It is made where the module's
// weights are, in training and inference code the device it is moved to.
bool isModelOutput(const Expr *E, int Depth = 0) {
  E = stripImplicit(E);
  if (!E || Depth > 8)
    return false;
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *M = Member->getMethodDecl();
    if (M && M->getDeclName().isIdentifier() &&
        llvm::is_contained({"forward", "toTensor", "toTuple", "toTensorList"}, M->getName()))
      return true;
    return isModelOutput(Member->getImplicitObjectArgument(), Depth + 1);
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E); Op && Op->getOperator() == OO_Subscript)
    return isModelOutput(Op->getArg(0), Depth + 1);
  if (const auto *Call = dyn_cast<CallExpr>(E); Call && Call->getNumArgs() >= 1 && Call->getDirectCallee() &&
                                                Call->getDirectCallee()->getQualifiedNameAsString() == "std::get")
    return isModelOutput(Call->getArg(0), Depth + 1);
  return false;
}

// The factory call a `.to(device)` is made on, if the receiver is one.
const CallExpr *factoryReceiver(const CXXMemberCallExpr *To) {
  const auto *Call = dyn_cast_or_null<CallExpr>(receiverOf(To));
  if (!Call || isa<CXXMemberCallExpr>(Call) || !Call->getDirectCallee())
    return nullptr;
  const FunctionDecl *F = Call->getDirectCallee();
  return isDeterministicFactory(F) || isRandomFactory(F) ? Call : nullptr;
}

// `torch::ones({2, 2}).to(device)` -> `torch::ones({2, 2}, device)`; with
// options already given, `torch::zeros({3}, torch::kLong).to(device)` ->
// `torch::zeros({3}, at::TensorOptions(torch::kLong).device(device))`.
// `torch::arange(n).to(other)` (`Like`) -> `torch::arange(n, other.options())`:
// the other tensor's options carry its dtype and its device.
std::optional<FixItHint> createOnDeviceFix(const CXXMemberCallExpr *To, const CallExpr *Factory,
                                           const Expr *DeviceArg, ASTContext &Ctx, bool Like = false) {
  if (To->getNumArgs() == 0 || !isDeterministicFactory(Factory->getDirectCallee()))
    return std::nullopt;
  // Only `.to(device)` with nothing else (non_blocking, copy) given.
  for (unsigned I = 1; I < To->getNumArgs(); ++I)
    if (!isa<CXXDefaultArgExpr>(To->getArg(I)))
      return std::nullopt;
  std::string Device = sourceText(DeviceArg, Ctx).str();
  if (Like && !Device.empty())
    Device += ".options()";
  StringRef FactoryText = sourceText(Factory, Ctx);
  if (Device.empty() || FactoryText.empty() || !FactoryText.ends_with(")") || To->getBeginLoc().isMacroID())
    return std::nullopt;
  const FunctionDecl *F = Factory->getDirectCallee();
  std::string Replacement;
  for (unsigned I = 0, N = std::min(F->getNumParams(), Factory->getNumArgs()); I < N; ++I) {
    if (!StringRef(F->getParamDecl(I)->getType().getAsString()).contains("TensorOptions"))
      continue;
    const Expr *Options = Factory->getArg(I);
    if (isa<CXXDefaultArgExpr>(Options)) {
      Replacement = FactoryText.drop_back().str() + ", " + Device + ")";
    } else {
      StringRef OptionsText = sourceText(Options, Ctx);
      // `.device(x)` takes a Device, not another tensor's options.
      if (OptionsText.empty() || Like || !isDeviceTyped(DeviceArg))
        return std::nullopt;
      std::string NewOptions = "at::TensorOptions(" + OptionsText.str() + ").device(" + Device + ")";
      CharSourceRange OptRange = CharSourceRange::getTokenRange(Options->getSourceRange());
      const SourceManager &SM = Ctx.getSourceManager();
      unsigned Begin = SM.getFileOffset(OptRange.getBegin()) - SM.getFileOffset(Factory->getBeginLoc());
      Replacement = FactoryText.substr(0, Begin).str() + NewOptions +
                    FactoryText.substr(Begin + OptionsText.size()).str();
    }
    return FixItHint::CreateReplacement(To->getSourceRange(), Replacement);
  }
  return std::nullopt;
}

// `x.to(device)` in a loop -> `x_stager.stage(x)`, with
// `nosync::kernels::PinnedStager x_stager(device);` declared before the
// loop: the same values (stage() copies the host tensor into a pinned buffer
// before it returns, and is x.to(device) for a tensor already there or a CPU
// device), without the pageable copy's host block. Only a plain
// `.to(device)` whose device is already known before the loop.
std::vector<FixItHint> stagerFix(const CXXMemberCallExpr *To, const Expr *DeviceArg, ASTContext &Ctx) {
  // A stager takes a Device; `.to(options)` may change the dtype too.
  if (tensorMethodName(To) != "to" || To->getNumArgs() == 0 || !isDeviceTyped(DeviceArg))
    return {};
  for (unsigned I = 1; I < To->getNumArgs(); ++I)
    if (!isa<CXXDefaultArgExpr>(To->getArg(I)))
      return {};
  const Stmt *Loop = outermostLoop(To, Ctx);
  const Expr *Source = receiverOf(To);
  StringRef Device = sourceText(DeviceArg, Ctx), SourceText = sourceText(Source, Ctx);
  std::optional<CharSourceRange> Whole = fileRange(To->getSourceRange(), Ctx);
  if (!Loop || !Whole || Device.empty() || SourceText.empty() || !isHoistableBefore(DeviceArg, Loop, Ctx))
    return {};
  std::string Base = initializedVariable(To, Ctx);
  std::string Stager = freshName((Base.empty() ? identifierFrom(SourceText) : Base) + "_stager",
                                 enclosingBody(Loop, Ctx), Ctx);
  std::optional<FixItHint> Declare = insertStatementBefore(
      Loop, std::string(::nosync::rules::kernel_names::kPinnedStager) + " " + Stager + "(" + Device.str() + ");", Ctx);
  if (!Declare)
    return {};
  return {*Declare, FixItHint::CreateReplacement(*Whole, Stager + ".stage(" + SourceText.str() + ")")};
}

}  // namespace

PageableH2DCheck::PageableH2DCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, Id) {}

void PageableH2DCheck::registerMatchers(MatchFinder *Finder) {
  Finder->addMatcher(callExpr(opCall({Op::CudaMemcpy})).bind("rawcopy"), this);
  registerDroppedCodeMatcher(Finder);
  Finder->addMatcher(cxxMemberCallExpr(opCall(isUpload)).bind("move"), this);
  Finder->addMatcher(cxxMemberCallExpr(opCall({Op::CopyInto})).bind("copy"), this);
  Finder->addMatcher(
      cxxOperatorCallExpr(torch_matchers::tensorCopyAssignment(wordsOf(::nosync::rules::get(Op::AssignInto).methods)))
          .bind("assign"),
      this);
  Finder->addMatcher(callExpr(opCall({Op::TensorFromHost})).bind("fromhost"), this);
}

void PageableH2DCheck::check(const MatchFinder::MatchResult &Result) {
  if (const auto *Raw = Result.Nodes.getNodeAs<CallExpr>("rawcopy")) {
    if (std::optional<Finding> F = rawCopyFinding(Raw, Id, *Result.Context))
      report(std::move(*F), *Result.Context);
    return;
  }
  if (const auto *Move = Result.Nodes.getNodeAs<CXXMemberCallExpr>("move"))
    checkMove(Move, *Result.Context);
  else if (const auto *Copy = Result.Nodes.getNodeAs<CXXMemberCallExpr>("copy"))
    checkCopyFrom(Copy, *Result.Context);
  else if (const auto *Assign = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("assign"))
    checkAssignment(Assign, *Result.Context);
  else if (const auto *FromHost = Result.Nodes.getNodeAs<CallExpr>("fromhost"))
    checkTensorFromHost(FromHost, *Result.Context);
}

void PageableH2DCheck::checkMove(const CXXMemberCallExpr *Call, ASTContext &Ctx) {
  const OpEntry *Upload = opOfCall(Call, isUpload);
  if (!Upload)
    return;
  const Expr *DeviceArg = nullptr;
  bool Like = false;  // x.to(other): other's device and dtype
  if (Upload->op == Op::To) {
    DeviceArg = deviceArgOfTo(Call);
    if (!DeviceArg) {
      // x.to(other) goes where `other` is, as x.to(other.device()) does
      // (below: only a tensor known to be on the CPU is uploaded), unless
      // `other` is known to be on the CPU too.
      const Expr *Other = Call->getNumArgs() > 0 ? stripImplicit(Call->getArg(0)) : nullptr;
      if (!Other || !isTensorExpr(Other) || placementOf(Other, Ctx) == DeviceKind::Cpu ||
          placementOf(receiverOf(Call), Ctx) != DeviceKind::Cpu)
        return;  // a dtype conversion, or a copy between tensors we cannot place
      DeviceArg = Other;
      Like = true;
    }
    DeviceKind Target = Like ? DeviceKind::Unknown : classifyDevice(DeviceArg, Ctx);
    // A device we cannot see is, in training code, the GPU (`device` picked
    // from torch::cuda::is_available()); options without a device are not,
    // but a tensor's options carry its device.
    if (Target == DeviceKind::Cpu || Target == DeviceKind::NoDevice ||
        (Target == DeviceKind::Unknown && !Like && !isDeviceTyped(DeviceArg) && !isOptionsOfTensor(DeviceArg)))
      return;
  }
  const Expr *Source = receiverOf(Call);
  DeviceKind From = placementOf(Source, Ctx);
  if (From == DeviceKind::Cuda || holdsNoElements(Source))
    return;  // already on the GPU, or nothing to copy: a no-op
  // ones_like(t).to(device): made where `t` is; unless `t` is known to be on
  // the CPU it is, in training code, a model output and the copy a no-op.
  if (From != DeviceKind::Cpu && (isLikeFactory(Source) || isModelOutput(Source)))
    return;
  // x.to(other.device()) aligns x with a tensor it is combined with, usually
  // already on that device: only a tensor known to be on the CPU is uploaded.
  if (DeviceArg && From != DeviceKind::Cpu &&
      (tensorMethodName(stripImplicit(DeviceArg)) == "device" || isOptionsOfTensor(DeviceArg)))
    return;
  NonBlocking Async = nonBlockingArg(Call, Ctx);
  if (isPinned(Source, Ctx) && Async != NonBlocking::No)
    return;  // the recommended pattern
  // non_blocking from memory we cannot see: give it the benefit of the doubt.
  if (Async != NonBlocking::No && From != DeviceKind::Cpu)
    return;

  Finding F;
  F.Site = Call;
  F.Loc = callNameLoc(Call);
  F.Value = F.PlacedBy = Source;
  F.QuietWhenOn = DeviceKind::Cuda;  // already there: a no-op
  if (const CallExpr *Factory = factoryReceiver(Call); Factory && DeviceArg) {
    F.What = "'" + Factory->getDirectCallee()->getName().str() + "(...)." + tensorMethodName(Call).str() +
             "()' builds the tensor on the CPU and copies it";
    if (std::optional<FixItHint> Fix = createOnDeviceFix(Call, Factory, DeviceArg, Ctx, Like))
      F.Fixes.push_back(*Fix);
    else
      F.Advice = "create it on the device: pass the device in the factory's options (" +
                 Factory->getDirectCallee()->getName().str() +
                 (Like ? "(..., " + sourceText(DeviceArg, Ctx).str() + ".options()))"
                       : "(..., torch::TensorOptions().device(" + sourceText(DeviceArg, Ctx).str() + ")))");
  } else {
    F.What = "'" + tensorMethodName(Call).str() + "()' to the GPU" +
             (Async == NonBlocking::No ? " without non_blocking" : " from pageable memory");
    F.Advice = stagingAdvice();
    if (DeviceArg && !Like && Async == NonBlocking::No) {
      F.Fixes = stagerFix(Call, DeviceArg, Ctx);
      F.Fix = ::nosync::rules::FixId::PinnedStager;
      F.FixCallsKernels = true;
    }
  }
  report(std::move(F), Ctx);
}

void PageableH2DCheck::checkTensorFromHost(const CallExpr *Call, ASTContext &Ctx) {
  const FunctionDecl *F = Call->getDirectCallee();
  const Expr *Options = nullptr;
  for (unsigned I = 0, N = std::min(F->getNumParams(), Call->getNumArgs()); I < N; ++I)
    if (StringRef(F->getParamDecl(I)->getType().getAsString()).contains("TensorOptions"))
      Options = Call->getArg(I);
  if (!Options || isa<CXXDefaultArgExpr>(Options))
    return;  // built on the CPU and left there
  if (holdsOneScalar(Call) || holdsNoElements(Call))
    return;  // filled on the device, or nothing to copy
  // As for .to(device): a device the source does not show is, in training
  // code, the GPU, and so is that of a tensor whose options are given
  // (`torch::tensor(mask, logits.options())`) unless it is known to be on the
  // CPU; options that name no device keep the values on the CPU.
  DeviceKind Target = classifyDevice(Options, Ctx);
  if (Target != DeviceKind::Cuda &&
      !(Target == DeviceKind::Unknown && (optionsNameDevice(Options) || isOptionsOfTensor(Options))))
    return;
  Finding Fd;
  Fd.Site = Call;
  Fd.Loc = callNameLoc(Call);
  Fd.What = "'" + F->getName().str() + "(...)' with a device gathers the values on the host and copies them "
            "to the GPU from pageable memory";
  Fd.Advice = std::string(::nosync::rules::get(Op::TensorFromHost).advice);
  report(std::move(Fd), Ctx);
}

void PageableH2DCheck::checkCopyFrom(const CXXMemberCallExpr *Copy, ASTContext &Ctx) {
  if (Copy->getNumArgs() >= 1)
    checkCopy(Copy, callNameLoc(Copy), receiverOf(Copy), Copy->getArg(0), nonBlockingArg(Copy, Ctx),
              "'copy_()' from host memory into a GPU tensor", Ctx);
}

void PageableH2DCheck::checkAssignment(const CXXOperatorCallExpr *Assign, ASTContext &Ctx) {
  checkCopy(Assign, Assign->getOperatorLoc(), Assign->getArg(0), Assign->getArg(1), NonBlocking::No,
            "assigning a host tensor into a GPU tensor ('dst[i] = src' copies)", Ctx);
}

void PageableH2DCheck::checkCopy(const Expr *Site, SourceLocation Loc, const Expr *Dst, const Expr *Src,
                                 NonBlocking Async, std::string What, ASTContext &Ctx) {
  // Host memory written into a tensor that is not known to be on the CPU: in
  // training code that is the GPU buffer the batch is assembled in (a
  // rollout's observations, a minibatch made with the device's options).
  if (placementOf(Src, Ctx) != DeviceKind::Cpu || placementOf(Dst, Ctx) == DeviceKind::Cpu)
    return;
  if (isPinned(Src, Ctx) && Async != NonBlocking::No)
    return;
  Finding F;
  F.Site = Site;
  F.Loc = Loc;
  F.What = std::move(What);
  F.Value = Src;
  F.Advice = stagingAdvice();
  report(std::move(F), Ctx);
}

}  // namespace clang::tidy::nosync
