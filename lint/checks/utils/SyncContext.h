// Where a sync happens decides how loud its finding is. A `.item()` in the
// training loop costs a full pipeline drain every step; the same call in
// throttled logging, a unit test or one-off setup code costs almost nothing.
// This file classifies the surroundings of a statement; checks turn the
// class into a diagnostic level (see RuleCheck).
#pragma once

#include "utils/CallGraph.h"
#include "utils/DroppedCode.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace clang::tidy::nosync {


struct SyncContext {
  ContextKind Kind = ContextKind::Plain;
  /// The named function the statement is in (lambdas are looked through).
  const FunctionDecl *Function = nullptr;
  /// What decided the kind, for --explain and JSON: the loop, the throttling
  /// `if`, or the call site that makes the function hot or rarely run;
  /// invalid where nothing in the source did (Plain, a function's name).
  SourceLocation Evidence;
  /// Why, in a few words ("main() outside its loops", "named like setup or
  /// export"); empty where the kind says it all.
  const char *Why = "";
  /// The facts the kind was decided from, before the function's callers.
  LocalContext Local;

  /// Throttled, test and one-off code: reported as a remark, or silenced.
  bool isLowSeverity() const { return isLowSeverityContext(Kind); }
  bool isHot() const { return Kind == ContextKind::InLoop || Kind == ContextKind::CalledFromLoop; }
  /// A short phrase for the diagnostic, e.g. "inside a loop"; "" for Plain.
  std::string describe() const;
  /// The name of Function, "" for none.
  std::string functionName() const;
  /// What decided the severity, with the deciding place as file:line, e.g.
  /// "in the loop at train.cpp:42"; one sentence for --explain and JSON.
  std::string explain(const SourceManager &SM) const;
};

/// A function's identity across translation units: its qualified name and
/// parameter types ("ppo::Agent::update(at::Tensor &)"), or for a lambda its
/// place ("lambda@src/train.cpp:42").
std::string functionKey(const FunctionDecl *F);

/// Classifies statements of one translation unit. Knows which functions are
/// called from loops in the TU; that call graph is built lazily, once per
/// ASTContext, over user code only (declarations in system headers such as
/// LibTorch's are skipped).
class SyncContextAnalyzer {
public:
  /// `Text` holds the statements around `S` that are not in the AST (dropped
  /// code read from text, DroppedCode.h): a loop, a throttling `if`, an `if`
  /// the build never takes.
  SyncContext classify(const Stmt *S, ASTContext &Ctx, const TextScope &Text = TextScope());

  /// The context of a call read from a function the compiler left out
  /// whole (DroppedCode.h): no statement and no caller of it are in the AST,
  /// so its name (a constructor, setup or export, a test) and the loop and
  /// throttle of its text around the call decide.
  SyncContext classifyDroppedFunction(llvm::StringRef Name, bool ConstructorOrDestructor, ASTContext &Ctx,
                                      const TextScope &Text);

  /// True when `S` runs once per iteration of an enclosing loop of its own
  /// function (its body, condition or increment; not a for-init or the range
  /// of a range-for).
  static bool isInLoop(const Stmt *S, ASTContext &Ctx);

  /// True when the function (or lambda call operator) is called from a loop
  /// somewhere in this TU, directly or through other such functions.
  bool isCalledFromLoop(const FunctionDecl *F, ASTContext &Ctx);

  /// True when every call of the function in this TU is in rarely-run code:
  /// throttled (`if (step % N == 0)`), a test body, setup/export code, or
  /// another such function. Its loops run rarely too.
  bool isRarelyCalled(const FunctionDecl *F, ASTContext &Ctx);

  /// True when every call is straight-line code of main(), of a function
  /// that holds the training loop, or of another such function: its own
  /// straight-line code runs once; its loops are still loops (a train()
  /// called once from main holds the hot loop).
  bool isCalledOnce(const FunctionDecl *F, ASTContext &Ctx);


  /// True when the TU is a whole program (it defines main()) whose user code
  /// never names a CUDA device, .cuda(), or a CUDA API: no tensor of it is on
  /// a GPU, so nothing in it syncs with one.
  bool isCpuOnlyProgram(ASTContext &Ctx);

  /// True when some function of the unit trains (Tensor::backward, an
  /// optimizer step): its loops that do not train are evaluation passes.
  bool unitTrains(ASTContext &Ctx);

private:
  void buildCallGraph(ASTContext &Ctx);

  const ASTContext *BuiltFor = nullptr;
  const ASTContext *CpuOnlyFor = nullptr;
  bool CpuOnly = false;
  bool UnitTrains = false;
  llvm::DenseSet<const FunctionDecl *> HotFunctions;
  llvm::DenseSet<const FunctionDecl *> RarelyCalledFunctions;
  llvm::DenseSet<const FunctionDecl *> CalledOnceFunctions;
  llvm::DenseMap<const FunctionDecl *, SourceLocation> DecidedBy;
  std::vector<CallEdge<const FunctionDecl *, SourceLocation>> Edges;
};

/// "train.cpp:42" for a location (its expansion), "" for an invalid one.
std::string siteText(SourceLocation Loc, const SourceManager &SM);

/// Every call in user code of the TU, keyed by functionKey and placed by
/// siteText: what nosync-lint joins across translation units. With
/// `UnitTrains`, also whether something in the unit trains (backward(),
/// an optimizer step).
std::vector<CallEdge<std::string, std::string>> exportCallEdges(ASTContext &Ctx, bool *UnitTrains = nullptr);

/// Whether the unit's user code names a CUDA device anywhere: kCUDA, a
/// "cuda" string, .cuda(), a CUDA API, or a Device chosen from a string at
/// run time. A run that holds main() and in which no unit does is a CPU
/// program (ProjectContext).
bool namesCudaDevice(ASTContext &Ctx);

/// Whether a function's name says it is a training update: train_step,
/// learn, optimize_model, update, update_policy (not update_target,
/// evaluate, log_stats).
bool isTrainingUpdateName(llvm::StringRef Name);

/// Whether a function's name says it runs once per program or phase: init,
/// setup, teardown, export, save, checkpoint, restore, ...
bool isOneOffName(llvm::StringRef Name);

/// `for (int i = 0; i < 2; ++i)` over the two images of a pair, the three
/// heads of a model: a loop of at most four turns with constant bounds and no
/// loop inside is straight-line code written as a loop, not an iteration of a
/// workload (an epoch loop holds its batch loop; a batch loop has no constant
/// bound).
bool isTinyLoop(const Stmt *Loop, ASTContext &Ctx);

/// Whether the unit defines main().
bool definesMain(ASTContext &Ctx);

}  // namespace clang::tidy::nosync
