#include "utils/SyncContext.h"

#include "utils/AstHelpers.h"
#include "utils/ColdPath.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <cctype>
#include <optional>

namespace clang::tidy::nosync {
namespace {

// One declaration per function, whatever template instantiation or
// redeclaration we met it through.
const FunctionDecl *normalize(const FunctionDecl *F) {
  if (!F)
    return nullptr;
  if (const FunctionDecl *Pattern = F->getTemplateInstantiationPattern())
    F = Pattern;
  return F->getCanonicalDecl();
}

using Edge = CallEdge<const FunctionDecl *, SourceLocation>;

bool containsThrottleTest(const Stmt *S, int Depth = 0);
bool throttles(const IfStmt *If);
bool isTestFunction(const FunctionDecl *F, ASTContext &Ctx);
bool isOneOffFunction(const FunctionDecl *F);
bool isTrainingDriver(const FunctionDecl *F);
bool isTrainingCall(const Stmt *S);
bool trainsElsewhere(const FunctionDecl *F);
bool trainsThroughCalls(const Stmt *S, int Depth = 0);
bool isPassLoop(const Stmt *Loop, ASTContext &Ctx);
bool neverTaken(const IfStmt *If);
bool dispatchesCommand(const IfStmt *If, ASTContext &Ctx);
enum class Leaves { Nothing, InnermostLoop, AllLoops };
Leaves leavesLoop(const IfStmt *If);
const Stmt *loopLeftByBreak(const IfStmt *If, ASTContext &Ctx);

// The user's methods by name (LibTorch and the standard library skipped).
class UserMethods : public RecursiveASTVisitor<UserMethods> {
public:
  explicit UserMethods(const SourceManager &SM) : SM(SM) {}
  llvm::StringMap<std::vector<const CXXMethodDecl *>> ByName;
  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) && SM.isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }
  bool VisitCXXMethodDecl(CXXMethodDecl *M) {
    if (!M->isImplicit() && M->getDeclName().isIdentifier())
      ByName[M->getName()].push_back(M);
    return true;
  }

private:
  const SourceManager &SM;
};

// The function a thread start names: `&Class::method`, `function`, or a
// lambda (its call operator).
const FunctionDecl *calledThrough(const Expr *Callable) {
  if (!Callable)
    return nullptr;
  const Expr *E = Callable->IgnoreImplicit()->IgnoreParens();
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(E); Construct && Construct->getNumArgs() == 1)
    E = Construct->getArg(0)->IgnoreImplicit()->IgnoreParens();  // a lambda copied into the argument
  if (const auto *Addr = dyn_cast<UnaryOperator>(E); Addr && Addr->getOpcode() == UO_AddrOf)
    E = Addr->getSubExpr()->IgnoreParens();
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    return dyn_cast<FunctionDecl>(Ref->getDecl());
  if (const auto *Lambda = dyn_cast<LambdaExpr>(E))
    return Lambda->getCallOperator();
  return nullptr;
}

// std::thread / std::jthread / boost::thread constructed with a callable.
const FunctionDecl *threadEntryOf(const CXXRecordDecl *Made, const Expr *FirstArg) {
  if (!Made || !Made->getDeclName().isIdentifier())
    return nullptr;
  std::string Q = Made->getQualifiedNameAsString();
  if (Q != "std::thread" && Q != "std::jthread" && Q != "boost::thread")
    return nullptr;
  return calledThrough(FirstArg);
}

// std::async([policy,] f, args...) and pthread_create(&t, attr, f, arg).
const FunctionDecl *threadEntryOf(const CallExpr *Call) {
  const FunctionDecl *F = Call->getDirectCallee();
  if (!F || !F->getDeclName().isIdentifier())
    return nullptr;
  std::string Q = F->getQualifiedNameAsString();
  if (Q == "std::async" && Call->getNumArgs() >= 1) {
    const Expr *First = Call->getArg(0)->IgnoreImplicit();
    bool HasPolicy = First->getType()->isEnumeralType();
    return HasPolicy ? (Call->getNumArgs() >= 2 ? calledThrough(Call->getArg(1)) : nullptr) : calledThrough(First);
  }
  if (Q == "pthread_create" && Call->getNumArgs() == 4)
    return calledThrough(Call->getArg(2));
  return nullptr;
}

// Records, for every call in user code, the caller, the callee and whether
// the call sits in a loop; then closes the "called from a loop" set over the
// call graph.
class CallGraphBuilder : public RecursiveASTVisitor<CallGraphBuilder> {
public:
  explicit CallGraphBuilder(ASTContext &Ctx) : Ctx(Ctx) {}

  bool TraverseDecl(Decl *D) {
    if (!D)
      return true;
    if (!isa<TranslationUnitDecl>(D) && Ctx.getSourceManager().isInSystemHeader(D->getLocation()))
      return true;  // LibTorch and the standard library are not the user's hot paths
    const auto *F = dyn_cast<FunctionDecl>(D);
    if (!F || !F->doesThisDeclarationHaveABody())
      return RecursiveASTVisitor::TraverseDecl(D);
    return traverseAsFunction(F, [&] { return RecursiveASTVisitor::TraverseDecl(D); });
  }

  bool TraverseLambdaExpr(LambdaExpr *L) {
    // A lambda body is its own function for the call graph; calls inside it
    // are attributed to its call operator, which the enclosing code calls.
    return traverseAsFunction(L->getCallOperator(),
                              [&] { return RecursiveASTVisitor::TraverseLambdaExpr(L); });
  }

  // Runs `Traverse` with `F` as the current caller and loop/throttle depth
  // reset: a function body starts outside any loop of its callers.
  template <class TraverseFn>
  bool traverseAsFunction(const FunctionDecl *F, TraverseFn Traverse) {
    const FunctionDecl *SavedFn = CurrentFn;
    unsigned SavedDepth = LoopDepth, SavedThrottle = ThrottleDepth;
    bool SavedPass = OutermostLoopIsPass;
    CurrentFn = normalize(F);
    LoopDepth = ThrottleDepth = 0;
    bool Result = Traverse();
    CurrentFn = SavedFn;
    LoopDepth = SavedDepth;
    ThrottleDepth = SavedThrottle;
    OutermostLoopIsPass = SavedPass;
    return Result;
  }

