// Code the compiler dropped. When a statement does not type-check (a type from
// a header that was not found, a function nobody declared), Clang recovers by
// leaving statements out of the AST: a range-for whose range has an error is
// dropped with its whole body, and with it the training step inside. On real
// code with one missing third-party include that is most of a training loop.
// The matchers cannot see what is not in the AST, so this reads the dropped
// text: the calls in it by name, and the loops of the dropped text around them.
#pragma once

#include "utils/OpTable.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::nosync {

/// What the text around a call says that the AST does not: the statements
/// of the dropped text it is in. Each is invalid where none is.
struct TextScope {
  /// The `for` / `while` / `do` that repeats the call.
  SourceLocation Loop;
  /// The `if` whose remainder test (`i % 50 == 0`) throttles it.
  SourceLocation Throttle;
  /// The `if` whose condition this build fixes false (`if (DEBUG)` after
  /// `#define DEBUG false`): the call never runs.
  SourceLocation DeadIf;
};

/// What the preprocessor knows that the text of dropped code does not say.
struct PreprocessorFacts {
  /// The #if / #ifdef branches it skipped: their text is not code of this
  /// build.
  std::vector<SourceRange> Skipped;
  /// Its macro table, for the macros a dropped condition names (`DEBUG` for
  /// `#define DEBUG false`). Asked, not recorded as the macros are defined:
  /// those of a precompiled preamble are never defined again.
  Preprocessor *PP = nullptr;
};

/// Records the #if branches the preprocessor skips into PreprocessorFacts.
class RecordSkippedBranches : public PPCallbacks {
public:
  explicit RecordSkippedBranches(PreprocessorFacts &Out) : Out(Out) {}
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override { Out.Skipped.push_back(Range); }

private:
  PreprocessorFacts &Out;
};

/// A call read from dropped source text.
struct TextCall {
  /// The called name: `item` in `loss.item<float>()`.
  SourceLocation NameLoc;
  std::string Name;
  /// `.name(` or `->name(`.
  bool Member = false;
  /// For a member call on a call's result, that call's name: `ones_like` in
  /// `torch::ones_like(x).to(device)`; empty otherwise.
  std::string ReceiverCall;
  /// That call's arguments as spelled, tokens joined by single spaces.
  std::string ReceiverArgs;
  /// `torch::cuda` in `torch::cuda::synchronize()`; empty when unqualified.
  std::string Qualifier;
  /// The arguments as spelled, tokens joined by single spaces.
  std::string Args;
  /// The dropped text around the call (loops of the AST around it are found
  /// as usual).
  TextScope Scope;
  /// Where its context is decided: the compound statement the dropped text
  /// sits in, or the call itself for a dependent call.
  const Stmt *Container = nullptr;
  /// Read from a call the compiler kept but could not resolve before
  /// instantiation (see dependentCalls), not from dropped text.
  bool Dependent = false;
  /// Written in the parenthesized condition of an `if`, `while` or `switch`
  /// of the text: its value decides a branch.
  bool InCondition = false;
  /// A dependent call whose object is read from a local the function made as
  /// a host copy and never assigned again: `vir[0][1].template item<double>()`
  /// after `auto vir = out.at("virials").toTensor().to("cpu")`. Reading it
  /// costs nothing; the copy is the sync.
  bool OnHostCopy = false;
};

/// Calls in the statements of `F`'s body that the compiler left out of the
/// AST or kept with an error: statements between those of a block, a block's
/// statement kept with an error, the condition of an `if` / `while` /
/// `switch` / `for` kept with an error (`if (mask[i].item<float>() == 0)` with
/// `mask` of a type that did not compile), and a branch or loop body written
/// without braces that has an error. Empty when the translation unit had no
/// error: then nothing is dropped.
std::vector<TextCall> droppedCalls(const FunctionDecl &F, ASTContext &Ctx, const PreprocessorFacts &PP);

/// The calls in the body of a template (a function template or a member of a
/// class template, not an instantiation) that wait for its parameters: member
/// calls on an object whose type depends on one (`batch.data.to(device)` in
/// `Trainer<Task>::train`) and functions called with such an object
/// (`clip_grad_norm_(model->parameters(), 1.0)`). The compiler keeps them
/// unresolved, so the matchers, which need the tensor type, do not see them;
/// a header linted alone has no instantiation. They are read from their text
/// like dropped code.
std::vector<TextCall> dependentCalls(const FunctionDecl &F, ASTContext &Ctx);

/// A function definition the compiler left out whole: an out-of-line member
/// `LidarProcessor::process(...) { ... }` of a class whose header was not
/// found has no declaration in the AST, not even an invalid one, so neither
/// the matchers nor droppedCalls see its body. Its calls are read from the
/// text of the main file.
struct DroppedFunction {
  /// `process`; `LidarProcessor` for a constructor, `~LidarProcessor` for a
  /// destructor.
  std::string Name;
  /// `LidarProcessor` in `LidarProcessor::process`; empty for a free function.
  std::string Class;
  /// The calls of its body, each with the loops and throttles of the body
  /// around it (Container is null: there is no statement to hang them on).
  std::vector<TextCall> Calls;

  bool isConstructorOrDestructor() const { return !Class.empty() && (Name == Class || Name == "~" + Class); }
};

/// The function definitions of the main file that have no declaration in the
/// AST, read from its text outside the #if branches the preprocessor left
/// out. Empty when the translation unit had no error.
std::vector<DroppedFunction> droppedFunctions(ASTContext &Ctx, const PreprocessorFacts &PP);

/// The catalog op a call read from text is, by the op table's method and
/// function names, with the rule it is reported under. Copies are decided by
/// their spelling: `.cpu()` and `.to(kCPU)` download, `.cuda()` and a blocking
/// `.to(device)` upload; what the text cannot decide (a shape-dependent form,
/// `copy_` with no known direction) is no op.
struct TextOp {
  const OpEntry *Op;
  RuleId Rule;
};
std::optional<TextOp> opOfTextCall(const TextCall &Call);

}  // namespace clang::tidy::nosync
