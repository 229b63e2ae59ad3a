#include "utils/Placement.h"

#include "utils/AstHelpers.h"
#include "utils/OpTable.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace clang::tidy::nosync {
using namespace ast_matchers;

namespace {

bool isDeviceTypeEnum(QualType T) { return qualifiedTagName(T) == "c10::DeviceType"; }
bool isDeviceRecord(QualType T) { return qualifiedTagName(T) == "c10::Device"; }
bool isTensorOptions(QualType T) { return qualifiedTagName(T) == "c10::TensorOptions"; }

const CXXRecordDecl *parentClassOf(const FunctionDecl *F) {
  const auto *M = dyn_cast_or_null<CXXMethodDecl>(F);
  return M ? M->getParent() : nullptr;
}

bool isTorchFunction(const FunctionDecl *F) {
  if (!F || parentClassOf(F))
    return false;
  std::string Q = F->getQualifiedNameAsString();
  return llvm::StringRef(Q).starts_with("at::") || llvm::StringRef(Q).starts_with("torch::");
}

DeviceKind fromDeviceTypeValue(const Expr *E, const ASTContext &Ctx) {
  Expr::EvalResult R;
  if (E->isValueDependent() || !E->EvaluateAsRValue(R, Ctx) || !R.Val.isInt())
    return DeviceKind::Unknown;
  // Values of c10::DeviceType (c10/core/DeviceType.h): CPU = 0, CUDA = 1.
  switch (R.Val.getInt().getExtValue()) {
  case 0:
    return DeviceKind::Cpu;
  case 1:
    return DeviceKind::Cuda;
  default:
    return DeviceKind::Unknown;
  }
}

DeviceKind fromDeviceString(llvm::StringRef S) {
  if (S.starts_with_insensitive("cpu"))
    return DeviceKind::Cpu;
  if (S.starts_with_insensitive("cuda"))
    return DeviceKind::Cuda;
  return DeviceKind::Unknown;
}

// Options that carry no device: a dtype, layout or memory format converted to
// TensorOptions, or the `at::dtype(..)`-style helpers.
bool isDeviceFreeOption(QualType T) {
  std::string N = qualifiedTagName(T);
  return N == "c10::ScalarType" || N == "c10::Layout" || N == "c10::MemoryFormat" ||
         N == "caffe2::TypeMeta";
}

// The right-hand sides of `V = value`: in its function for a local; in the
// main file's declarations for a global (a global device set in main()).
std::vector<const Expr *> assignedValues(const VarDecl *V, ASTContext &Ctx) {
  auto Ref = ignoringParenImpCasts(declRefExpr(to(varDecl(equalsNode(V)))));
  auto Assign = cxxOperatorCallExpr(hasOverloadedOperatorName("="), hasArgument(0, Ref),
                                    hasArgument(1, expr().bind("value")));
  std::vector<const Decl *> Scopes;
  if (const auto *Fn = dyn_cast_or_null<Decl>(V->getParentFunctionOrMethod()))
    Scopes.push_back(Fn);
  else
    for (const Decl *D : Ctx.getTranslationUnitDecl()->decls())
      if (Ctx.getSourceManager().isInMainFile(D->getLocation()))
        Scopes.push_back(D);
  std::vector<const Expr *> Values;
  for (const Decl *Scope : Scopes)
    for (const BoundNodes &N : match(decl(forEachDescendant(Assign)), *Scope, Ctx))
      Values.push_back(N.getNodeAs<Expr>("value"));
  return Values;
}

// Each local's reassignments, searched for once per translation unit: every
// read of the local asks (cleared with the placements, clearPlacementCache).
llvm::DenseMap<const ValueDecl *, std::vector<const CallExpr *>> &reassignmentCache() {
  thread_local llvm::DenseMap<const ValueDecl *, std::vector<const CallExpr *>> Cache;
  return Cache;
}

// The assignments to `V` (`V = ...`) and moves from it in `Fn`'s body, its
// function's. `V` is a local, a parameter or a structured binding.
std::vector<const CallExpr *> reassignments(const ValueDecl *V, const FunctionDecl &Fn, ASTContext &Ctx) {
  auto [It, Inserted] = reassignmentCache().try_emplace(V);
  if (!Inserted)
    return It->second;
  auto Ref = ignoringParenImpCasts(declRefExpr(to(valueDecl(equalsNode(V)))));
  auto Assign = cxxOperatorCallExpr(hasOverloadedOperatorName("="), hasArgument(0, Ref));
  auto Moved = callExpr(callee(functionDecl(hasName("::std::move"))), hasArgument(0, Ref));
  std::vector<const CallExpr *> Out;
  for (const BoundNodes &N : match(stmt(forEachDescendant(callExpr(anyOf(Assign, Moved)).bind("re"))),
                                   *Fn.getBody(), Ctx))
    Out.push_back(N.getNodeAs<CallExpr>("re"));
  It->second = Out;
  return Out;
}

// Whether `V` is assigned or moved from anywhere in its function after its
// initialization; if so its placement is no longer what the initializer says.
bool isLocallyReassigned(const VarDecl *V, ASTContext &Ctx) {
  const auto *Fn = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
  return !Fn || !Fn->hasBody() || !reassignments(V, *Fn, Ctx).empty();
}

DeviceKind placementImpl(const Expr *E, ASTContext &Ctx, int Depth, bool AllowTuple);
std::vector<const Expr *> memberInitializers(const FieldDecl *Field, ASTContext &Ctx);

// `t.options()`, also through a local initialized with it: options that carry
// `t`'s device. Returns `t`.
const Expr *optionsOfTensor(const Expr *E, int Depth = 0) {
  E = stripImplicit(E);
  if (!E || Depth > 4)
    return nullptr;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    return V && V->getInit() && !isa<ParmVarDecl>(V) ? optionsOfTensor(V->getInit(), Depth + 1) : nullptr;
  }
  if (const auto *C = dyn_cast<CXXConstructExpr>(E); C && C->getNumArgs() == 1)
    return optionsOfTensor(C->getArg(0), Depth + 1);
  const auto *MC = dyn_cast<CXXMemberCallExpr>(E);
  return MC && tensorMethodName(MC) == "options" ? receiverOf(MC) : nullptr;
}