  bool TraverseForStmt(ForStmt *S) {
    TraverseStmt(S->getInit());
    if (isTinyLoop(S, Ctx))  // straight-line code written as a loop
      return TraverseStmt(S->getCond()) && TraverseStmt(S->getInc()) && TraverseStmt(S->getBody());
    enterLoop(S);
    TraverseStmt(S->getCond());
    TraverseStmt(S->getInc());
    TraverseStmt(S->getBody());
    --LoopDepth;
    return true;
  }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) {
    TraverseStmt(S->getInit());
    TraverseStmt(S->getRangeInit());
    enterLoop(S);
    TraverseStmt(S->getLoopVarStmt());
    TraverseStmt(S->getBody());
    --LoopDepth;
    return true;
  }
  bool TraverseIfStmt(IfStmt *S) {
    TraverseStmt(S->getInit());
    TraverseStmt(S->getConditionVariableDeclStmt());
    TraverseStmt(S->getCond());
    if (neverTaken(S))  // dead in this build: its calls never happen
      return TraverseStmt(S->getElse());
    bool Throttles = throttles(S);
    ThrottleDepth += Throttles;
    // A command's branch runs once per command, not per turn of the loop
    // that reads the commands.
    unsigned SavedLoopDepth = LoopDepth;
    if (LoopDepth && (dispatchesCommand(S, Ctx) || onceGuardOf(S) == OnceGuard::PerCall))
      LoopDepth = 0;
    // A branch that ends by leaving the loop runs once per run of that loop:
    // `if (loss < best) { log(loss.item()); break; }`.
    if (Leaves L = leavesLoop(S); L == Leaves::AllLoops)
      LoopDepth = 0;
    else if (L == Leaves::InnermostLoop && LoopDepth && loopLeftByBreak(S, Ctx))
      --LoopDepth;
    TraverseStmt(S->getThen());
    LoopDepth = SavedLoopDepth;
    ThrottleDepth -= Throttles;
    TraverseStmt(S->getElse());
    return true;
  }
  bool TraverseWhileStmt(WhileStmt *S) { return inLoop(S, [&] { return RecursiveASTVisitor::TraverseWhileStmt(S); }); }
  bool TraverseDoStmt(DoStmt *S) { return inLoop(S, [&] { return RecursiveASTVisitor::TraverseDoStmt(S); }); }

  bool VisitCallExpr(CallExpr *Call) {
    if (!CurrentFn)
      return true;
    const FunctionDecl *Direct = Call->getDirectCallee();
    UnitTrains = UnitTrains || isTrainingCall(Call) || (Direct && trainsElsewhere(Direct));
    addThreadStart(Call, threadEntryOf(Call));
    for (const FunctionDecl *Callee : calleesOf(Call)) {
      Edges.push_back({CurrentFn, Callee, LoopDepth > 0, ThrottleDepth > 0, isColdSite(Call),
                       runsOnce(CurrentFn), Call->getBeginLoc()});
      Edges.back().InEvalLoop = LoopDepth > 0 && OutermostLoopIsPass;  // finish() keeps it if the unit trains
      Calls.push_back(Call);
    }
    for (const FunctionDecl *Callee : llvm::concat<const FunctionDecl *const>(
             dependentCallees(Call), unresolvedCallees(Call), overridersCalled(Call))) {
      Edges.push_back({CurrentFn, Callee, LoopDepth > 0, ThrottleDepth > 0, isColdSite(Call),
                       runsOnce(CurrentFn), Call->getBeginLoc()});
      Edges.back().InEvalLoop = LoopDepth > 0 && OutermostLoopIsPass;
      Calls.push_back(nullptr);  // arguments of dependent types are not placed
    }
    return true;
  }

  // `Sampler sampler(params, device)` in a step loop: a user constructor runs
  // where the object is made, so it is called from there like a function.
  bool VisitCXXConstructExpr(CXXConstructExpr *E) {
    const CXXConstructorDecl *Ctor = E->getConstructor();
    if (CurrentFn && Ctor)
      addThreadStart(E, threadEntryOf(Ctor->getParent(), E->getNumArgs() ? E->getArg(0) : nullptr));
    if (!CurrentFn || !Ctor || Ctor->isImplicit() ||
        Ctx.getSourceManager().isInSystemHeader(Ctor->getLocation()))
      return true;
    Edges.push_back({CurrentFn, normalize(Ctor), LoopDepth > 0, ThrottleDepth > 0, isColdSite(E),
                     runsOnce(CurrentFn), E->getBeginLoc()});
    Edges.back().InEvalLoop = LoopDepth > 0 && OutermostLoopIsPass;
    Calls.push_back(nullptr);  // no argument placements: constructors are not placed by their callers
    return true;
  }

  /// After the traversal: a loop that does not train is an evaluation pass
  /// only where something in the unit trains (an inference program's loops
  /// are its hot loops).
  void finish() {
    if (!UnitTrains)
      for (Edge &E : Edges)
        E.InEvalLoop = false;
  }

  const std::vector<Edge> &edges() const { return Edges; }
  /// The call of each edge, in the same order (nullptr for a construction).
  const std::vector<const CallExpr *> &calls() const { return Calls; }
  /// Whether any function of the unit trains (Tensor::backward, an optimizer step).
  bool unitTrains() const { return UnitTrains; }

private:

  // `std::thread(&NeuralSLAM::batch_train, this)`: the entry runs once per
  // thread started, like main() for its thread, so the start is an edge from
  // a caller that runs once: started from straight-line code, the entry's
  // straight-line code runs once and its loops are its hot loops; started in
  // a loop or from hot code, it is hot. A constructor that starts a thread is
  // not the thread's setup: the edge is cold only from a test or a cold path.
  void addThreadStart(const Expr *Start, const FunctionDecl *Entry) {
    if (!Entry)
      return;
    Edges.push_back({CurrentFn, normalize(Entry), LoopDepth > 0, ThrottleDepth > 0,
                     isTestFunction(CurrentFn, Ctx) || coldPathOf(Start, Ctx) != ColdPath::None,
                     /*CallerRunsOnce=*/true, Start->getBeginLoc()});
    Calls.push_back(nullptr);  // the thread's arguments are not placed
  }

  // Entering a loop; at a function's outermost loop, whether that loop is a
  // pass (neither trains nor serves requests).
  void enterLoop(const Stmt *Loop) {
    if (LoopDepth++ == 0)
      OutermostLoopIsPass = isPassLoop(Loop, Ctx);
  }

  template <typename Fn> bool inLoop(const Stmt *Loop, Fn Traverse) {
    enterLoop(Loop);
    bool Result = Traverse();
    --LoopDepth;
    return Result;
  }

  // `thermostat.set_temp(t)` in a template whose `thermostat` has a template
  // parameter's type: unresolved until instantiation, and a template in a
  // header often has none in the unit. It may call any user method of that
  // name taking that many arguments; a name that many classes share (more
  // than four such methods) says too little and gives no edge.
  llvm::SmallVector<const FunctionDecl *, 4> dependentCallees(const CallExpr *Call) {
    const auto *M = dyn_cast<CXXDependentScopeMemberExpr>(Call->getCallee()->IgnoreParens());
    if (!M || !M->getMember().isIdentifier())
      return {};
    auto It = methodsByName().find(M->getMember().getAsIdentifierInfo()->getName());
    if (It == methodsByName().end())
      return {};
    return fewCallees(It->second, [&](const FunctionDecl *F) { return takesArguments(F, Call); }, 4);
  }

  // `model->bind(grid)` on a pointer to the base class: a virtual call
  // reaches the overrides of the unit (HestonModelImpl::bind) too. A call
  // qualified with its class (Base::bind(grid)) dispatches to that one only.
  llvm::SmallVector<const FunctionDecl *, 4> overridersCalled(const CallExpr *Call) {
    const auto *MC = dyn_cast<CXXMemberCallExpr>(Call);
    const CXXMethodDecl *M = MC ? MC->getMethodDecl() : nullptr;
    const auto *Member = MC ? dyn_cast<MemberExpr>(MC->getCallee()->IgnoreParens()) : nullptr;
    if (!M || !M->isVirtual() || !Member || Member->hasQualifier() || !M->getDeclName().isIdentifier())
      return {};
    auto It = methodsByName().find(M->getName());
    if (It == methodsByName().end())
      return {};
    return fewCallees(It->second, [&](const CXXMethodDecl *Other) { return overrides(Other, M->getCanonicalDecl()); },
                      8);
  }

  static bool overrides(const CXXMethodDecl *M, const CXXMethodDecl *Base) {
    return llvm::any_of(M->overridden_methods(), [&](const CXXMethodDecl *O) {
      return O->getCanonicalDecl() == Base || overrides(O, Base);
    });
  }

  // User methods by name, for dependentCallees and overridersCalled.
  const llvm::StringMap<std::vector<const CXXMethodDecl *>> &methodsByName() {
    if (!MethodsByName) {
      UserMethods Found(Ctx.getSourceManager());
      Found.TraverseDecl(Ctx.getTranslationUnitDecl());
      MethodsByName = std::move(Found.ByName);
    }
    return *MethodsByName;
  }

  // `evaluate(dataset, model, result_path)` whose `result_path` did not
  // compile (a type of a header not found), or whose argument waits for a
  // template parameter: the compiler keeps the name's overload set instead of
  // a callee. Any user function of the set that takes that many arguments may
  // be the one called; a set of more than four says too little.
  llvm::SmallVector<const FunctionDecl *, 4> unresolvedCallees(const CallExpr *Call) {
    const auto *Lookup = dyn_cast<UnresolvedLookupExpr>(Call->getCallee()->IgnoreParens());
    if (!Lookup)
      return {};
    llvm::SmallVector<const FunctionDecl *, 4> Set;
    for (const NamedDecl *D : Lookup->decls()) {
      const auto *F = dyn_cast<FunctionDecl>(D->getUnderlyingDecl());
      if (const auto *T = dyn_cast<FunctionTemplateDecl>(D->getUnderlyingDecl()))
        F = T->getTemplatedDecl();
      if (F && !Ctx.getSourceManager().isInSystemHeader(F->getLocation()))
        Set.push_back(F);
    }
    return fewCallees(Set, [&](const FunctionDecl *F) { return takesArguments(F, Call); }, 4);
  }

  static bool takesArguments(const FunctionDecl *F, const CallExpr *Call) {
    return F->getMinRequiredArguments() <= Call->getNumArgs() && Call->getNumArgs() <= F->getNumParams();
  }

  // The candidates that `Fits`, each once; none when more than `Cap` do (a
  // name that many functions share says too little to give an edge).
  template <typename Range, typename Pred>
  static llvm::SmallVector<const FunctionDecl *, 4> fewCallees(const Range &Candidates, Pred Fits, size_t Cap) {
    llvm::SmallVector<const FunctionDecl *, 4> Out;
    for (const auto *F : Candidates)
      if (Fits(F) && !llvm::is_contained(Out, normalize(F)))
        Out.push_back(normalize(F));
    if (Out.size() > Cap)
      Out.clear();
    return Out;
  }

  // The direct callee; for `model(x)` on a TORCH_MODULE holder, the
  // forward() methods of the wrapped module, which ModuleHolder::operator()
  // forwards to from inside LibTorch's headers.
  static llvm::SmallVector<const FunctionDecl *, 2> calleesOf(const CallExpr *Call) {
    llvm::SmallVector<const FunctionDecl *, 2> Out;
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee)
      return Out;
    Out.push_back(normalize(Callee));
    const auto *M = dyn_cast<CXXMethodDecl>(Callee);
    const auto *Holder = M ? dyn_cast<ClassTemplateSpecializationDecl>(M->getParent()) : nullptr;
    if (Holder && Holder->getQualifiedNameAsString() == "torch::nn::ModuleHolder" &&
        M->getOverloadedOperator() == OO_Call && Holder->getTemplateArgs().size() >= 1) {
      QualType Impl = Holder->getTemplateArgs()[0].getAsType();
      if (const CXXRecordDecl *R = Impl.isNull() ? nullptr : Impl->getAsCXXRecordDecl())
        for (const CXXMethodDecl *Method : R->methods())
          if (Method->getDeclName().isIdentifier() && Method->getName() == "forward")
            Out.push_back(normalize(Method));
    }
    return Out;
  }

  // Tests and setup/export code run rarely by themselves (memoized: every
  // call in such a function asks).
  bool isColdCaller(const FunctionDecl *F) {
    auto [It, Inserted] = ColdCallers.try_emplace(F, false);
    if (Inserted)
      It->second = isTestFunction(F, Ctx) || isOneOffFunction(F);
    return It->second;
  }

  // A call from a test or setup function, or on a failure or debug-logging
  // path (`ACTS_DEBUG(details(t))`, a message built before a throw).
  bool isColdSite(const Stmt *Call) { return isColdCaller(CurrentFn) || coldPathOf(Call, Ctx) != ColdPath::None; }

  // main() and training drivers run once unless a loop calls them (memoized
  // like isColdCaller).
  bool runsOnce(const FunctionDecl *F) {
    auto [It, Inserted] = OnceCallers.try_emplace(F, false);
    if (Inserted)
      It->second = F->isMain() || isTrainingDriver(F);
    return It->second;
  }

  ASTContext &Ctx;
  const FunctionDecl *CurrentFn = nullptr;
  unsigned LoopDepth = 0;
  unsigned ThrottleDepth = 0;
  bool OutermostLoopIsPass = false;
  bool UnitTrains = false;
  std::vector<Edge> Edges;
  // User methods by name (built on first use).
  std::optional<llvm::StringMap<std::vector<const CXXMethodDecl *>>> MethodsByName;
  std::vector<const CallExpr *> Calls;
  llvm::DenseMap<const FunctionDecl *, bool> ColdCallers, OnceCallers;
};

