#include "utils/SyncContext.h"

#include "utils/AstHelpers.h"
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

#include <cctype>

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

struct CallerHeat {
  llvm::DenseSet<const FunctionDecl *> Hot;
  llvm::DenseSet<const FunctionDecl *> RarelyCalled;
  llvm::DenseSet<const FunctionDecl *> CalledOnce;
};

bool containsRemainder(const Stmt *S);
bool isTestFunction(const FunctionDecl *F, ASTContext &Ctx);
bool isOneOffFunction(const FunctionDecl *F);

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
    CurrentFn = normalize(F);
    LoopDepth = ThrottleDepth = 0;
    bool Result = Traverse();
    CurrentFn = SavedFn;
    LoopDepth = SavedDepth;
    ThrottleDepth = SavedThrottle;
    return Result;
  }

  bool TraverseForStmt(ForStmt *S) {
    TraverseStmt(S->getInit());
    ++LoopDepth;
    TraverseStmt(S->getCond());
    TraverseStmt(S->getInc());
    TraverseStmt(S->getBody());
    --LoopDepth;
    return true;
  }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) {
    TraverseStmt(S->getInit());
    TraverseStmt(S->getRangeInit());
    ++LoopDepth;
    TraverseStmt(S->getLoopVarStmt());
    TraverseStmt(S->getBody());
    --LoopDepth;
    return true;
  }
  bool TraverseIfStmt(IfStmt *S) {
    TraverseStmt(S->getInit());
    TraverseStmt(S->getConditionVariableDeclStmt());
    TraverseStmt(S->getCond());
    bool Throttles = containsRemainder(S->getCond());
    ThrottleDepth += Throttles;
    TraverseStmt(S->getThen());
    ThrottleDepth -= Throttles;
    TraverseStmt(S->getElse());
    return true;
  }
  bool TraverseWhileStmt(WhileStmt *S) { return inLoop([&] { return RecursiveASTVisitor::TraverseWhileStmt(S); }); }
  bool TraverseDoStmt(DoStmt *S) { return inLoop([&] { return RecursiveASTVisitor::TraverseDoStmt(S); }); }

  bool VisitCallExpr(CallExpr *Call) {
    if (!CurrentFn)
      return true;
    for (const FunctionDecl *Callee : calleesOf(Call))
      Edges.push_back({CurrentFn, Callee, LoopDepth > 0, ThrottleDepth > 0});
    return true;
  }

  /// Splits the functions of the TU by how their call sites run. `IsCold`
  /// says which callers run rarely by themselves (tests, setup/export).
  template <typename ColdCallerFn> CallerHeat classify(ColdCallerFn IsColdCaller) const {
    CallerHeat H;
    llvm::DenseMap<const FunctionDecl *, llvm::SmallVector<const Edge *, 4>> Incoming, Outgoing;
    for (const Edge &E : Edges) {
      Incoming[E.Callee].push_back(&E);
      Outgoing[E.Caller].push_back(&E);
    }

    // Hot: called from a loop that is neither throttled nor in rarely-run
    // code, or called (unthrottled) from hot code.
    llvm::SmallVector<const FunctionDecl *, 32> Work;
    for (const Edge &E : Edges)
      if (E.InLoop && !E.Throttled && !IsColdCaller(E.Caller) && H.Hot.insert(E.Callee).second)
        Work.push_back(E.Callee);
    while (!Work.empty()) {
      const FunctionDecl *F = Work.pop_back_val();
      for (const Edge *E : Outgoing.lookup(F))
        if (!E->Throttled && H.Hot.insert(E->Callee).second)
          Work.push_back(E->Callee);
    }

    // RarelyCalled: every call site is throttled, in a test or in setup
    // code, or in another rarely-called function; loops inside them too.
    // CalledOnce: every call site is straight-line code of main() or of
    // another called-once function; their straight-line code runs once.
    auto Fixpoint = [&](llvm::DenseSet<const FunctionDecl *> &Set, auto EdgeQualifies) {
      for (bool Changed = true; Changed;) {
        Changed = false;
        for (const auto &[Callee, In] : Incoming) {
          if (H.Hot.contains(Callee) || Set.contains(Callee))
            continue;
          if (llvm::all_of(In, EdgeQualifies))
            Changed |= Set.insert(Callee).second;
        }
      }
    };
    auto RareEdge = [&](const Edge *E) {
      return E->Throttled || IsColdCaller(E->Caller) || H.RarelyCalled.contains(E->Caller);
    };
    Fixpoint(H.RarelyCalled, RareEdge);
    Fixpoint(H.CalledOnce, [&](const Edge *E) {
      return RareEdge(E) ||
             (!E->InLoop && (E->Caller->isMain() || H.CalledOnce.contains(E->Caller)));
    });
    return H;
  }