DeviceKind classifyDeviceImpl(const Expr *E, ASTContext &Ctx, int Depth) {
  E = stripImplicit(E);
  if (!E || Depth > 8)
    return DeviceKind::Unknown;
  QualType T = E->getType();

  if (isDeviceTypeEnum(T))
    return fromDeviceTypeValue(E, Ctx);
  if (isDeviceFreeOption(T))
    return DeviceKind::NoDevice;
  if (const auto *S = dyn_cast<StringLiteral>(E))
    return fromDeviceString(S->getString());
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    // A local Device/TensorOptions is usually built once; its initializer
    // says where it points.
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    if (!V || !V->getInit() || isa<ParmVarDecl>(V))
      return DeviceKind::Unknown;
    // `Device device = kCPU; if (cuda::is_available()) device = kCUDA;`: a
    // variable that is ever pointed at the GPU is the GPU.
    DeviceKind K = classifyDeviceImpl(V->getInit(), Ctx, Depth + 1);
    for (const Expr *Value : assignedValues(V, Ctx)) {
      DeviceKind Other = classifyDeviceImpl(Value, Ctx, Depth + 1);
      if (Other == DeviceKind::Cuda || K == DeviceKind::Cuda)
        K = DeviceKind::Cuda;
      else if (Other != K)
        K = DeviceKind::Unknown;
    }
    return K;
  }
  // `const torch::Device cpu = torch::kCPU;` as a class member: it points
  // where its initializers (in the class, in the constructors) agree it does.
  const auto *ME = dyn_cast<MemberExpr>(E);
  if (const auto *Field = ME ? dyn_cast<FieldDecl>(ME->getMemberDecl()) : nullptr;
      Field && Field->getType().isConstQualified()) {
    std::optional<DeviceKind> Agreed;
    for (const Expr *Init : memberInitializers(Field, Ctx)) {
      DeviceKind K = classifyDeviceImpl(Init, Ctx, Depth + 1);
      if (Agreed && *Agreed != K)
        return DeviceKind::Unknown;
      Agreed = K;
    }
    return Agreed.value_or(DeviceKind::Unknown);
  }
  // torch::Device(torch::kCUDA, 0), at::Device("cpu"), TensorOptions(kCUDA),
  // std::optional<Device>(...): the first argument names the device.
  if (const auto *C = dyn_cast<CXXConstructExpr>(E)) {
    if (C->getNumArgs() == 0 || isa<CXXDefaultArgExpr>(C->getArg(0)))
      return isTensorOptions(T) ? DeviceKind::NoDevice : DeviceKind::Unknown;
    std::string N = qualifiedTagName(T);
    if (isDeviceRecord(T) || isTensorOptions(T) || N == "std::optional" || N == "c10::optional")
      return classifyDeviceImpl(C->getArg(0), Ctx, Depth + 1);
    return DeviceKind::Unknown;
  }
  if (const auto *Cast = dyn_cast<ExplicitCastExpr>(E))
    return classifyDeviceImpl(Cast->getSubExpr(), Ctx, Depth + 1);

  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *M = MC->getMethodDecl();
    if (M && M->getParent()->getQualifiedNameAsString() == "c10::TensorOptions") {
      // Builder chain: TensorOptions().dtype(..).device(kCUDA).
      if (M->getName() == "device" && MC->getNumArgs() >= 1)
        return classifyDeviceImpl(MC->getArg(0), Ctx, Depth + 1);
      return classifyDeviceImpl(MC->getImplicitObjectArgument(), Ctx, Depth + 1);
    }
    // tensor.options(), tensor.device(): where the tensor is, when the source
    // says.
    if (const Expr *Of = optionsOfTensor(MC))
      return placementImpl(Of, Ctx, Depth + 1, false);
    if (tensorMethodName(MC) == "device")
      return placementImpl(receiverOf(MC), Ctx, Depth + 1, false);
    return DeviceKind::Unknown;
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    // at::device(kCUDA) / torch::device(..) / torch::dtype(..) return
    // TensorOptions; they are c10's, which at:: and torch:: re-export.
    const FunctionDecl *F = Call->getDirectCallee();
    bool FromC10 = F && !parentClassOf(F) && llvm::StringRef(F->getQualifiedNameAsString()).starts_with("c10::");
    if (F && (isTorchFunction(F) || FromC10) && isTensorOptions(T)) {
      if (F->getName() == "device" && Call->getNumArgs() >= 1)
        return classifyDeviceImpl(Call->getArg(0), Ctx, Depth + 1);
      if (F->getName() == "dtype" || F->getName() == "layout" || F->getName() == "requires_grad")
        return DeviceKind::NoDevice;
    }
    return DeviceKind::Unknown;
  }
  return DeviceKind::Unknown;
}

// Factories whose result is placed by their TensorOptions argument and
// default to the CPU when none is given.
bool isPlacingFactory(llvm::StringRef Name) { return inGroup(OpGroup::PlacingFactory, Name); }

DeviceKind factoryPlacement(const CallExpr *Call, ASTContext &Ctx, int Depth) {
  const FunctionDecl *F = Call->getDirectCallee();
  unsigned N = std::min(Call->getNumArgs(), F->getNumParams());
  for (unsigned I = 0; I < N; ++I) {
    if (!isTensorOptions(F->getParamDecl(I)->getType()))
      continue;
    const Expr *Arg = Call->getArg(I);
    if (isa<CXXDefaultArgExpr>(Arg))
      return DeviceKind::Cpu;  // default options: the CPU
    DeviceKind K = classifyDeviceImpl(Arg, Ctx, Depth + 1);
    return K == DeviceKind::NoDevice ? DeviceKind::Cpu : K;
  }
  return DeviceKind::Cpu;  // no options parameter at all: the CPU
}

DeviceKind placementImpl(const Expr *E, ASTContext &Ctx, int Depth, bool AllowTuple = false);

// torch::data::Example<Data, Target>: what a Dataset's get() returns and a
// DataLoader yields.
bool isDataExample(QualType T) {
  if (T.isNull())
    return false;
  if (const auto *P = T->getAs<PointerType>())
    T = P->getPointeeType();
  return qualifiedTagName(T) == "torch::data::Example";
}

// std::vector<Tensor> and its kin, and the ArrayRef through which LibTorch's
// list parameters (cat, stack) see them: values whose elements are tensors.
bool isTensorSequence(QualType T) {
  if (T.isNull())
    return false;
  const auto *S = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl());
  if (!S)
    return false;
  std::string Q = S->getQualifiedNameAsString();
  if (Q != "std::vector" && Q != "std::deque" && Q != "std::initializer_list" && Q != "c10::ArrayRef" &&
      Q != "c10::IListRef")
    return false;
  const TemplateArgumentList &Args = S->getTemplateArgs();
  return Args.size() >= 1 && Args[0].getKind() == TemplateArgument::Type && isTensorType(Args[0].getAsType());
}

// The braced list or the vector that an ArrayRef / IListRef parameter (cat,
// stack) or a std::initializer_list is built from, under the temporaries and
// conversions around it.
const Expr *unwrapSequence(const Expr *E) {
  while (true) {
    if (const auto *C = dyn_cast<CXXConstructExpr>(E); C && C->getNumArgs() == 1)
      E = C->getArg(0);
    else if (const auto *M = dyn_cast<MaterializeTemporaryExpr>(E))
      E = M->getSubExpr();
    else if (const auto *L = dyn_cast<CXXStdInitializerListExpr>(E))
      E = L->getSubExpr();
    else if (const auto *B = dyn_cast<CXXBindTemporaryExpr>(E))
      E = B->getSubExpr();
    else if (const auto *I = dyn_cast<ImplicitCastExpr>(E))
      E = I->getSubExpr();
    else
      return E->IgnoreParens();
  }
}

// The placement shared by every tensor among `Args`; Unknown when they
// disagree or none is a tensor.
template <typename Range> DeviceKind commonPlacement(Range Args, ASTContext &Ctx, int Depth) {
  std::optional<DeviceKind> Common;
  for (const Expr *Arg : Args) {
    if (!isTensorType(Arg->getType()) && !isTensorSequence(Arg->getType()))
      continue;
    DeviceKind K = placementImpl(Arg, Ctx, Depth + 1);
    if (Common && *Common != K)
      return DeviceKind::Unknown;
    Common = K;
  }
  return Common.value_or(DeviceKind::Unknown);
}

// The placement every one of `Values` has; Unknown when they disagree, when
// one is unknown, or when there is none.
DeviceKind agreedPlacement(const std::vector<const Expr *> &Values, ASTContext &Ctx, int Depth) {
  std::optional<DeviceKind> Agreed;
  for (const Expr *V : Values) {
    DeviceKind K = placementImpl(V, Ctx, Depth + 1);
    if (K == DeviceKind::Unknown || (Agreed && *Agreed != K))
      return DeviceKind::Unknown;
    Agreed = K;
  }
  return Agreed.value_or(DeviceKind::Unknown);
}

// Placements of members, parameters and functions' results take a search of
// the translation unit; they are kept until its end (clearPlacementCache).
// One per thread: nosync-lint lints several units at once, one per thread.
llvm::DenseMap<const Decl *, DeviceKind> &declPlacementCache() {
  thread_local llvm::DenseMap<const Decl *, DeviceKind> Cache;
  return Cache;
}

// Whether a walk stopped at the depth limit. Its Unknown says nothing about
// the declaration it was placing, and is not kept: a walk that starts nearer
// may place it (else the first check to ask would decide for every other).
bool &depthLimitHit() {
  thread_local bool Hit = false;
  return Hit;
}

// Keeps `D`'s placement `K`, computed since the walk began with `Outer` as
// the limit flag, unless that computation stopped at the limit.
DeviceKind keepPlacement(const Decl *D, DeviceKind K, bool Outer) {
  if (depthLimitHit())
    declPlacementCache().erase(D);
  else
    declPlacementCache()[D] = K;
  depthLimitHit() = depthLimitHit() || Outer;
  return K;
}

// Where the main file's code is: the declarations searched for assignments
// and call sites (LibTorch's own code is not).
std::vector<const Decl *> mainFileDecls(ASTContext &Ctx) {
  std::vector<const Decl *> Out;
  for (const Decl *D : Ctx.getTranslationUnitDecl()->decls())
    if (Ctx.getSourceManager().isInMainFile(D->getLocation()))
      Out.push_back(D);
  return Out;
}

// `M` on a main-file declaration itself (an out-of-line method or
// constructor, `void Env::set(..) {..}`) or anywhere inside one (a class, a
// namespace): forEachDescendant alone misses the first.
DeclarationMatcher selfOrDescendant(const DeclarationMatcher &M) { return decl(eachOf(M, forEachDescendant(M))); }