// Looks through the user's code of a translation unit for anything that puts a
// tensor on a GPU: kCUDA / DeviceType::CUDA, a "cuda..." string (a device
// spec), .cuda() / .is_cuda(), torch::cuda:: / at::cuda:: / c10::cuda:: calls,
// the CUDA runtime API. Also notes whether the unit defines main().
class CudaMentionFinder : public RecursiveASTVisitor<CudaMentionFinder> {
public:
  explicit CudaMentionFinder(ASTContext &Ctx) : Ctx(Ctx) {}
  bool MentionsCuda = false;

  bool TraverseDecl(Decl *D) {
    if (!D || MentionsCuda)
      return true;
    if (!isa<TranslationUnitDecl>(D) && Ctx.getSourceManager().isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (const NamedDecl *D = E->getDecl(); D && D->getDeclName().isIdentifier())
      MentionsCuda |= D->getName() == "kCUDA" || (isa<EnumConstantDecl>(D) && D->getName() == "CUDA");
    return !MentionsCuda;
  }
  bool VisitStringLiteral(StringLiteral *S) {
    MentionsCuda |= S->getCharByteWidth() == 1 && S->getString().contains_insensitive("cuda");
    return !MentionsCuda;
  }
  // torch::Device(config.device), Device(argv[1]): chosen at run time, so it
  // may be CUDA though no literal says so.
  bool VisitCXXConstructExpr(CXXConstructExpr *C) {
    if (C->getNumArgs() == 0 || qualifiedTagName(C->getType()) != "c10::Device")
      return true;
    // Down to what was spelled: Device("cpu") converts its literal to a
    // std::string first.
    const Expr *Arg = stripImplicit(C->getArg(0));
    QualType T = Arg->getType().getNonReferenceType();
    bool Textual = T->isPointerType() || llvm::StringRef(qualifiedTagName(T)).contains("string");
    MentionsCuda |= Textual && !isa<StringLiteral>(Arg);
    return !MentionsCuda;
  }
  bool VisitCallExpr(CallExpr *Call) {
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F || !F->getDeclName().isIdentifier())
      return true;
    std::string Q = F->getQualifiedNameAsString();
    llvm::StringRef Name = F->getName();
    MentionsCuda |= llvm::StringRef(Q).contains("cuda::") || Name.starts_with("cuda") ||
                    tensorMethodName(Call) == "cuda" || tensorMethodName(Call) == "is_cuda";
    return !MentionsCuda;
  }

private:
  ASTContext &Ctx;
};

// Does the statement run on each iteration of `Loop`, given that `Child` is
// the loop's direct child on the path up from it?
bool isIteratedPart(const Stmt *Loop, const Stmt *Child) {
  if (const auto *F = dyn_cast<ForStmt>(Loop))
    return Child != F->getInit();
  if (const auto *R = dyn_cast<CXXForRangeStmt>(Loop))
    return Child == R->getBody() || Child == R->getLoopVarStmt();
  return isa<WhileStmt, DoStmt>(Loop);
}

// `step == warmup_steps`, `epoch == 0`, `frame_count_ == 0`: a step or frame
// counter (a local or a member) compared for equality picks one iteration out
// of all of them.
bool isOneIterationTest(const BinaryOperator *B) {
  if (B->getOpcode() != BO_EQ)
    return false;
  static const llvm::StringSet<> CounterWords = {"iter",  "iters",  "iteration", "step",  "steps",
                                                 "epoch", "epochs", "frame",     "frames"};
  return llvm::any_of(std::initializer_list<const Expr *>{B->getLHS(), B->getRHS()}, [](const Expr *E) {
    E = E->IgnoreParenImpCasts();
    const ValueDecl *Counter = nullptr;
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
      Counter = Ref->getDecl();
    else if (const auto *Member = dyn_cast<MemberExpr>(E))
      Counter = Member->getMemberDecl();
    if (!Counter || !Counter->getDeclName().isIdentifier() || !E->getType()->isIntegerType())
      return false;
    return llvm::any_of(identifierWords(Counter->getName()),
                        [](const std::string &W) { return CounterWords.contains(W); });
  });
}

// `ae % 5` inside `for (int ae = 0; ae < 5; ae++)`: the counter of the loop
// around it never reaches the divisor, so a test of the remainder picks one
// iteration of every run of that loop, not one in N runs of the loop outside.
bool countsWithinOneCycle(const BinaryOperator *Rem) {
  const auto *Ref = dyn_cast<DeclRefExpr>(Rem->getLHS()->IgnoreParenImpCasts());
  const auto *V = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!V || !V->isLocalVarDecl() || !V->getInit())
    return false;
  ASTContext &Ctx = V->getASTContext();
  DynTypedNodeList Decl = Ctx.getParents(*V);
  const auto *DS = Decl.empty() ? nullptr : Decl[0].get<DeclStmt>();
  DynTypedNodeList Loop = DS ? Ctx.getParents(*DS) : DynTypedNodeList(DynTypedNode());
  const auto *For = DS && !Loop.empty() ? Loop[0].get<ForStmt>() : nullptr;
  const auto *Cond = For && For->getInit() == DS ? dyn_cast_or_null<BinaryOperator>(For->getCond()) : nullptr;
  if (!Cond || Cond->getOpcode() != BO_LT)
    return false;
  const auto *Counter = dyn_cast<DeclRefExpr>(Cond->getLHS()->IgnoreParenImpCasts());
  Expr::EvalResult Start, Bound, Divisor;
  return Counter && Counter->getDecl() == V && !V->getInit()->isValueDependent() &&
         V->getInit()->EvaluateAsInt(Start, Ctx) && Start.Val.getInt() == 0 &&
         !Cond->getRHS()->isValueDependent() && Cond->getRHS()->EvaluateAsInt(Bound, Ctx) &&
         !Rem->getRHS()->isValueDependent() && Rem->getRHS()->EvaluateAsInt(Divisor, Ctx) &&
         Bound.Val.getInt().sle(Divisor.Val.getInt());
}