private:
  struct Edge {
    const FunctionDecl *Caller;
    const FunctionDecl *Callee;
    bool InLoop;
    bool Throttled;
  };

  template <typename Fn> bool inLoop(Fn Traverse) {
    ++LoopDepth;
    bool Result = Traverse();
    --LoopDepth;
    return Result;
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

  ASTContext &Ctx;
  const FunctionDecl *CurrentFn = nullptr;
  unsigned LoopDepth = 0;
  unsigned ThrottleDepth = 0;
  std::vector<Edge> Edges;
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

bool containsRemainder(const Stmt *S) {
  if (!S)
    return false;
  if (const auto *B = dyn_cast<BinaryOperator>(S); B && B->getOpcode() == BO_Rem)
    return true;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S); Op && Op->getOperator() == OO_Percent)
    return true;
  return llvm::any_of(S->children(), containsRemainder);
}

bool isTestFunction(const FunctionDecl *F, ASTContext &Ctx) {
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

// Lower-case words of an identifier: "initWeights" and "init_weights" both
// give {"init", "weights"}.
llvm::SmallVector<std::string, 4> identifierWords(llvm::StringRef Name) {
  llvm::SmallVector<std::string, 4> Words;
  std::string Cur;
  for (size_t I = 0; I < Name.size(); ++I) {
    char C = Name[I];
    bool Boundary = C == '_' || (std::isupper(static_cast<unsigned char>(C)) && I > 0 &&
                                 std::islower(static_cast<unsigned char>(Name[I - 1])));
    if (Boundary && !Cur.empty())
      Words.push_back(std::move(Cur)), Cur.clear();
    if (C != '_')
      Cur.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(C))));
  }
  if (!Cur.empty())
    Words.push_back(Cur);
  return Words;
}

// Code that runs once per program or per phase: constructors, destructors,
// and functions whose name says setup, teardown or export.
bool isOneOffFunction(const FunctionDecl *F) {
  if (isa<CXXConstructorDecl, CXXDestructorDecl>(F))
    return true;
  if (!F->getDeclName().isIdentifier())
    return false;
  static const llvm::StringSet<> OneOffWords = {
      "init", "initialize", "initialise", "setup", "teardown", "export", "save", "checkpoint",
      "serialize", "finalize", "cleanup", "shutdown", "summary", "dump", "onnx", "trace"};
  llvm::SmallVector<std::string, 4> Words = identifierWords(F->getName());
  for (size_t I = 0; I < Words.size(); ++I) {
    if (OneOffWords.contains(Words[I]))
      return true;
    // SetUp / set_up / TearDown / tear_down
    if (I + 1 < Words.size() && ((Words[I] == "set" && Words[I + 1] == "up") ||
                                 (Words[I] == "tear" && Words[I + 1] == "down")))
      return true;
  }
  return false;
}

// A call that trains: Tensor::backward() or a torch::optim optimizer's
// step(). Looked for directly and one call deep (a train() helper).
bool trains(const Stmt *S, int Depth = 0) {
  if (!S)
    return false;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S)) {
    const CXXMethodDecl *M = MC->getMethodDecl();
    if (M && M->getDeclName().isIdentifier()) {
      std::string Cls = M->getParent()->getQualifiedNameAsString();
      if (M->getName() == "backward" && (Cls == "at::Tensor" || Cls == "at::TensorBase"))
        return true;
      if (M->getName() == "step" && llvm::StringRef(Cls).starts_with("torch::optim::"))
        return true;
    }
  }
  if (const auto *Call = dyn_cast<CallExpr>(S); Call && Depth == 0)
    if (const FunctionDecl *F = Call->getDirectCallee(); F && F->hasBody() && !isa<CXXMethodDecl>(F))
      if (trains(F->getBody(), Depth + 1))
        return true;
  return llvm::any_of(S->children(), [&](const Stmt *C) { return trains(C, Depth); });
}