// The values a member is initialized with: its default member initializer
// and the main file's constructors' initializers.
std::vector<const Expr *> memberInitializers(const FieldDecl *Field, ASTContext &Ctx) {
  std::vector<const Expr *> Out;
  if (const Expr *Default = Field->getInClassInitializer())
    Out.push_back(Default);
  auto Init = cxxCtorInitializer(forField(equalsNode(Field)), withInitializer(expr().bind("value")));
  for (const Decl *D : mainFileDecls(Ctx))
    for (const BoundNodes &N :
         match(selfOrDescendant(cxxConstructorDecl(forEachConstructorInitializer(Init))), *D, Ctx))
      Out.push_back(N.getNodeAs<Expr>("value"));
  return Out;
}

// A member (or a sequence of tensors) whose values are computed from itself
// through a local (`auto next = pos_ + step * dt; pos_ = next;`, a state
// vector rebuilt from its own elements) cycles back to its own placement,
// which is unknown while it is being worked out. It is on the CPU when every
// value is, assuming it is: its first value puts it there and each later one
// keeps it there. What was worked out under the assumption is forgotten when
// it fails.
DeviceKind hostIfEveryValueKeepsIt(const ValueDecl *D, const std::vector<const Expr *> &Values, ASTContext &Ctx,
                                   int Depth) {
  llvm::DenseMap<const Decl *, DeviceKind> Before = declPlacementCache();
  declPlacementCache()[D] = DeviceKind::Cpu;
  if (agreedPlacement(Values, Ctx, Depth) == DeviceKind::Cpu && !depthLimitHit())
    return DeviceKind::Cpu;
  declPlacementCache() = std::move(Before);
  return DeviceKind::Unknown;
}

// A tensor member is where every value it is given puts it: its default
// member initializer, constructors' initializers, and assignments in the
// main file (`obs_ = torch::zeros(.., device)`). A value made from the member
// itself (`obs_ = obs_.roll(1)`) keeps it where it is and is left out.
DeviceKind memberPlacement(const FieldDecl *Field, ASTContext &Ctx, int Depth) {
  auto [It, Inserted] = declPlacementCache().try_emplace(Field, DeviceKind::Unknown);
  if (!Inserted)
    return It->second;  // known, or being computed (a cycle): unknown
  bool Outer = std::exchange(depthLimitHit(), false);
  llvm::DenseMap<const Decl *, DeviceKind> Before = declPlacementCache();
  auto Self = memberExpr(member(equalsNode(Field)));
  auto Assign = cxxOperatorCallExpr(hasOverloadedOperatorName("="), hasArgument(0, ignoringParenImpCasts(Self)),
                                    hasArgument(1, expr(unless(hasDescendant(Self))).bind("value")));
  std::vector<const Expr *> Values = memberInitializers(Field, Ctx);
  for (const Decl *D : mainFileDecls(Ctx))
    for (const BoundNodes &N : match(selfOrDescendant(functionDecl(hasBody(forEachDescendant(Assign)))), *D, Ctx))
      Values.push_back(N.getNodeAs<Expr>("value"));
  // A constructor's default-constructed member is no placement: an undefined
  // tensor, given its value later.
  llvm::erase_if(Values, [](const Expr *V) {
    const auto *C = dyn_cast<CXXConstructExpr>(stripImplicit(V));
    return C && C->getNumArgs() == 0;
  });
  DeviceKind K = agreedPlacement(Values, Ctx, Depth);
  if (K == DeviceKind::Unknown && !depthLimitHit() && !Values.empty()) {
    declPlacementCache() = std::move(Before);  // what was placed while the member was unknown
    K = hostIfEveryValueKeepsIt(Field, Values, Ctx, Depth);
  }
  return keepPlacement(Field, K, Outer);
}

// While hostIfCallersElsewhereAgree walks: the parameters it took to be on
// the CPU because no call in the main file says where they are (the callers
// are in other files); nullptr otherwise.
std::vector<const ParmVarDecl *> *&openParameters() {
  thread_local std::vector<const ParmVarDecl *> *Open = nullptr;
  return Open;
}

// A parameter is where every call in the main file puts its argument
// (`print_stats(t.cpu())` everywhere: a host tensor), when the function does
// not reassign it.
DeviceKind parameterPlacement(const ParmVarDecl *Param, ASTContext &Ctx, int Depth) {
  const auto *Fn = dyn_cast_or_null<FunctionDecl>(Param->getDeclContext());
  // Lambdas and operators are called through objects and operators that a
  // search by name does not find.
  if (!Fn || !Fn->getDeclName().isIdentifier() || isLocallyReassigned(Param, Ctx))
    return DeviceKind::Unknown;
  auto [It, Inserted] = declPlacementCache().try_emplace(Param, DeviceKind::Unknown);
  if (!Inserted)
    return It->second;
  bool Outer = std::exchange(depthLimitHit(), false);
  unsigned Index = Param->getFunctionScopeIndex();
  auto AnyRedecl = callExpr(callee(functionDecl(hasName(Fn->getQualifiedNameAsString())))).bind("call");
  std::vector<const Expr *> Values;
  for (const Decl *D : mainFileDecls(Ctx))
    for (const BoundNodes &N : match(decl(forEachDescendant(AnyRedecl)), *D, Ctx)) {
      const auto *C = N.getNodeAs<CallExpr>("call");
      const FunctionDecl *Callee = C->getDirectCallee();
      if (!Callee || Callee->getCanonicalDecl() != Fn->getCanonicalDecl())
        continue;
      // A member call's arguments do not count the object.
      unsigned Offset = isa<CXXOperatorCallExpr>(C) && isa<CXXMethodDecl>(Callee) ? 1 : 0;
      if (Index + Offset >= C->getNumArgs())
        return keepPlacement(Param, DeviceKind::Unknown, Outer);
      Values.push_back(C->getArg(Index + Offset));
    }
  if (Values.empty() && openParameters()) {
    openParameters()->push_back(Param);
    return keepPlacement(Param, DeviceKind::Cpu, Outer);
  }
  return keepPlacement(Param, agreedPlacement(Values, Ctx, Depth), Outer);
}

// A function of the main file that returns a tensor is where every one of
// its return values is (`createWindow` building a kernel on the CPU).
DeviceKind returnPlacement(const FunctionDecl *F, ASTContext &Ctx, int Depth) {
  const FunctionDecl *Def = F ? F->getDefinition() : nullptr;
  if (!Def || !Def->getBody() || !Ctx.getSourceManager().isInMainFile(Def->getLocation()))
    return DeviceKind::Unknown;
  auto [It, Inserted] = declPlacementCache().try_emplace(Def, DeviceKind::Unknown);
  if (!Inserted)
    return It->second;
  bool Outer = std::exchange(depthLimitHit(), false);
  std::vector<const Expr *> Values;
  auto Return = returnStmt(hasReturnValue(expr().bind("value")), forFunction(equalsNode(Def)));  // not a lambda's
  for (const BoundNodes &N : match(stmt(forEachDescendant(Return)), *Def->getBody(), Ctx))
    Values.push_back(N.getNodeAs<Expr>("value"));
  return keepPlacement(Def, agreedPlacement(Values, Ctx, Depth), Outer);
}

// The constructor call that makes `E`, under the temporaries and casts that
// a functional cast (`std::vector<Tensor>(n)`) or a copy wraps it in.
const CXXConstructExpr *constructionOf(const Expr *E) {
  while (E) {
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *C = dyn_cast<CXXConstructExpr>(E))
      return C;
    const auto *Cast = dyn_cast<CXXFunctionalCastExpr>(E);
    E = Cast ? Cast->getSubExpr() : nullptr;
  }
  return nullptr;
}

// `Tensor t;`, `std::vector<Tensor> v;`, `std::vector<Tensor> v(n)`: no
// tensor value yet.
bool isEmptyConstruction(const Expr *Init) {
  const CXXConstructExpr *C = constructionOf(Init);
  if (!C)
    return false;
  return llvm::all_of(C->arguments(), [](const Expr *A) {
    return isa<CXXDefaultArgExpr>(A) || A->getType()->isIntegralOrEnumerationType();
  });
}

// A use of `D`, a local (or parameter) or a member.
StatementMatcher refTo(const ValueDecl *D) {
  return expr(anyOf(declRefExpr(to(equalsNode(D))), memberExpr(member(equalsNode(D)))));
}