// A condition whose branch runs on few iterations: a remainder
// (`step % N == 0`), one iteration picked by equality (`epoch == 0`), or a
// predicate of the unit that tests either.
bool containsThrottleTest(const Stmt *S, int Depth) {
  if (!S)
    return false;
  if (const auto *B = dyn_cast<BinaryOperator>(S);
      B && ((B->getOpcode() == BO_Rem && !countsWithinOneCycle(B)) || isOneIterationTest(B)))
    return true;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S); Op && Op->getOperator() == OO_Percent)
    return true;
  // `bool checkpoint_it = epoch % save_every == 0; ... if (checkpoint_it)`:
  // a local flag set from such a test throttles like the test.
  if (const auto *Ref = dyn_cast<DeclRefExpr>(S); Ref && Depth < 2)
    if (const auto *V = dyn_cast<VarDecl>(Ref->getDecl());
        V && V->isLocalVarDecl() && V->getType()->isBooleanType() && V->getInit())
      return containsThrottleTest(V->getInit(), Depth + 1);
  // if (is_refining(iter)): a predicate of the unit whose body tests a
  // remainder (`iter % refine_every == 0`) throttles like the test itself.
  if (const auto *Call = dyn_cast<CallExpr>(S); Call && Depth < 2)
    if (const FunctionDecl *F = Call->getDirectCallee(); F && F->getReturnType()->isBooleanType())
      if (const FunctionDecl *Def = F->getDefinition();
          Def && !Def->getASTContext().getSourceManager().isInSystemHeader(Def->getLocation()) &&
          containsThrottleTest(Def->getBody(), Depth + 1))
        return true;
  return llvm::any_of(S->children(), [Depth](const Stmt *C) { return containsThrottleTest(C, Depth); });
}

// A source of the project's tests: named `test_*` or in a `test`/`tests`
// directory. A bare `test.cpp` is as often a program's test mode, and a
// `foo_test.cpp` may keep the utilities it tests beside them. Only the
// file's own directory and the one above it count: the project may live
// under a `tests` directory of someone's disk.
bool isTestSource(SourceLocation Loc, const SourceManager &SM) {
  PresumedLoc P = Loc.isValid() ? SM.getPresumedLoc(SM.getExpansionLoc(Loc)) : PresumedLoc();
  if (!P.isValid())
    return false;
  llvm::StringRef File = P.getFilename();
  if (llvm::StringRef(llvm::sys::path::stem(File).lower()).starts_with("test_"))
    return true;
  static const llvm::StringSet<> TestDirs = {"test", "tests", "testing", "unittests", "unit_tests"};
  llvm::StringRef Dir = llvm::sys::path::parent_path(File);
  for (int Level = 0; Level < 2 && !Dir.empty(); ++Level, Dir = llvm::sys::path::parent_path(Dir))
    if (TestDirs.contains(llvm::sys::path::filename(Dir).lower()))
      return true;
  return false;
}

bool isTestFunction(const FunctionDecl *F, ASTContext &Ctx) {
  if (isTestSource(F->getLocation(), Ctx.getSourceManager()))
    return true;
  static const llvm::StringSet<> TestMacros = {
      "TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P", "GTEST_TEST", "FRIEND_TEST",
      "TEST_CASE", "TEST_CASE_FIXTURE", "TEST_CASE_TEMPLATE", "DOCTEST_TEST_CASE", "SCENARIO",
      "CATCH_TEST_CASE", "TEST_CASE_METHOD", "TEMPLATE_TEST_CASE", "CATCH_SCENARIO",
      "TEMPLATE_PRODUCT_TEST_CASE", "METHOD_AS_TEST_CASE"};
  if (TestMacros.contains(outermostMacroName(F->getLocation(), Ctx)))
    return true;
  using namespace ast_matchers;
  // GoogleTest bodies also reached without the macro (hand-written TestBody).
  return !match(cxxMethodDecl(hasName("TestBody"), ofClass(cxxRecordDecl(isDerivedFrom("::testing::Test")))),
                *F, Ctx)
              .empty();
}

// A statement that captures a CUDA graph (CUDAGraph::capture_begin): the
// warm-up and synchronizes around a capture run once per graph; its replay
// is what runs every step.
bool callsMethodNamed(const Stmt *S, llvm::StringRef Name) {
  if (!S)
    return false;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S))
    if (const CXXMethodDecl *M = MC->getMethodDecl(); M && M->getDeclName().isIdentifier() && M->getName() == Name)
      return true;
  return llvm::any_of(S->children(), [&](const Stmt *C) { return callsMethodNamed(C, Name); });
}

// A function that captures a CUDA graph and does not replay it: a function
// that captures lazily and then replays (execute() capturing on its first
// call) runs every step.
bool capturesGraph(const Stmt *Body) {
  return callsMethodNamed(Body, "capture_begin") && !callsMethodNamed(Body, "replay");
}

// `void ActorImpl::to(torch::Device device)`: a module's own move to a
// device (an override of Module::to that also moves its plain tensors), which
// is setup, like the model->to(device) it stands for.
bool movesModuleToDevice(const FunctionDecl *F) {
  if (!isa<CXXMethodDecl>(F) || !F->getDeclName().isIdentifier() || F->getName() != "to")
    return false;
  return llvm::any_of(F->parameters(), [](const ParmVarDecl *P) {
    const auto *R = P->getType().getNonReferenceType()->getAsCXXRecordDecl();
    return R && R->getQualifiedNameAsString() == "c10::Device";
  });
}

// `void LoadArchive(torch::serialize::InputArchive* archive)`, a module's
// save(OutputArchive&): checkpoint reading and writing, once per run whatever
// its name; the tensors it reads back (hyperparameters, buffer positions) are
// what a checkpoint holds.
bool servesArchive(const FunctionDecl *F) {
  return llvm::any_of(F->parameters(), [](const ParmVarDecl *P) {
    QualType T = P->getType().getNonReferenceType();
    if (T->isPointerType())
      T = T->getPointeeType();
    const auto *R = T->getAsCXXRecordDecl();
    if (!R)
      return false;
    std::string Name = R->getQualifiedNameAsString();
    return Name == "torch::serialize::InputArchive" || Name == "torch::serialize::OutputArchive";
  });
}

bool callsTorchLoad(const Stmt *S) {
  if (!S)
    return false;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *Callee = CE->getDirectCallee())
      if (Callee->getQualifiedNameAsString() == "torch::load")
        return true;
  return llvm::any_of(S->children(), [](const Stmt *C) { return callsTorchLoad(C); });
}

// `void load(const std::string& dir)` that calls torch::load: a checkpoint
// read back, once per run. "load" alone is not enough (load_batch() runs
// every step) and neither is torch::load alone (a trainer that resumes from
// a checkpoint before its loop).
bool readsCheckpoint(const FunctionDecl *F) {
  if (!F->getDeclName().isIdentifier() || !F->hasBody())
    return false;
  llvm::SmallVector<std::string, 4> Words = identifierWords(F->getName());
  return llvm::is_contained(Words, "load") && callsTorchLoad(F->getBody());
}

// Code that runs once per program or per phase: constructors, destructors,
// a module's own to(Device), checkpoint archives and loads, and functions
// whose name says setup, teardown or export.
bool isOneOffFunction(const FunctionDecl *F) {
  if (isa<CXXConstructorDecl, CXXDestructorDecl>(F) || movesModuleToDevice(F) || servesArchive(F) ||
      readsCheckpoint(F))
    return true;
  return F->getDeclName().isIdentifier() && isOneOffName(F->getName());
}

}  // namespace