// Is `Loop` a loop of main() that runs after training is over (the final
// evaluation): it does not train itself, and an earlier statement of the
// same block did.
bool followsTrainingLoop(const Stmt *Loop, ASTContext &Ctx) {
  DynTypedNodeList Parents = Ctx.getParents(*Loop);
  const auto *Block = Parents.empty() ? nullptr : Parents[0].get<CompoundStmt>();
  if (!Block || trains(Loop))
    return false;
  for (const Stmt *Before : Block->body()) {
    if (Before == Loop)
      return false;
    if (trains(Before))
      return true;
  }
  return false;
}

}  // namespace

std::string SyncContext::describe() const {
  std::string Fn = Function && Function->getDeclName().isIdentifier() ? Function->getName().str() : "";
  switch (Kind) {
  case ContextKind::InLoop:
    return "inside a loop";
  case ContextKind::CalledFromLoop:
    return Fn.empty() ? "in code called from a loop" : "in '" + Fn + "', which is called from a loop";
  case ContextKind::Throttled:
    return "in throttled code (runs every N-th iteration)";
  case ContextKind::TestCode:
    return "in test code";
  case ContextKind::OneOff:
    return "in one-off setup/export code";
  case ContextKind::RarelyCalled:
    return "in code called only from throttled, test or one-off code";
  case ContextKind::Plain:
    return "";
  }
  return "";
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
  llvm::DenseMap<const FunctionDecl *, bool> ColdCaller;
  CallerHeat Heat = Builder.classify([&](const FunctionDecl *F) {
    auto [It, Inserted] = ColdCaller.try_emplace(F, false);
    if (Inserted)
      It->second = isTestFunction(F, Ctx) || isOneOffFunction(F);
    return It->second;
  });
  HotFunctions = std::move(Heat.Hot);
  RarelyCalledFunctions = std::move(Heat.RarelyCalled);
  CalledOnceFunctions = std::move(Heat.CalledOnce);
  BuiltFor = &Ctx;
}

SyncContext SyncContextAnalyzer::classify(const Stmt *S, ASTContext &Ctx) {
  bool InLoop = false, Throttled = false, InHotLambda = false;
  const Stmt *OutermostLoop = nullptr;
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
      InHotLambda = InHotLambda || (!InLoop && isCalledFromLoop(L->getCallOperator(), Ctx));
    } else if (const auto *F = P.get<FunctionDecl>()) {
      if (const auto *M = dyn_cast<CXXMethodDecl>(F); !(M && M->getParent()->isLambda()))
        Fn = F;
    } else if (const auto *St = P.get<Stmt>()) {
      const Stmt *C = Child.get<Stmt>();
      if (isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(St) && isIteratedPart(St, C)) {
        InLoop = true;
        OutermostLoop = St;
      }
      if (const auto *If = dyn_cast<IfStmt>(St); If && C == If->getThen() && containsRemainder(If->getCond()))
        Throttled = true;
    }
    Child = P;
  }

  SyncContext Result;
  Result.Function = Fn;
  bool Hot = InHotLambda || (Fn && isCalledFromLoop(Fn, Ctx));
  bool IsMain = Fn && Fn->isMain();
  if (Fn && isTestFunction(Fn, Ctx))
    Result.Kind = ContextKind::TestCode;
  else if (Throttled)
    Result.Kind = ContextKind::Throttled;
  else if (Fn && !Hot && isOneOffFunction(Fn))
    Result.Kind = ContextKind::OneOff;  // loops inside run once too
  else if (Fn && !Hot && isRarelyCalled(Fn, Ctx))
    Result.Kind = ContextKind::RarelyCalled;
  else if (InLoop && OutermostLoop && Fn && (IsMain || isCalledOnce(Fn, Ctx)) &&
           followsTrainingLoop(OutermostLoop, Ctx))
    Result.Kind = ContextKind::OneOff;  // the final evaluation after training
  else if (InLoop)
    Result.Kind = ContextKind::InLoop;
  else if (Hot)
    Result.Kind = ContextKind::CalledFromLoop;
  else if (IsMain || (Fn && isCalledOnce(Fn, Ctx)))
    Result.Kind = ContextKind::OneOff;  // straight-line code that runs once
  return Result;
}

}  // namespace clang::tidy::nosync