bool refersTo(const Expr *E, const ValueDecl *D, ASTContext &Ctx) {
  auto Ref = refTo(D);
  return !match(expr(anyOf(Ref, hasDescendant(Ref))), *E, Ctx).empty();
}

// While valuesPlacement tries whether a value computed from `D` keeps `D`
// where its other values put it: `D`'s assumed placement.
llvm::DenseMap<const ValueDecl *, DeviceKind> &assumedPlacements() {
  thread_local llvm::DenseMap<const ValueDecl *, DeviceKind> Assumed;
  return Assumed;
}

// `D` is where all of `Values` put it. A value computed from `D` itself
// counts when it is placed so too while `D` is (`acc = cat({acc, x.cpu()})`
// keeps a host accumulator on the host; `x = x.to(dev)` may move it).
DeviceKind valuesPlacement(const ValueDecl *D, const std::vector<const Expr *> &Values, ASTContext &Ctx,
                           int Depth) {
  std::vector<const Expr *> Own, FromD;
  for (const Expr *V : Values)
    (refersTo(V, D, Ctx) ? FromD : Own).push_back(V);
  DeviceKind K = agreedPlacement(Own, Ctx, Depth);
  if (K == DeviceKind::Unknown || FromD.empty())
    return K;
  if (!assumedPlacements().try_emplace(D, K).second)
    return DeviceKind::Unknown;  // already assuming it, further up
  DeviceKind Then = agreedPlacement(FromD, Ctx, Depth);
  assumedPlacements().erase(D);
  return Then == K ? K : DeviceKind::Unknown;
}

// `for (auto &t : tensors)`: the sequence `t` walks, when `V` is such a loop
// variable.
const Expr *rangeOfLoopVariable(const VarDecl *V, ASTContext &Ctx) {
  for (const DynTypedNode &DS : Ctx.getParents(*V))
    for (const DynTypedNode &P : Ctx.getParents(DS))
      if (const auto *For = P.get<CXXForRangeStmt>(); For && For->getLoopVariable() == V)
        return For->getRangeInit();
  return nullptr;
}

// v.at(i), v.back(), v.front() of a sequence of tensors.
bool isElementAccess(const CXXMemberCallExpr *MC) {
  const CXXMethodDecl *M = MC->getMethodDecl();
  return M && M->getDeclName().isIdentifier() && llvm::is_contained({"at", "back", "front"}, M->getName()) &&
         isTensorSequence(MC->getImplicitObjectArgument()->getType());
}

// The tensors an initializer puts into a sequence: `{a, b}`, `(n, t)`, a
// copy of another sequence. nullopt for one we cannot read.
std::optional<std::vector<const Expr *>> initialElements(const Expr *Init) {
  Init = Init->IgnoreParenImpCasts();
  if (isEmptyConstruction(Init))
    return std::vector<const Expr *>{};
  if (const CXXConstructExpr *C = constructionOf(Init)) {
    std::vector<const Expr *> Out;
    for (const Expr *A : C->arguments())
      if (isTensorType(A->getType()) || isTensorSequence(A->getType()))
        Out.push_back(A);
      else if (!A->getType()->isIntegralOrEnumerationType() && !isa<CXXDefaultArgExpr>(A))
        return std::nullopt;  // iterators, allocators
    return Out;
  }
  return std::vector<const Expr *>{Init};
}

// Whether a call in `Scope` can give `D` (a tensor or a sequence of them) a
// value other than by assignment and push_back: given by non-const reference,
// swapped, inserted into.
bool filledElsewhere(const ValueDecl *D, const Decl &Scope, ASTContext &Ctx) {
  auto Ref = ignoringParenImpCasts(refTo(D));
  auto MutableRef = hasType(lValueReferenceType(pointee(unless(isConstQualified()))));
  auto ByRef = callExpr(forEachArgumentWithParam(Ref, parmVarDecl(MutableRef)));
  auto Other = cxxMemberCallExpr(on(Ref), callee(cxxMethodDecl(hasAnyName("insert", "emplace", "assign", "swap"))));
  // for (auto &t : v) t = t.to(device);
  auto LoopStore = cxxForRangeStmt(
      hasRangeInit(Ref), hasLoopVariable(varDecl(MutableRef).bind("element")),
      hasBody(hasDescendant(cxxOperatorCallExpr(
          hasOverloadedOperatorName("="),
          hasArgument(0, ignoringParenImpCasts(declRefExpr(to(varDecl(equalsBoundNode("element"))))))))));
  return !match(decl(hasDescendant(stmt(anyOf(ByRef, Other, LoopStore)))), Scope, Ctx).empty();
}

// The values put into the sequence `D` in `Scope`: push_back / emplace_back
// arguments, `D[i] = value`, `D = other`. nullopt when something else fills
// it.
std::optional<std::vector<const Expr *>> sequenceValues(const ValueDecl *D, const Decl &Scope, ASTContext &Ctx) {
  if (filledElsewhere(D, Scope, Ctx))
    return std::nullopt;
  auto Ref = ignoringParenImpCasts(refTo(D));
  auto Push = cxxMemberCallExpr(on(Ref), callee(cxxMethodDecl(hasAnyName("push_back", "emplace_back")))).bind("push");
  auto Store = cxxOperatorCallExpr(
      hasOverloadedOperatorName("="),
      hasArgument(0, ignoringParenImpCasts(anyOf(
                         Ref, cxxOperatorCallExpr(hasOverloadedOperatorName("[]"), hasArgument(0, Ref))))),
      hasArgument(1, expr().bind("value")));
  std::vector<const Expr *> Out;
  for (const BoundNodes &N : match(decl(forEachDescendant(expr(anyOf(Push, Store)))), Scope, Ctx)) {
    if (const auto *Call = N.getNodeAs<CXXMemberCallExpr>("push")) {
      if (Call->getNumArgs() != 1 || !isTensorType(Call->getArg(0)->getType()))
        return std::nullopt;  // emplace_back(constructor arguments)
      Out.push_back(Call->getArg(0));
    } else if (const auto *Value = N.getNodeAs<Expr>("value"); isTensorSequence(Value->getType())) {
      // `D = std::vector<Tensor>(n)`: no tensor yet; `D = other`: other's.
      std::optional<std::vector<const Expr *>> Elements = initialElements(Value);
      if (!Elements)
        return std::nullopt;
      Out.insert(Out.end(), Elements->begin(), Elements->end());
    } else {
      Out.push_back(Value);
    }
  }
  return Out;
}

// A sequence of tensors (a local or a member) is where every tensor put into
// it is: `states.push_back(torch::full(..))` everywhere, a host buffer.
DeviceKind sequencePlacement(const ValueDecl *D, ASTContext &Ctx, int Depth) {
  auto [It, Inserted] = declPlacementCache().try_emplace(D, DeviceKind::Unknown);
  if (!Inserted)
    return It->second;  // known, or being computed (a cycle): unknown
  bool Outer = std::exchange(depthLimitHit(), false);
  llvm::DenseMap<const Decl *, DeviceKind> Before = declPlacementCache();
  std::vector<const Expr *> Values;
  std::vector<const Decl *> Scopes;
  bool Readable = true;
  std::vector<const Expr *> Inits;
  if (const auto *V = dyn_cast<VarDecl>(D)) {
    const auto *Fn = dyn_cast_or_null<Decl>(V->getParentFunctionOrMethod());
    if (!Fn)
      return keepPlacement(D, DeviceKind::Unknown, Outer);
    Scopes.push_back(Fn);
    if (V->getInit())
      Inits.push_back(V->getInit());
  } else if (const auto *Field = dyn_cast<FieldDecl>(D)) {
    Scopes = mainFileDecls(Ctx);
    Inits = memberInitializers(Field, Ctx);
  }
  for (const Expr *Init : Inits) {
    std::optional<std::vector<const Expr *>> Elements = initialElements(Init);
    if (!Elements) {
      Readable = false;
      break;
    }
    Values.insert(Values.end(), Elements->begin(), Elements->end());
  }
  for (const Decl *Scope : Scopes) {
    std::optional<std::vector<const Expr *>> Put = Readable ? sequenceValues(D, *Scope, Ctx) : std::nullopt;
    if (!Put) {
      Readable = false;
      break;
    }
    Values.insert(Values.end(), Put->begin(), Put->end());
  }
  if (!Readable)
    return keepPlacement(D, DeviceKind::Unknown, Outer);
  DeviceKind K = valuesPlacement(D, Values, Ctx, Depth);
  if (K == DeviceKind::Unknown && !depthLimitHit() && !Values.empty()) {
    declPlacementCache() = std::move(Before);  // what was placed while `D` was unknown
    K = hostIfEveryValueKeepsIt(D, Values, Ctx, Depth);
  }
  return keepPlacement(D, K, Outer);
}