bool isTrainingUpdateName(llvm::StringRef Name) {
  static const llvm::StringSet<> Trains = {"train", "learn", "optimize", "optimise", "fit"};
  static const llvm::StringSet<> UpdatesWhat = {"step", "network", "networks", "net", "model", "policy",
                                                "agent", "parameters", "params", "weights"};
  static const llvm::StringSet<> NotTraining = {"target", "eval", "evaluate", "test", "log", "print", "save",
                                                "lr", "scheduler", "stats", "metrics", "display", "render"};
  llvm::SmallVector<std::string, 4> Words = identifierWords(Name);
  if (Words.empty() || llvm::any_of(Words, [](const std::string &W) { return NotTraining.contains(W); }))
    return false;
  if (llvm::any_of(Words, [](const std::string &W) { return Trains.contains(W); }))
    return true;
  return Words.front() == "update" &&
         llvm::all_of(llvm::drop_begin(Words), [](const std::string &W) { return UpdatesWhat.contains(W); });
}

bool isOneOffName(llvm::StringRef Name) {
  static const llvm::StringSet<> OneOffWords = {
      "init", "initialize", "initialise", "setup", "teardown", "export", "save", "checkpoint",
      "serialize", "finalize", "cleanup", "shutdown", "summary", "dump", "onnx", "trace", "pretrained", "restore",
      "warmup"};
  llvm::SmallVector<std::string, 4> Words = identifierWords(Name);
  for (size_t I = 0; I < Words.size(); ++I) {
    if (OneOffWords.contains(Words[I]))
      return true;
    // SetUp / set_up / TearDown / tear_down / WarmUp
    if (I + 1 < Words.size() && ((Words[I] == "set" && Words[I + 1] == "up") ||
                                 (Words[I] == "tear" && Words[I + 1] == "down") ||
                                 (Words[I] == "warm" && Words[I + 1] == "up")))
      return true;
  }
  return false;
}

namespace {

// The methods whose name alone says a step trains, where the receiver's type
// is unknown: a dependent call in a template, a call in dropped text.
constexpr llvm::StringLiteral TrainingMethodNames[] = {"backward", "zero_grad"};

// In a template, `loss.backward()` or `optimizer.zero_grad()` on an object
// whose type waits for a template parameter (`Trainer<Model>::train`): the
// compiler leaves the call unresolved, so only its name says it trains.
bool isDependentTrainingCall(const Stmt *S) {
  const auto *Call = dyn_cast<CallExpr>(S);
  const auto *Member =
      Call ? dyn_cast<CXXDependentScopeMemberExpr>(Call->getCallee()->IgnoreParenImpCasts()) : nullptr;
  if (!Member || !Member->getMember().isIdentifier())
    return false;
  return llvm::is_contained(TrainingMethodNames, Member->getMember().getAsIdentifierInfo()->getName());
}

// Tensor::backward() or a torch::optim optimizer's step().
bool isTrainingCall(const Stmt *S) {
  if (isDependentTrainingCall(S))
    return true;
  const auto *MC = dyn_cast<CXXMemberCallExpr>(S);
  const CXXMethodDecl *M = MC ? MC->getMethodDecl() : nullptr;
  if (!M || !M->getDeclName().isIdentifier())
    return false;
  std::string Cls = M->getParent()->getQualifiedNameAsString();
  return (M->getName() == "backward" && (Cls == "at::Tensor" || Cls == "at::TensorBase")) ||
         (M->getName() == "step" && llvm::StringRef(Cls).starts_with("torch::optim::"));
}

// `if (IS_TRAIN) { ..training loop.. }` with `const bool IS_TRAIN = false;`:
// a branch the build leaves dead never runs, so it neither trains nor calls.
bool neverTaken(const IfStmt *If) { return !If->isConsteval() && constantCondition(If->getCond()) == false; }

// `cmd.name == "NVT"`: a comparison with a string literal.
bool comparesWithString(const Expr *Cond) {
  Cond = Cond ? Cond->IgnoreUnlessSpelledInSource() : nullptr;
  std::pair<const Expr *, const Expr *> Sides;
  if (const auto *B = dyn_cast_or_null<BinaryOperator>(Cond); B && B->getOpcode() == BO_EQ)
    Sides = {B->getLHS(), B->getRHS()};
  else if (const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(Cond);
           Op && Op->getOperator() == OO_EqualEqual && Op->getNumArgs() == 2)
    Sides = {Op->getArg(0), Op->getArg(1)};
  else
    return false;
  return isa<StringLiteral>(Sides.first->IgnoreUnlessSpelledInSource()) ||
         isa<StringLiteral>(Sides.second->IgnoreUnlessSpelledInSource());
}

// `for (auto& cmd : script) { if (cmd.name == "NVE") md.NVE(..); else if
// (cmd.name == "NVT") ..; else if (cmd.name == "ANNEAL") ..; }`: a loop that
// interprets commands runs each branch once per command of an input script,
// and a command is a whole run (a simulation, a training). A branch of a
// chain of at least three comparisons with string literals is not repeated
// by the loops around the chain.
// How the branch taken ends: by `break` (the innermost loop or switch is
// left), by `return` (every loop of the function is), or neither.
Leaves leavesLoop(const IfStmt *If) {
  const Stmt *Last = If->getThen();
  if (const auto *Block = dyn_cast<CompoundStmt>(Last))
    Last = Block->body_empty() ? nullptr : Block->body_back();
  if (isa_and_nonnull<BreakStmt>(Last))
    return Leaves::InnermostLoop;
  if (isa_and_nonnull<ReturnStmt>(Last))
    return Leaves::AllLoops;
  return Leaves::Nothing;
}

// The loop a `break` at the end of the branch leaves: the nearest loop or
// switch around the if, when it is a loop that counts (not a tiny one).
const Stmt *loopLeftByBreak(const IfStmt *If, ASTContext &Ctx) {
  DynTypedNode Node = DynTypedNode::create(*If);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Node);
    if (Parents.empty())
      return nullptr;
    Node = Parents[0];
    const Stmt *S = Node.get<Stmt>();
    if (!S)
      return nullptr;  // reached the function
    if (isa<SwitchStmt>(S))
      return nullptr;
    if (isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(S))
      return isTinyLoop(S, Ctx) ? nullptr : S;
  }
}

bool dispatchesCommand(const IfStmt *If, ASTContext &Ctx) {
  if (!comparesWithString(If->getCond()))
    return false;
  const IfStmt *Head = If;
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(*Head);
    const auto *P = Parents.empty() ? nullptr : Parents[0].get<IfStmt>();
    if (!P || P->getElse() != Head || !comparesWithString(P->getCond()))
      break;
    Head = P;
  }
  unsigned Branches = 0;
  for (const Stmt *S = Head; const auto *I = dyn_cast_or_null<IfStmt>(S); S = I->getElse()) {
    if (!comparesWithString(I->getCond()))
      break;
    ++Branches;
  }
  return Branches >= 3;
}

// agent->train_step(batch), learner.optimize_model(): named for a training
// update. Read only for a user function whose body is in another file, where
// what it does cannot be seen.
bool namedLikeTrainingUpdate(const FunctionDecl *F) {
  return F->getDeclName().isIdentifier() && isTrainingUpdateName(F->getName());
}

// A function of the user's whose body this unit does not hold, named for a
// training update: `optimize(dataset, gaussians)` declared in a header and
// defined in another file. Module::train() (training mode) is LibTorch's.
bool trainsElsewhere(const FunctionDecl *F) {
  if (F->hasBody() || F->getASTContext().getSourceManager().isInSystemHeader(F->getLocation()))
    return false;
  std::string Name = F->getQualifiedNameAsString();
  llvm::StringRef Q(Name);
  return !Q.starts_with("torch::") && !Q.starts_with("at::") && !Q.starts_with("c10::") &&
         namedLikeTrainingUpdate(F);
}

// A statement that trains: a training call, looked for directly and one call
// deep (a train() helper; one in another file by its name).
bool trains(const Stmt *S, int Depth = 0) {
  if (!S)
    return false;
  if (const auto *If = dyn_cast<IfStmt>(S); If && neverTaken(If))
    return trains(If->getElse(), Depth);
  if (isTrainingCall(S))
    return true;
  if (const auto *Call = dyn_cast<CallExpr>(S); Call && Depth == 0)
    if (const FunctionDecl *F = Call->getDirectCallee()) {
      if (F->hasBody() && !isa<CXXMethodDecl>(F) && trains(F->getBody(), Depth + 1))
        return true;
      if (trainsElsewhere(F))
        return true;
    }
  return llvm::any_of(S->children(), [&](const Stmt *C) { return trains(C, Depth); });
}

// Like trains(), but also through methods and two calls deep: the update a
// periodic `if` runs is often an agent's own method (this->train(batch)),
// and one defined in another file is known by its name.
bool trainsThroughCalls(const Stmt *S, int Depth) {
  if (!S)
    return false;
  if (isTrainingCall(S))
    return true;
  if (const auto *Call = dyn_cast<CallExpr>(S); Call && Depth < 2)
    if (const FunctionDecl *F = Call->getDirectCallee();
        F && !F->getASTContext().getSourceManager().isInSystemHeader(F->getLocation()) &&
        (F->hasBody() ? trainsThroughCalls(F->getBody(), Depth + 1) : namedLikeTrainingUpdate(F)))
      return true;
  return llvm::any_of(S->children(), [&](const Stmt *C) { return trainsThroughCalls(C, Depth); });
}

// The global or member flag a condition reads, through `!` and an atomic's
// load() / conversion: `running`, `!app.stop_requested`, `chobits::running`.
const ValueDecl *stopFlagOf(const Expr *Cond) {
  Cond = Cond->IgnoreParenImpCasts();
  if (const auto *Not = dyn_cast<UnaryOperator>(Cond); Not && Not->getOpcode() == UO_LNot)
    Cond = Not->getSubExpr()->IgnoreParenImpCasts();
  if (const auto *Load = dyn_cast<CXXMemberCallExpr>(Cond); Load && Load->getNumArgs() == 0)
    Cond = Load->getImplicitObjectArgument()->IgnoreParenImpCasts();
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Cond))
    if (const auto *V = dyn_cast<VarDecl>(Ref->getDecl()); V && V->hasGlobalStorage())
      return V;
  if (const auto *M = dyn_cast<MemberExpr>(Cond))
    return dyn_cast<FieldDecl>(M->getMemberDecl());
  return nullptr;
}

// Whether `S` assigns `Flag` (`=`, or an atomic's store()).
bool writes(const Stmt *S, const ValueDecl *Flag) {
  if (!S)
    return false;
  auto Names = [Flag](const Expr *E) {
    E = E->IgnoreParenImpCasts();
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
      return Ref->getDecl() == Flag;
    const auto *M = dyn_cast<MemberExpr>(E);
    return M && M->getMemberDecl() == Flag;
  };
  if (const auto *B = dyn_cast<BinaryOperator>(S); B && B->isAssignmentOp() && Names(B->getLHS()))
    return true;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S); Op && Op->isAssignmentOp() && Names(Op->getArg(0)))
    return true;
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S)) {
    const CXXMethodDecl *M = Call->getMethodDecl();
    if (M && M->getDeclName().isIdentifier() && M->getName() == "store" && Names(Call->getImplicitObjectArgument()))
      return true;
  }
  return llvm::any_of(S->children(), [Flag](const Stmt *C) { return writes(C, Flag); });
}

// A loop that runs until input ends, until it is told to stop, or forever:
// `while (std::getline(std::cin, line))`, `while (std::cin >> x)`,
// `while (true)`, `for (;;)`, `while (running)` on a flag that another thread
// or a signal clears (the loop never writes it). Each of its iterations
// answers a request (a REPL, a server, a frame source); it is the program's
// hot loop however the rest of the program trains.
bool servesRequests(const Stmt *Loop) {
  const Expr *Cond = nullptr;
  if (const auto *W = dyn_cast<WhileStmt>(Loop))
    Cond = W->getCond();
  else if (const auto *F = dyn_cast<ForStmt>(Loop)) {
    if (!F->getCond())
      return true;
    Cond = F->getCond();
  } else if (const auto *D = dyn_cast<DoStmt>(Loop))
    Cond = D->getCond();
  if (!Cond)
    return false;
  Cond = Cond->IgnoreParenImpCasts();
  if (const auto *B = dyn_cast<CXXBoolLiteralExpr>(Cond))
    return B->getValue();
  if (const auto *I = dyn_cast<IntegerLiteral>(Cond))
    return I->getValue() != 0;
  if (const ValueDecl *Flag = stopFlagOf(Cond); Flag && isa<WhileStmt>(Loop))
    return !writes(cast<WhileStmt>(Loop)->getBody(), Flag);
  auto ReadsInput = [](const Stmt *S, auto &Self) -> bool {
    if (!S)
      return false;
    if (const auto *Call = dyn_cast<CallExpr>(S))
      if (const FunctionDecl *F = Call->getDirectCallee()) {
        std::string Q = F->getQualifiedNameAsString();
        if (Q == "std::getline" || (F->getOverloadedOperator() == OO_GreaterGreater && Call->getNumArgs() == 2 &&
                                    Call->getArg(0)->getType().getAsString().find("istream") != std::string::npos))
          return true;
      }
    return llvm::any_of(S->children(), [&](const Stmt *C) { return Self(C, Self); });
  };
  return ReadsInput(Cond, ReadsInput);
}

// A loop that neither trains nor serves requests: an evaluation, rendering
// or export pass over a fixed range or dataset.
// In a unit with errors the compiler may have dropped the training step from
// the loop (a range-for over a type from a header that was not found, and its
// whole body with it): the loop's text still says it trains.
bool textTrains(const Stmt *Loop, ASTContext &Ctx) {
  if (!Ctx.getDiagnostics().hasErrorOccurred())
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  CharSourceRange Range = CharSourceRange::getTokenRange(SM.getExpansionRange(Loop->getSourceRange()).getAsRange());
  llvm::StringRef Text = Lexer::getSourceText(Range, SM, Ctx.getLangOpts());
  for (llvm::StringRef Name : TrainingMethodNames) {
    std::string Call = (Name + "(").str();
    for (size_t At = Text.find(Call); At != llvm::StringRef::npos; At = Text.find(Call, At + 1)) {
      llvm::StringRef Before = Text.take_front(At).rtrim();
      if (Before.ends_with(".") || Before.ends_with("->"))
        return true;
    }
  }
  return false;
}

bool isPassLoop(const Stmt *Loop, ASTContext &Ctx) {
  return !trainsThroughCalls(Loop) && !servesRequests(Loop) && !textTrains(Loop, Ctx);
}

// Whether `S` holds a loop statement.
bool holdsLoop(const Stmt *S) {
  return S && llvm::any_of(S->children(), [](const Stmt *C) {
           return C && (isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(C) || holdsLoop(C));
         });
}

}  // namespace

bool isTinyLoop(const Stmt *Loop, ASTContext &Ctx) {
  const auto *For = dyn_cast<ForStmt>(Loop);
  const auto *Init = For ? dyn_cast_or_null<DeclStmt>(For->getInit()) : nullptr;
  const auto *Var = Init && Init->isSingleDecl() ? dyn_cast<VarDecl>(Init->getSingleDecl()) : nullptr;
  const auto *Cond = For ? dyn_cast_or_null<BinaryOperator>(For->getCond()) : nullptr;
  if (!Var || !Var->getInit() || !Cond || !Cond->isComparisonOp() || holdsLoop(For->getBody()))
    return false;
  const auto *Lhs = dyn_cast<DeclRefExpr>(Cond->getLHS()->IgnoreParenImpCasts());
  Expr::EvalResult From, To;
  if (!Lhs || Lhs->getDecl() != Var || Var->getInit()->isValueDependent() || Cond->getRHS()->isValueDependent() ||
      !Var->getInit()->EvaluateAsInt(From, Ctx) || !Cond->getRHS()->EvaluateAsInt(To, Ctx))
    return false;
  int64_t Turns = To.Val.getInt().getExtValue() - From.Val.getInt().getExtValue();
  if (Cond->getOpcode() == BO_LE)
    ++Turns;
  return (Cond->getOpcode() == BO_LT || Cond->getOpcode() == BO_LE || Cond->getOpcode() == BO_NE) && Turns >= 0 &&
         Turns <= 4;
}