// Whether `Holds` is true of every loop around `S` in its function.
bool everyLoopAround(const Stmt *S, ASTContext &Ctx, llvm::function_ref<bool(const Stmt *Loop)> Holds) {
  DynTypedNode Child = DynTypedNode::create(*S);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty() || Parents[0].get<FunctionDecl>() || Parents[0].get<LambdaExpr>())
      return true;
    if (const auto *Loop = Parents[0].get<Stmt>();
        Loop && isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(Loop) && !Holds(Loop))
      return false;
    Child = Parents[0];
  }
}

// Whether each time `Use` runs, `V` holds what it held on the way in: every
// loop around `Use` also holds `V`'s declaration (it is initialized again
// each turn) or none of `Assignments` (a staging tensor filled row by row in
// a loop, then moved to the device after it).
bool loopsKeepValue(const Expr *Use, const VarDecl *V, llvm::ArrayRef<const CallExpr *> Assignments,
                    ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  return everyLoopAround(Use, Ctx, [&](const Stmt *Loop) {
    // A for statement's init runs once, not each iteration: only its body counts.
    const Stmt *Repeated = isa<ForStmt>(Loop) ? cast<ForStmt>(Loop)->getBody() : Loop;
    if (!Repeated)
      return false;
    auto Inside = [&](SourceLocation L) {
      return SM.isBeforeInTranslationUnit(Repeated->getBeginLoc(), L) &&
             SM.isBeforeInTranslationUnit(L, Repeated->getEndLoc());
    };
    return Inside(V->getLocation()) ||
           llvm::none_of(Assignments, [&](const CallExpr *A) { return Inside(A->getBeginLoc()); });
  });
}

// `w = w.to(dev)`: the `w` read there still holds its initializer's value
// when no assignment to `w` comes before it, in source order and around the
// loops it is in.
bool readBeforeReassignment(const DeclRefExpr *Use, const VarDecl *V, ASTContext &Ctx) {
  const auto *Fn = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
  if (!Fn || !Fn->hasBody())
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  for (const CallExpr *A : reassignments(V, *Fn, Ctx)) {
    // The assignment that holds the read completes after it.
    bool Holds = !SM.isBeforeInTranslationUnit(Use->getBeginLoc(), A->getBeginLoc()) &&
                 !SM.isBeforeInTranslationUnit(A->getEndLoc(), Use->getBeginLoc());
    if (!Holds && !SM.isBeforeInTranslationUnit(Use->getBeginLoc(), A->getBeginLoc()))
      return false;
  }
  return loopsKeepValue(Use, V, reassignments(V, *Fn, Ctx), Ctx);
}

// Whether every loop around `Inner` also holds `Outer` (both in one function).
bool loopsAroundAlsoHold(const Stmt *Inner, const Stmt *Outer, ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  return everyLoopAround(Inner, Ctx, [&](const Stmt *Loop) {
    return !SM.isBeforeInTranslationUnit(Outer->getBeginLoc(), Loop->getBeginLoc());
  });
}

// Whether `S` is a statement of a block (a `{...}`) that also holds `Use`
// after it: in structured code it then runs before each time `Use` does.
bool dominates(const Stmt *S, const Expr *Use, ASTContext &Ctx) {
  DynTypedNode Child = DynTypedNode::create(*S);
  const CompoundStmt *Block = nullptr;
  while (!Block) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty() || Parents[0].get<FunctionDecl>() || Parents[0].get<LambdaExpr>())
      return false;
    Block = Parents[0].get<CompoundStmt>();
    // Only an expression statement of the block: not an assignment in a
    // condition, a loop's increment, a `?:` or the right of `&&`.
    const auto *P = Parents[0].get<Stmt>();
    if (!Block && (!P || !isa<Expr>(P) || isa<ConditionalOperator, BinaryOperator>(P)))
      return false;
    Child = Parents[0];
  }
  // `{ auto out = run(); x = out.cpu(); }` then `Use`: a bare block always
  // runs, so the blocks around it hold the statements it dominates too.
  llvm::SmallVector<const CompoundStmt *, 2> Blocks{Block};
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(*Blocks.back());
    const auto *Outer = Parents.empty() ? nullptr : Parents[0].get<CompoundStmt>();
    if (!Outer)
      break;
    Blocks.push_back(Outer);
  }
  DynTypedNode Up = DynTypedNode::create(*Use);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Up);
    if (Parents.empty() || Parents[0].get<LambdaExpr>())
      return false;
    if (const auto *B = Parents[0].get<CompoundStmt>(); B && llvm::is_contained(Blocks, B))
      return true;
    Up = Parents[0];
  }
}

// Whether `Cond` asks where something is (`!device.is_cpu()`, `x.is_cuda()`,
// `device.type() == kCUDA`, `cuda::is_available()`): a move under such an
// `if` is skipped only where the tensor is already where the move would put it.
bool isDeviceTest(const Stmt *Cond, const ASTContext &Ctx) {
  if (!Cond)
    return false;
  if (const auto *Call = dyn_cast<CallExpr>(Cond))
    if (const auto *Callee = dyn_cast_or_null<NamedDecl>(Call->getCalleeDecl()))
      if (llvm::is_contained({"is_cpu", "is_cuda", "is_available"}, Callee->getName()))
        return true;
  if (const auto *E = dyn_cast<Expr>(Cond); E && isDeviceTypeEnum(E->getType()) &&
                                            fromDeviceTypeValue(E, Ctx) != DeviceKind::Unknown)
    return true;
  return llvm::any_of(Cond->children(), [&](const Stmt *C) { return isDeviceTest(C, Ctx); });
}

// `if (!device.is_cpu()) { x = x.cpu(); }`, then `Use`: the `if`, when `Assign`
// is a statement of its then-branch (no else) and it asks where something is.
const IfStmt *deviceGuardOf(const CXXOperatorCallExpr *Assign, ASTContext &Ctx) {
  DynTypedNode Child = DynTypedNode::create(*Assign);
  for (int Up = 0; Up < 3; ++Up) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty())
      return nullptr;
    if (const auto *If = Parents[0].get<IfStmt>())
      return If->getThen() == Child.get<Stmt>() && !If->getElse() && isDeviceTest(If->getCond(), Ctx) ? If
                                                                                                        : nullptr;
    const auto *P = Parents[0].get<Stmt>();
    if (!P || !(isa<CompoundStmt>(P) || isa<ExprWithCleanups>(P)))
      return nullptr;
    Child = Parents[0];
  }
  return nullptr;
}

// The assignment `V = value` just before `Use` (in source order) when it is a
// statement of a block that also holds `Use`, or of a device guard that such
// a block holds; nullptr otherwise (another branch's assignment, a move, none).
const CXXOperatorCallExpr *assignmentBefore(const DeclRefExpr *Use, const ValueDecl *V, ASTContext &Ctx) {
  const auto *Fn = dyn_cast_or_null<FunctionDecl>(V->getParentFunctionOrMethod());
  if (!Fn || !Fn->hasBody())
    return nullptr;
  const SourceManager &SM = Ctx.getSourceManager();
  const CallExpr *Last = nullptr;
  for (const CallExpr *A : reassignments(V, *Fn, Ctx))
    if (SM.isBeforeInTranslationUnit(A->getEndLoc(), Use->getBeginLoc()) &&
        (!Last || SM.isBeforeInTranslationUnit(Last->getBeginLoc(), A->getBeginLoc())))
      Last = A;
  const auto *Assign = dyn_cast_or_null<CXXOperatorCallExpr>(Last);
  if (!Assign || Assign->getOperator() != OO_Equal)
    return nullptr;
  if (dominates(Assign, Use, Ctx))
    return Assign;
  const IfStmt *Guard = deviceGuardOf(Assign, Ctx);
  return Guard && dominates(Guard, Use, Ctx) ? Assign : nullptr;
}

// `x = x.to(kCPU); print(x);`: the value `Use` reads, when the assignment to
// `V` just before it runs before it every time; nullptr otherwise (see
// assignmentBefore; also when a loop around `Use` does not hold it, so that
// a later assignment in that loop may run in between).
const Expr *dominatingAssignedValue(const DeclRefExpr *Use, const ValueDecl *V, ASTContext &Ctx) {
  const CXXOperatorCallExpr *Assign = assignmentBefore(Use, V, Ctx);
  return Assign && loopsAroundAlsoHold(Use, Assign, Ctx) ? Assign->getArg(1) : nullptr;
}

// `x = y.cpu(); for (..) { use(x); x = x.index_select(0, keep); }`: a loop
// around `Use` turns after the assignment before it, and every later
// assignment to `V` keeps `V` where that assignment put it (it is computed
// from `V`, or placed so anyway). Then `Use` reads a tensor placed so.
DeviceKind placedAcrossLoopTurns(const DeclRefExpr *Use, const VarDecl *V, ASTContext &Ctx, int Depth) {
  const CXXOperatorCallExpr *Assign = assignmentBefore(Use, V, Ctx);
  if (!Assign)
    return DeviceKind::Unknown;
  DeviceKind K = placementImpl(Assign->getArg(1), Ctx, Depth + 1);
  if (K == DeviceKind::Unknown || !assumedPlacements().try_emplace(V, K).second)
    return DeviceKind::Unknown;
  const SourceManager &SM = Ctx.getSourceManager();
  const auto *Fn = cast<FunctionDecl>(V->getParentFunctionOrMethod());
  bool Kept = llvm::all_of(reassignments(V, *Fn, Ctx), [&](const CallExpr *A) {
    if (!SM.isBeforeInTranslationUnit(Assign->getBeginLoc(), A->getBeginLoc()))
      return true;  // this assignment or one before it
    const auto *Later = dyn_cast<CXXOperatorCallExpr>(A);
    return Later && Later->getOperator() == OO_Equal && placementImpl(Later->getArg(1), Ctx, Depth + 1) == K;
  });
  assumedPlacements().erase(V);
  return Kept ? K : DeviceKind::Unknown;
}

DeviceKind placementImpl(const Expr *E, ASTContext &Ctx, int Depth, bool AllowTuple) {
  E = stripImplicit(E);
  if (!E)
    return DeviceKind::Unknown;
  if (Depth > 12) {
    depthLimitHit() = true;
    return DeviceKind::Unknown;
  }
  if (isTensorSequence(E->getType())) {
    // The braced list or vector under an ArrayRef.
    if (const Expr *Inner = unwrapSequence(E); Inner != E)
      return placementImpl(Inner, Ctx, Depth + 1);
    if (const auto *ME = dyn_cast<MemberExpr>(E))
      if (const auto *Field = dyn_cast<FieldDecl>(ME->getMemberDecl()))
        return sequencePlacement(Field, Ctx, Depth);
    // A local or a parameter: below, with the tensors.
  }
  // {a, b} given to cat / stack.
  if (const auto *List = dyn_cast<InitListExpr>(E); List && E->getType()->isArrayType())
    return commonPlacement(List->inits(), Ctx, Depth);
  // t[i], a > b, a * b: computed where the tensor operands live.
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    if (Op->getOperator() == OO_Subscript && isTensorSequence(Op->getArg(0)->getType()))
      return placementImpl(Op->getArg(0), Ctx, Depth + 1);  // an element is where its sequence is
    // `module(x)` too: a module computes where its inputs are.
    bool ModuleCall = Op->getOperator() == OO_Call && AllowTuple;
    if ((!isTensorType(Op->getType()) && !ModuleCall) || Op->getOperator() == OO_Equal)
      return DeviceKind::Unknown;
    return commonPlacement(Op->arguments(), Ctx, Depth);
  }
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
    if (isElementAccess(MC))
      return placementImpl(MC->getImplicitObjectArgument(), Ctx, Depth + 1);
    // lstm->forward(x, state): where its inputs are (the module is there too).
    if (const CXXMethodDecl *M = MC->getMethodDecl(); M && M->getDeclName().isIdentifier() &&
                                                       M->getName() == "forward" &&
                                                       (isTensorType(MC->getType()) || AllowTuple))
      return commonPlacement(MC->arguments(), Ctx, Depth);
    llvm::StringRef Name = tensorMethodName(MC);
    // A method of the user's own class (Yolo::predict) that returns tensors
    // is where its return values are, like a free function of the file.
    if (const CXXMethodDecl *M = MC->getMethodDecl();
        Name.empty() && M && !M->isVirtual() && !isTorchFunction(M) &&
        (isTensorType(MC->getType()) || isTensorSequence(MC->getType())))
      return returnPlacement(M, Ctx, Depth);
    // Tuple-returning ops (max(dim), sort) reach here through structured
    // bindings; they are placed like tensor-returning ones.
    if (Name.empty() || !(isTensorType(MC->getType()) || AllowTuple))
      return DeviceKind::Unknown;
    if (Name == "cpu" || Name == "pin_memory")
      return DeviceKind::Cpu;
    if (Name == "cuda")
      return DeviceKind::Cuda;
    if (Name == "to") {
      if (const Expr *Dev = deviceArgOfTo(MC)) {
        DeviceKind K = classifyDeviceImpl(Dev, Ctx, Depth + 1);
        // A device the source does not show (`device_`, a parameter) is, in
        // training code, the GPU, as nosync-pageable-h2d takes it; another
        // tensor's device is wherever that tensor is.
        if (K == DeviceKind::Unknown && isDeviceTyped(Dev) && tensorMethodName(stripImplicit(Dev)) != "device")
          return DeviceKind::Cuda;
        if (K != DeviceKind::NoDevice)
          return K;
      }
      // to(other) is placed like `other`.
      const Expr *Arg0 = MC->getNumArgs() ? stripImplicit(MC->getArg(0)) : nullptr;
      if (Arg0 && isTensorType(Arg0->getType()))
        return placementImpl(Arg0, Ctx, Depth + 1);
    }
    // Every other tensor op (and to(dtype)) keeps its input's placement.
    return placementImpl(receiverOf(MC), Ctx, Depth + 1);
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const FunctionDecl *F = Call->getDirectCallee();
    // std::get<0>(lstm->forward(x)): placed like the tuple.
    if (F && F->getQualifiedNameAsString() == "std::get" && Call->getNumArgs() == 1 &&
        (isTensorType(Call->getType()) || AllowTuple))
      return placementImpl(Call->getArg(0), Ctx, Depth + 1, /*AllowTuple=*/true);
    if (F && !isTorchFunction(F) && !isa<CXXMethodDecl>(F) &&
        (isTensorType(Call->getType()) || isTensorSequence(Call->getType())))
      return returnPlacement(F, Ctx, Depth);
    if (!isTorchFunction(F) || !(isTensorType(Call->getType()) || AllowTuple))
      return DeviceKind::Unknown;
    if (isPlacingFactory(F->getName()))
      return factoryPlacement(Call, Ctx, Depth);
    // Other ATen functions compute where their tensor inputs live.
    return commonPlacement(Call->arguments(), Ctx, Depth);
  }
  // A data-loader batch's data and target are built on the CPU (the dataset's
  // get(), then collate); they are on the device only once the user moves them.
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    if (isDataExample(ME->getBase()->getType()))
      return DeviceKind::Cpu;
    const auto *Field = dyn_cast<FieldDecl>(ME->getMemberDecl());
    return Field && isTensorType(Field->getType()) ? memberPlacement(Field, Ctx, Depth) : DeviceKind::Unknown;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    // auto [values, indices] = t.max(-1): placed like the decomposed call,
    // or like what was assigned to it since (`act = softmax(act, 1).cpu();`).
    if (const auto *B = dyn_cast<BindingDecl>(DRE->getDecl())) {
      if (const Expr *Value = dominatingAssignedValue(DRE, B, Ctx))
        return placementImpl(Value, Ctx, Depth + 1);
      const auto *D = dyn_cast_or_null<VarDecl>(B->getDecomposedDecl());
      return D && D->getInit() ? placementImpl(D->getInit(), Ctx, Depth + 1, /*AllowTuple=*/true)
                               : DeviceKind::Unknown;
    }
    if (const auto *Param = dyn_cast<ParmVarDecl>(DRE->getDecl())) {
      if (isTensorType(Param->getType())) {
        if (const Expr *Value = dominatingAssignedValue(DRE, Param, Ctx))
          return placementImpl(Value, Ctx, Depth + 1);
        if (DeviceKind K = placedAcrossLoopTurns(DRE, Param, Ctx, Depth); K != DeviceKind::Unknown)
          return K;
      }
      return isTensorType(Param->getType()) || isTensorSequence(Param->getType())
                 ? parameterPlacement(Param, Ctx, Depth)
                 : DeviceKind::Unknown;
    }
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    if (!V || !V->hasLocalStorage())
      return DeviceKind::Unknown;
    if (auto It = assumedPlacements().find(V); It != assumedPlacements().end())
      return It->second;
    if (const Expr *Range = rangeOfLoopVariable(V, Ctx))
      return isTensorSequence(Range->getType()) ? placementImpl(Range, Ctx, Depth + 1) : DeviceKind::Unknown;
    if (isTensorType(V->getType())) {
      if (const Expr *Value = dominatingAssignedValue(DRE, V, Ctx))
        return placementImpl(Value, Ctx, Depth + 1);
      if (DeviceKind K = placedAcrossLoopTurns(DRE, V, Ctx, Depth); K != DeviceKind::Unknown)
        return K;
    }
    if (isTensorSequence(V->getType()))
      return sequencePlacement(V, Ctx, Depth);
    if (!V->getInit() || isEmptyConstruction(V->getInit()))  // `Tensor m;` then `m = ..`
      return !V->getParentFunctionOrMethod() ||
                     filledElsewhere(V, *cast<Decl>(V->getParentFunctionOrMethod()), Ctx)
                 ? DeviceKind::Unknown
                 : valuesPlacement(V, assignedValues(V, Ctx), Ctx, Depth);
    // `auto state = std::get<1>(lstm->forward(x))`: a tuple, placed like a tensor.
    DeviceKind K = placementImpl(V->getInit(), Ctx, Depth + 1, /*AllowTuple=*/!isTensorType(V->getType()));
    if (K == DeviceKind::Unknown || !isLocallyReassigned(V, Ctx) || readBeforeReassignment(DRE, V, Ctx))
      return K;
    // Reassigned: still `K` when every value it is given is placed like its
    // initializer.
    std::vector<const Expr *> Values = assignedValues(V, Ctx);
    Values.push_back(V->getInit());
    return valuesPlacement(V, Values, Ctx, Depth);
  }
  return DeviceKind::Unknown;
}