namespace {

// An `if` whose branch runs on few iterations. `if (step % train_every == 0)
// agent.train(batch)` is not one: a remainder that picks the steps the model
// trains on is the training update itself (the same holds for gradient
// accumulation), and it runs as often as training does.
bool throttles(const IfStmt *If) {
  return containsThrottleTest(If->getCond()) && !trainsThroughCalls(If->getThen());
}

// Is `Loop`, the outermost loop around a statement, one that runs after
// training is over (the final evaluation): it does not train itself, and an
// earlier statement of its block, or of a block around it (`if (test) {..}`
// after the epoch loop), did.
bool followsTrainingLoop(const Stmt *Loop, ASTContext &Ctx) {
  if (trains(Loop))
    return false;
  DynTypedNode Child = DynTypedNode::create(*Loop);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty() || Parents[0].get<FunctionDecl>() || Parents[0].get<LambdaExpr>())
      return false;
    if (const auto *Block = Parents[0].get<CompoundStmt>())
      for (const Stmt *Before : Block->body()) {
        if (Before == Child.get<Stmt>())
          break;
        if (trains(Before))
          return true;
      }
    Child = Parents[0];
  }
}

// update(), train_epoch(), learn(), run_episode(), execute_model(): named for
// one step, epoch, episode or call of a loop elsewhere, so they run every time
// that loop turns.
bool isNamedPerIteration(const FunctionDecl *F) {
  static const llvm::StringSet<> PerIterationWords = {
      "update", "step", "learn", "optimize", "optimise", "iteration", "iter", "epoch", "batch", "minibatch",
      "episode", "rollout", "forward", "backward", "loss", "compute", "execute"};
  return F->getDeclName().isIdentifier() &&
         llvm::any_of(identifierWords(F->getName()), [](const std::string &W) { return PerIterationWords.contains(W); });
}

bool holdsTrainingLoop(const Stmt *S) {
  if (!S || isa<LambdaExpr>(S))
    return false;
  if (isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(S) && trains(S))
    return true;
  return llvm::any_of(S->children(), [](const Stmt *C) { return holdsTrainingLoop(C); });
}

// Detector::Train(), fit(), run_training(): a function other than main() that
// holds the training loop and is not named for one iteration. Like main(), it
// runs once, and so do its code outside that loop (setup before it, the final
// evaluation and export after it), unless a loop is seen calling it.
bool isTrainingDriver(const FunctionDecl *F) {
  return !F->isMain() && F->hasBody() && !isNamedPerIteration(F) && holdsTrainingLoop(F->getBody());
}

}  // namespace

std::string SyncContext::describe() const {
  if (Kind == ContextKind::OneOff && Local.FailurePath)
    return "on a failure path";
  if (Kind == ContextKind::OneOff && Local.DebugLog)
    return "in debug logging";
  if (Kind == ContextKind::OneOff && Local.DeadBranch)
    return "in a branch this build never takes";
  if (Kind == ContextKind::OneOff && Local.LazyInit)
    return "in lazy one-time initialization";
  return describeContext(Kind, functionName());
}

std::string SyncContext::functionName() const {
  return Function && Function->getDeclName().isIdentifier() ? Function->getName().str() : "";
}

std::string functionKey(const FunctionDecl *F) {
  F = normalize(F);
  if (!F)
    return "";
  std::string Key;
  llvm::raw_string_ostream OS(Key);
  if (const auto *M = dyn_cast<CXXMethodDecl>(F); M && M->getParent()->isLambda()) {
    // Lambdas have no name: their place identifies them in every unit that
    // includes them.
    PresumedLoc P = F->getASTContext().getSourceManager().getPresumedLoc(
        F->getASTContext().getSourceManager().getExpansionLoc(M->getParent()->getLocation()));
    OS << "lambda@" << (P.isValid() ? P.getFilename() : "?") << ":" << (P.isValid() ? P.getLine() : 0);
    return Key;
  }
  F->printQualifiedName(OS);
  OS << "(";
  for (unsigned I = 0; I < F->getNumParams(); ++I)
    OS << (I ? "," : "") << F->getParamDecl(I)->getType().getCanonicalType().getAsString();
  OS << ")";
  return Key;
}

std::string siteText(SourceLocation Loc, const SourceManager &SM) {
  PresumedLoc P = Loc.isValid() ? SM.getPresumedLoc(SM.getExpansionLoc(Loc)) : PresumedLoc();
  if (!P.isValid())
    return "";
  return (llvm::sys::path::filename(P.getFilename()) + ":" + llvm::Twine(P.getLine())).str();
}

std::vector<CallEdge<std::string, std::string>> exportCallEdges(ASTContext &Ctx, bool *UnitTrains) {
  CallGraphBuilder Builder(Ctx);
  Builder.TraverseDecl(Ctx.getTranslationUnitDecl());
  Builder.finish();
  if (UnitTrains)
    *UnitTrains = Builder.unitTrains();
  std::vector<CallEdge<std::string, std::string>> Out;
  for (size_t I = 0; I < Builder.edges().size(); ++I) {
    const Edge &E = Builder.edges()[I];
    Out.push_back({functionKey(E.Caller), functionKey(E.Callee), E.InLoop, E.Throttled, E.CallerIsCold,
                   E.CallerRunsOnce, siteText(E.At, Ctx.getSourceManager()),
                   Builder.calls()[I] ? argumentPlacements(Builder.calls()[I], E.Callee, Ctx) : std::string(),
                   E.InEvalLoop});
  }
  // Placements are cached per unit by declaration: the next unit linted on
  // this thread must not see ours.
  clearPlacementCache();
  return Out;
}

bool SyncContextAnalyzer::isInLoop(const Stmt *S, ASTContext &Ctx) {
  DynTypedNode Child = DynTypedNode::create(*S);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty())
      return false;
    const DynTypedNode &P = Parents[0];
    if (P.get<FunctionDecl>() || P.get<LambdaExpr>())
      return false;
    if (const auto *Loop = P.get<Stmt>(); Loop && isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(Loop))
      if (isIteratedPart(Loop, Child.get<Stmt>()))
        return true;
    Child = P;
  }
}

bool SyncContextAnalyzer::isCalledFromLoop(const FunctionDecl *F, ASTContext &Ctx) {
  if (BuiltFor != &Ctx)
    buildCallGraph(Ctx);
  return HotFunctions.contains(normalize(F));
}

bool SyncContextAnalyzer::unitTrains(ASTContext &Ctx) {
  if (BuiltFor != &Ctx)
    buildCallGraph(Ctx);
  return UnitTrains;
}

bool SyncContextAnalyzer::isRarelyCalled(const FunctionDecl *F, ASTContext &Ctx) {
  if (BuiltFor != &Ctx)
    buildCallGraph(Ctx);
  return RarelyCalledFunctions.contains(normalize(F));
}

bool SyncContextAnalyzer::isCalledOnce(const FunctionDecl *F, ASTContext &Ctx) {
  if (BuiltFor != &Ctx)
    buildCallGraph(Ctx);
  return CalledOnceFunctions.contains(normalize(F));
}

void SyncContextAnalyzer::buildCallGraph(ASTContext &Ctx) {
  CallGraphBuilder Builder(Ctx);
  Builder.TraverseDecl(Ctx.getTranslationUnitDecl());
  Builder.finish();
  Edges = Builder.edges();
  UnitTrains = Builder.unitTrains();
  CallerHeat<const FunctionDecl *, SourceLocation> Heat = classifyCallers(Edges);
  HotFunctions = std::move(Heat.Hot);
  RarelyCalledFunctions = std::move(Heat.RarelyCalled);
  CalledOnceFunctions = std::move(Heat.CalledOnce);
  DecidedBy = std::move(Heat.DecidedBy);
  BuiltFor = &Ctx;
}

// Whether an identifier or string literal of the main file's own tokens (not
// its comments) says CUDA: `CUDA(at::kFloat)`, `x.cuda()`, `"cuda:0"`.
bool tokensNameCuda(ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  FileID Main = SM.getMainFileID();
  llvm::StringRef Buffer = SM.getBufferData(Main);
  Lexer Raw(SM.getLocForStartOfFile(Main), Ctx.getLangOpts(), Buffer.begin(), Buffer.begin(), Buffer.end());
  Token T;
  bool End = false;
  while (!End) {
    End = Raw.LexFromRawLexer(T);
    llvm::StringRef Text = T.is(tok::raw_identifier)           ? T.getRawIdentifier()
                           : tok::isStringLiteral(T.getKind()) ? llvm::StringRef(T.getLiteralData(), T.getLength())
                                                               : llvm::StringRef();
    if (Text.contains_insensitive("cuda"))
      return true;
  }
  return false;
}

bool namesCudaDevice(ASTContext &Ctx) {
  CudaMentionFinder Finder(Ctx);
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  // A unit that did not parse may name CUDA in what did not (a call of an
  // API that is not declared, a statement the parser dropped): its text says.
  return Finder.MentionsCuda || (Ctx.getDiagnostics().hasErrorOccurred() && tokensNameCuda(Ctx));
}