// The one tensor among `Args` (nullptr for none or several), for a value
// computed from it alone.
template <typename Range> const Expr *soleTensor(Range Args) {
  const Expr *Sole = nullptr;
  for (const Expr *A : Args)
    if (isTensorExpr(A) || isTensorSequence(stripImplicit(A)->getType())) {
      if (Sole)
        return nullptr;
      Sole = A;
    }
  return Sole;
}

// The parameter whose placement placementImpl would follow to decide `E`'s,
// along the same steps (ops that keep their input's placement, elements,
// locals' initializers); nullptr when `E` is placed by anything else.
const ParmVarDecl *placingParameterImpl(const Expr *E, ASTContext &Ctx, int Depth) {
  E = stripImplicit(E);
  if (!E || Depth > 12)
    return nullptr;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    if (Op->getOperator() == OO_Subscript && isTensorSequence(Op->getArg(0)->getType()))
      return placingParameterImpl(Op->getArg(0), Ctx, Depth + 1);
    if (!isTensorType(Op->getType()) || Op->getOperator() == OO_Equal)
      return nullptr;
    const Expr *Sole = soleTensor(Op->arguments());
    return Sole ? placingParameterImpl(Sole, Ctx, Depth + 1) : nullptr;
  }
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
    if (isElementAccess(MC))
      return placingParameterImpl(MC->getImplicitObjectArgument(), Ctx, Depth + 1);
    llvm::StringRef Name = tensorMethodName(MC);
    if (Name.empty() || !isTensorType(MC->getType()) || Name == "cpu" || Name == "cuda" || Name == "pin_memory")
      return nullptr;
    if (Name == "to")
      if (const Expr *Dev = deviceArgOfTo(MC); Dev && classifyDeviceImpl(Dev, Ctx, Depth + 1) != DeviceKind::NoDevice)
        return nullptr;
    if (Name == "to" && MC->getNumArgs() && isTensorType(stripImplicit(MC->getArg(0))->getType()))
      return nullptr;  // to(other)
    return placingParameterImpl(receiverOf(MC), Ctx, Depth + 1);
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const FunctionDecl *F = Call->getDirectCallee();
    if (!isTorchFunction(F) || !isTensorType(Call->getType()) || isPlacingFactory(F->getName()))
      return nullptr;
    const Expr *Sole = soleTensor(Call->arguments());
    return Sole ? placingParameterImpl(Sole, Ctx, Depth + 1) : nullptr;
  }
  const auto *DRE = dyn_cast<DeclRefExpr>(E);
  if (!DRE)
    return nullptr;
  if (const auto *Param = dyn_cast<ParmVarDecl>(DRE->getDecl())) {
    const auto *Fn = dyn_cast_or_null<FunctionDecl>(Param->getDeclContext());
    bool Typed = isTensorType(Param->getType()) || isTensorSequence(Param->getType());
    return Typed && Fn && Fn->getDeclName().isIdentifier() && !isLocallyReassigned(Param, Ctx) ? Param : nullptr;
  }
  const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
  if (!V || !V->hasLocalStorage())
    return nullptr;
  if (const Expr *Range = rangeOfLoopVariable(V, Ctx))
    return placingParameterImpl(Range, Ctx, Depth + 1);
  if (const Expr *Value = isTensorType(V->getType()) ? dominatingAssignedValue(DRE, V, Ctx) : nullptr)
    return placingParameterImpl(Value, Ctx, Depth + 1);
  if (!V->getInit() || isEmptyConstruction(V->getInit()) || isTensorSequence(V->getType()) ||
      isLocallyReassigned(V, Ctx))
    return nullptr;
  return placingParameterImpl(V->getInit(), Ctx, Depth + 1);
}

bool isPinnedImpl(const Expr *E, ASTContext &Ctx, int Depth) {
  E = stripImplicit(E);
  if (!E || Depth > 8)
    return false;
  if (tensorMethodName(E) == "pin_memory")
    return true;
  if (const auto *Call = dyn_cast<CallExpr>(E); Call && !isa<CXXMemberCallExpr>(E)) {
    // A factory given TensorOptions().pinned_memory(true).
    for (const Expr *Arg : Call->arguments()) {
      const auto *Opt = dyn_cast<CXXMemberCallExpr>(stripImplicit(Arg));
      for (; Opt; Opt = dyn_cast<CXXMemberCallExpr>(stripImplicit(Opt->getImplicitObjectArgument()))) {
        const CXXMethodDecl *M = Opt->getMethodDecl();
        if (!M || M->getParent()->getQualifiedNameAsString() != "c10::TensorOptions")
          break;
        if (M->getName() == "pinned_memory")
          return true;
      }
    }
    return false;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    return V && V->getInit() && !isa<ParmVarDecl>(V) && isPinnedImpl(V->getInit(), Ctx, Depth + 1);
  }
  return false;
}
}  // namespace

bool isDeviceTyped(const Expr *E) {
  E = stripImplicit(E);
  return E && (isDeviceRecord(E->getType()) || isDeviceTypeEnum(E->getType()));
}


DeviceKind classifyDevice(const Expr *E, ASTContext &Ctx) {
  return classifyDeviceImpl(E, Ctx, 0);
}

bool isOptionsOfTensor(const Expr *E) { return optionsOfTensor(E) != nullptr; }

bool optionsNameDevice(const Expr *E, int Depth) {
  E = stripImplicit(E);
  if (!E || Depth > 8)
    return false;
  if (isDeviceTyped(E))
    return true;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    return V && V->getInit() && !isa<ParmVarDecl>(V) && optionsNameDevice(V->getInit(), Depth + 1);
  }
  // TensorOptions(device), and the Device -> TensorOptions conversion.
  if (const auto *C = dyn_cast<CXXConstructExpr>(E))
    return C->getNumArgs() >= 1 && optionsNameDevice(C->getArg(0), Depth + 1);
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *M = MC->getMethodDecl();
    if (!M || M->getParent()->getQualifiedNameAsString() != "c10::TensorOptions")
      return false;
    return M->getName() == "device" || optionsNameDevice(MC->getImplicitObjectArgument(), Depth + 1);
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const FunctionDecl *F = Call->getDirectCallee();
    return F && isTorchFunction(F) && F->getDeclName().isIdentifier() && F->getName() == "device";
  }
  return false;
}