bool definesMain(ASTContext &Ctx) {
  // lookup() sees through extern "C" { } blocks.
  for (const NamedDecl *D : Ctx.getTranslationUnitDecl()->lookup(&Ctx.Idents.get("main")))
    if (const auto *F = dyn_cast<FunctionDecl>(D); F && F->isMain() && F->getDefinition())
      return true;
  return false;
}

bool SyncContextAnalyzer::isCpuOnlyProgram(ASTContext &Ctx) {
  if (CpuOnlyFor != &Ctx) {
    CpuOnly = definesMain(Ctx) && !namesCudaDevice(Ctx);
    CpuOnlyFor = &Ctx;
  }
  return CpuOnly;
}

SyncContext SyncContextAnalyzer::classify(const Stmt *S, ASTContext &Ctx, const TextScope &Text) {
  const SourceLocation TextLoop = Text.Loop, TextThrottle = Text.Throttle;
  bool InLoop = TextLoop.isValid(), Throttled = TextThrottle.isValid(), InHotLambda = false, StaticInit = false;
  // Below a command's branch: the loops that read the commands do not repeat it.
  bool InCommand = false;
  // Below a branch that ends with `break`: the loop it leaves does not repeat it.
  const Stmt *LeftByBreak = nullptr;
  const Stmt *OutermostLoop = nullptr, *InnermostLoop = nullptr, *Throttle = nullptr;
  const LambdaExpr *HotLambda = nullptr;
  const FunctionDecl *Fn = nullptr;
  DynTypedNode Child = DynTypedNode::create(*S);
  while (!Fn) {
    DynTypedNodeList Parents = Ctx.getParents(Child);
    if (Parents.empty())
      break;
    const DynTypedNode &P = Parents[0];
    if (const auto *L = P.get<LambdaExpr>()) {
      // Only loops inside the lambda run per call of it; whether the lambda
      // itself runs in a loop is a call-graph question.
      if (!InHotLambda && !InLoop && isCalledFromLoop(L->getCallOperator(), Ctx)) {
        InHotLambda = true;
        HotLambda = L;
      }
    } else if (const auto *V = P.get<VarDecl>(); V && V->hasGlobalStorage()) {
      StaticInit = true;  // static locals and globals are initialized once
    } else if (const auto *F = P.get<FunctionDecl>()) {
      if (const auto *M = dyn_cast<CXXMethodDecl>(F); !(M && M->getParent()->isLambda()))
        Fn = F;
    } else if (const auto *St = P.get<Stmt>()) {
      const Stmt *C = Child.get<Stmt>();
      // A command's branch, or `if (first) { first = false; .. }` of a local
      // flag: once per call of the function, not per turn of its loops.
      if (const auto *If = dyn_cast<IfStmt>(St);
          If && C == If->getThen() && (dispatchesCommand(If, Ctx) || onceGuardOf(If) == OnceGuard::PerCall))
        InCommand = true;
      if (const auto *If = dyn_cast<IfStmt>(St); If && C == If->getThen()) {
        if (Leaves L = leavesLoop(If); L == Leaves::AllLoops)
          InCommand = true;  // runs once per call, like a command's branch
        else if (L == Leaves::InnermostLoop)
          LeftByBreak = loopLeftByBreak(If, Ctx);
      }
      if (isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(St) && isIteratedPart(St, C) && !isTinyLoop(St, Ctx) &&
          !InCommand && St != LeftByBreak) {
        InLoop = true;
        OutermostLoop = St;
        if (!InnermostLoop)
          InnermostLoop = St;
      }
      if (const auto *If = dyn_cast<IfStmt>(St); If && C == If->getThen() && throttles(If)) {
        Throttled = true;
        Throttle = If;
      }
    }
    Child = P;
  }

  SyncContext Result;
  Result.Function = Fn;
  LocalContext &L = Result.Local;
  L.InTest = Fn && isTestFunction(Fn, Ctx);
  L.Throttled = Throttled;
  L.OneOffName = Fn && isOneOffFunction(Fn);
  L.CapturesGraph = Fn && capturesGraph(Fn->getBody());
  L.InLoop = InLoop;
  L.InMain = Fn && Fn->isMain();
  L.InDriver = Fn && isTrainingDriver(Fn);
  L.InHotLambda = InHotLambda;
  L.CpuOnlyProgram = isCpuOnlyProgram(Ctx);
  L.StaticInit = StaticInit;
  bool FnCalledOnce = Fn && isCalledOnce(Fn, Ctx);
  L.AfterTraining = InLoop && OutermostLoop && (L.InMain || L.InDriver || FnCalledOnce) &&
                    followsTrainingLoop(OutermostLoop, Ctx);
  L.InPassLoop = InLoop && OutermostLoop && isPassLoop(OutermostLoop, Ctx);
  L.InEvalLoop = L.InPassLoop && unitTrains(Ctx);
  ColdPath Cold = coldPathOf(S, Ctx);
  L.FailurePath = Cold == ColdPath::Failure;
  L.DebugLog = Cold == ColdPath::DebugLog;
  L.DeadBranch = Cold == ColdPath::DeadBranch || Text.DeadIf.isValid();
  L.LazyInit = Cold == ColdPath::LazyInit;
  Result.Kind = decideContext(L, Fn && isCalledFromLoop(Fn, Ctx), Fn && isRarelyCalled(Fn, Ctx), FnCalledOnce);

  auto DecidedFor = [&](const FunctionDecl *F) { return F ? DecidedBy.lookup(normalize(F)) : SourceLocation(); };
  switch (Result.Kind) {
  case ContextKind::Throttled:
    Result.Evidence = Throttle ? Throttle->getBeginLoc() : TextThrottle;
    break;
  case ContextKind::RarelyCalled:
    Result.Evidence = DecidedFor(Fn);
    break;
  case ContextKind::InLoop:
    Result.Evidence = TextLoop.isValid() ? TextLoop : InnermostLoop->getBeginLoc();
    break;
  case ContextKind::CalledFromLoop:
    Result.Evidence = HotLambda ? DecidedFor(HotLambda->getCallOperator()) : DecidedFor(Fn);
    break;
  case ContextKind::OneOff:
    Result.Why = oneOffWhy(L);
    if (L.DeadBranch && Text.DeadIf.isValid())
      Result.Evidence = Text.DeadIf;
    else if (!L.OneOffName && !L.CapturesGraph)
      Result.Evidence = L.InLoop ? (OutermostLoop ? OutermostLoop->getBeginLoc() : TextLoop)
                        : L.InMain ? SourceLocation()
                                   : DecidedFor(Fn);
    break;
  default:
    break;
  }
  return Result;
}

SyncContext SyncContextAnalyzer::classifyDroppedFunction(llvm::StringRef Name, bool ConstructorOrDestructor,
                                                         ASTContext &Ctx, const TextScope &Text) {
  SyncContext Result;
  LocalContext &L = Result.Local;
  // The test macros of GoogleTest, Catch2 and Boost.Test, as their bodies read.
  L.InTest = llvm::is_contained({"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P", "TEST_CASE",
                                 "BOOST_AUTO_TEST_CASE", "BOOST_FIXTURE_TEST_CASE"},
                                Name);
  L.Throttled = Text.Throttle.isValid();
  L.OneOffName = ConstructorOrDestructor || isOneOffName(Name);
  L.InLoop = Text.Loop.isValid();
  L.InMain = Name == "main";
  L.CpuOnlyProgram = isCpuOnlyProgram(Ctx);
  L.DeadBranch = Text.DeadIf.isValid();
  // No caller of it is in the AST: its own loops and name decide.
  Result.Kind = decideContext(L, /*FnHot=*/false, /*FnRarelyCalled=*/false, /*FnCalledOnce=*/false);
  if (Result.Kind == ContextKind::Throttled)
    Result.Evidence = Text.Throttle;
  else if (Result.Kind == ContextKind::InLoop)
    Result.Evidence = Text.Loop;
  else if (Result.Kind == ContextKind::OneOff) {
    Result.Why = oneOffWhy(L);
    if (L.DeadBranch)
      Result.Evidence = Text.DeadIf;
  }
  return Result;
}

std::string SyncContext::explain(const SourceManager &SM) const {
  return explainContext(Kind, functionName(), siteText(Evidence, SM), Why);
}

}  // namespace clang::tidy::nosync