const Expr *deviceArgOfTo(const CXXMemberCallExpr *ToCall) {
  const CXXMethodDecl *M = ToCall->getMethodDecl();
  if (!M || M->getNumParams() == 0 || ToCall->getNumArgs() == 0)
    return nullptr;
  QualType P0 = M->getParamDecl(0)->getType();
  // to(TensorOptions, ...) and to(Device, ScalarType, ...).
  if (isTensorOptions(P0) || isDeviceRecord(P0))
    return ToCall->getArg(0);
  // to(optional<ScalarType>, optional<Layout>, optional<Device>, ...).
  if (M->getNumParams() >= 3 && ToCall->getNumArgs() >= 3 &&
      llvm::StringRef(M->getParamDecl(2)->getType().getAsString()).contains("Device"))
    return ToCall->getArg(2);
  return nullptr;  // to(ScalarType), to(TypeMeta), to(const Tensor&)
}

namespace {

// torch::data's datasets and transforms, and classes derived from them.
bool isDataPipelineClass(const CXXRecordDecl *R) {
  auto InTorchData = [](const CXXRecordDecl *C) {
    llvm::StringRef Q = C->getQualifiedNameAsString();
    return Q.starts_with("torch::data::datasets::") || Q.starts_with("torch::data::transforms::");
  };
  if (!R || !R->hasDefinition())
    return false;
  R = R->getDefinition();
  if (InTorchData(R))
    return true;
  bool Found = false;
  R->forallBases([&](const CXXRecordDecl *Base) {
    Found = Found || InTorchData(Base);
    return true;
  });
  return Found;
}

// A user's collate function (a functor or lambda given the examples of one
// batch, `std::vector<torch::data::Example<..>>`): it pads and stacks what the
// dataset built on the host, before the batch is moved to the device.
bool isCollateFunction(const FunctionDecl *F) {
  return llvm::any_of(F->parameters(), [](const ParmVarDecl *P) {
    const auto *S = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
        P->getType().getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl());
    if (!S || (S->getQualifiedNameAsString() != "std::vector" && S->getQualifiedNameAsString() != "c10::ArrayRef"))
      return false;
    const TemplateArgumentList &Args = S->getTemplateArgs();
    return Args.size() >= 1 && Args[0].getKind() == TemplateArgument::Type && isDataExample(Args[0].getAsType());
  });
}

// Code of a Dataset's get() / size(), a Transform's apply() or a collate
// function: it builds examples from host data, before any batch is moved to
// the device.
bool isInDataPipeline(const Expr *E, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(*E);
  while (!Parents.empty()) {
    if (const auto *M = Parents[0].get<CXXMethodDecl>())
      return (!M->getParent()->isLambda() && isDataPipelineClass(M->getParent())) || isCollateFunction(M);
    if (const auto *F = Parents[0].get<FunctionDecl>())
      return isCollateFunction(F);
    Parents = Ctx.getParents(Parents[0]);
  }
  return false;
}

}  // namespace

DeviceKind placementOf(const Expr *E, ASTContext &Ctx) {
  DeviceKind K = placementImpl(E, Ctx, 0);
  // Nothing in the source says where it lives, but it is data-pipeline code:
  // the CPU.
  if (K == DeviceKind::Unknown && E && (isTensorExpr(E) || isTensorSequence(E->getType())) &&
      isInDataPipeline(E, Ctx))
    return DeviceKind::Cpu;
  return K;
}

bool isProvablyOnCpu(const Expr *E, ASTContext &Ctx) { return placementOf(E, Ctx) == DeviceKind::Cpu; }

std::vector<const ParmVarDecl *> hostIfCallersElsewhereAgree(const Expr *E, ASTContext &Ctx) {
  std::vector<const ParmVarDecl *> Open;
  if (!E || openParameters())
    return Open;
  // A walk of its own: what it takes for granted must not reach the
  // placements kept for the rest of the unit, nor theirs this walk.
  llvm::DenseMap<const Decl *, DeviceKind> Kept = std::move(declPlacementCache());
  declPlacementCache().clear();
  bool LimitHit = std::exchange(depthLimitHit(), false);
  openParameters() = &Open;
  bool Host = placementOf(E, Ctx) == DeviceKind::Cpu;
  openParameters() = nullptr;
  declPlacementCache() = std::move(Kept);
  depthLimitHit() = LimitHit;
  if (!Host)
    Open.clear();
  llvm::sort(Open);
  Open.erase(std::unique(Open.begin(), Open.end()), Open.end());
  return Open;
}

const ParmVarDecl *placingParameter(const Expr *E, ASTContext &Ctx) {
  return placingParameterImpl(E, Ctx, 0);
}

char placementCode(DeviceKind K) { return K == DeviceKind::Cpu ? 'c' : K == DeviceKind::Cuda ? 'g' : '?'; }

std::string argumentPlacements(const CallExpr *Call, const FunctionDecl *Callee, ASTContext &Ctx) {
  const FunctionDecl *Direct = Call->getDirectCallee();
  if (!Direct || !Callee)
    return "";
  if (const FunctionDecl *Pattern = Direct->getTemplateInstantiationPattern())
    Direct = Pattern;
  // `model(x)` reaches forward() through ModuleHolder::operator(): other
  // parameters than the callee's.
  if (Direct->getCanonicalDecl() != Callee->getCanonicalDecl())
    return "";
  // A member operator's first argument is the object.
  unsigned Offset = isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Direct) ? 1 : 0;
  std::string Out;
  for (unsigned I = 0; I < Callee->getNumParams(); ++I) {
    const Expr *Arg = I + Offset < Call->getNumArgs() ? Call->getArg(I + Offset) : nullptr;
    bool Tensor = Arg && !isa<CXXDefaultArgExpr>(Arg) && (isTensorExpr(Arg) || isTensorSequence(stripImplicit(Arg)->getType()));
    Out.push_back(Tensor ? placementCode(placementOf(Arg, Ctx)) : '?');
  }
  return Out;
}

void clearPlacementCache() {
  declPlacementCache().clear();
  reassignmentCache().clear();
  depthLimitHit() = false;
}

bool isHostCopyOfDeviceValue(const Expr *E, ASTContext &Ctx) {
  // Down through elements and views of the copy: x.to(kCPU)[0], x.cpu().squeeze().
  E = stripImplicit(E);
  while (E) {
    const auto *Op = dyn_cast<CXXOperatorCallExpr>(E);
    const auto *MC = dyn_cast<CXXMemberCallExpr>(E);
    if (Op && Op->getOperator() == OO_Subscript && isTensorExpr(Op->getArg(0)))
      E = stripImplicit(Op->getArg(0));
    else if (MC && isTensorType(MC->getType()) && !tensorMethodName(MC).empty() &&
             !llvm::is_contained({"cpu", "to", "cuda"}, tensorMethodName(MC)))
      E = stripImplicit(receiverOf(MC));
    else
      break;
  }
  const auto *Copy = dyn_cast_or_null<CXXMemberCallExpr>(E);
  return Copy && opOfCall(Copy, [](const OpEntry &Entry) { return Entry.op == Op::Cpu || Entry.op == Op::To; }) &&
         isProvablyOnCpu(Copy, Ctx) && !isProvablyOnCpu(receiverOf(Copy), Ctx);
}

bool isPinned(const Expr *E, ASTContext &Ctx) { return isPinnedImpl(E, Ctx, 0); }

NonBlocking nonBlockingArg(const CallExpr *Call, const ASTContext &Ctx) {
  const FunctionDecl *F = Call->getDirectCallee();
  if (!F)
    return NonBlocking::No;
  for (unsigned I = 0, N = std::min(F->getNumParams(), Call->getNumArgs()); I < N; ++I) {
    if (F->getParamDecl(I)->getName() != "non_blocking")
      continue;
    const Expr *Arg = Call->getArg(I);
    if (isa<CXXDefaultArgExpr>(Arg))
      return NonBlocking::No;
    bool Value = false;
    if (Arg->isValueDependent() || !Arg->EvaluateAsBooleanCondition(Value, Ctx))
      return NonBlocking::Unknown;
    return Value ? NonBlocking::Yes : NonBlocking::No;
  }
  return NonBlocking::No;
}
}  // namespace clang::tidy::nosync
