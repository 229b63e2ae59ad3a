// Base of every nosync check: ties a check to its catalog entry (whose
// severity it reports at, unless the check's option `Severity` says
// otherwise), turns the context of a finding into a diagnostic level, and reports a second sync on
// the same value in one statement as a note on the first instead of another
// warning.
#pragma once

#include "utils/DroppedCode.h"
#include "utils/Placement.h"
#include "utils/SyncContext.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/utils/IncludeInserter.h"
#include "nosync/fixes.h"
#include "nosync/rules.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <string>
#include <vector>

namespace clang::tidy::nosync {

/// One finding as a check describes it; RuleCheck decides whether and how
/// loudly it is reported.
struct Finding {
  /// The expression (or loop) that syncs; its surroundings decide the
  /// severity.
  const Stmt *Site = nullptr;
  /// Where the caret goes (usually the method name of the call).
  SourceLocation Loc;
  /// What matched, quoted for the message, e.g. "'item()'".
  std::string What;
  /// The value being synced, for duplicate detection; may be null.
  const Expr *Value = nullptr;
  /// Edits that keep behaviour; attached to the finding, applied by --fix
  /// all together or not at all.
  std::vector<FixItHint> Fixes;
  /// The catalog row (fixes.def) `Fixes` implements: its note goes with the
  /// finding, and `#include <nosync/kernels.h>` is added when the edits call
  /// nosync::kernels.
  std::optional<::nosync::rules::FixId> Fix;
  bool FixCallsKernels = false;
  /// A concrete suggestion for this pattern that changes timing or
  /// semantics; emitted as a note. Empty for none.
  std::string Advice;
  /// A complete edit implementing `Advice`, attached to the note only
  /// (applied with --fix-notes, never by plain --fix).
  std::vector<FixItHint> AdviceFixes;
  /// The tensor whose placement made this a sync (the value read, the
  /// source uploaded), and where it would have to be for none: CPU for a
  /// read, CUDA for an upload. When a parameter places it, nosync-lint drops
  /// the finding if every call in the project passes a tensor placed so.
  const Expr *PlacedBy = nullptr;
  DeviceKind QuietWhenOn = DeviceKind::Cpu;
  /// For a call read from code the compiler dropped (DroppedCode.h): the
  /// loop of the dropped text that repeats it, the `if (i % n == 0)` that
  /// throttles it and the `if (DEBUG)` that never runs it; invalid otherwise.
  TextScope Text;
  /// Read from text (DroppedCode.h): dropped where the matchers reported
  /// the same place.
  bool FromText = false;
  /// Read from a function the compiler left out whole (DroppedFunction):
  /// `Site` is null and its context is decided from the function's name
  /// (its calls left out).
  std::optional<DroppedFunction> InDroppedFunction;
};

class RuleCheck : public ClangTidyCheck {
public:
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;
  void registerPPCallbacks(const SourceManager &SM, Preprocessor *PP, Preprocessor *ModuleExpanderPP) override;

protected:
  RuleCheck(StringRef Name, ClangTidyContext *Context, ::nosync::rules::RuleId Rule);

  /// Queues a finding. Findings are emitted at the end of the translation
  /// unit in source order, so "the second sync in a statement" means the
  /// second in reading order whatever order the matchers fired in.
  void report(Finding F, ASTContext &Ctx);
  void onEndOfTranslationUnit() override;

  /// Also reports this rule's calls in code the compiler dropped after an
  /// error and member calls a template leaves unresolved (DroppedCode.h),
  /// read from the text. Checks whose ops can be told
  /// from their spelling call it from registerMatchers.
  void registerDroppedCodeMatcher(ast_matchers::MatchFinder *Finder);

  SyncContextAnalyzer &contextAnalyzer() { return Analyzer; }

private:
  /// How throttled, test and one-off findings are reported; option
  /// `LowSeverity` = remark (default) | silent | warning.
  enum class LowSeverityMode { Remark, Silent, Warning };
  static std::optional<LowSeverityMode> parseLowSeverity(StringRef Value);
  /// Option `Severity` = note | warning | error: the level of a finding in
  /// hot or plain context; the catalog's severity by default. `error` is
  /// emitted as a warning that the driver raises (nosync-lint reads the
  /// option; with clang-tidy, --warnings-as-errors).
  static std::optional<::nosync::rules::Severity> parseSeverity(StringRef Value);

  /// Classifies the finding's context and emits it (or not).
  void emit(const Finding &F, ASTContext &Ctx);

  /// Whether `F` repeats a sync already reported in the same statement;
  /// remembers it otherwise.
  bool isDuplicate(const Finding &F, ASTContext &Ctx);

  /// Reports the calls of this rule among `F`'s dropped code.
  void reportDroppedCalls(const FunctionDecl &F, ASTContext &Ctx);
  /// Reports the calls of this rule in the functions the compiler left out
  /// whole (DroppedCode.h).
  void reportDroppedFunctions(ASTContext &Ctx);
  /// Turns the text calls of this rule into findings.
  void reportTextCalls(const std::vector<TextCall> &Calls, const char *Where, ASTContext &Ctx,
                       const DroppedFunction *In = nullptr);
  class DroppedCodeCallback : public ast_matchers::MatchFinder::MatchCallback {
  public:
    explicit DroppedCodeCallback(RuleCheck &Owner) : Owner(Owner) {}
    void run(const ast_matchers::MatchFinder::MatchResult &Result) override;

  private:
    RuleCheck &Owner;
  };

  /// `#include <nosync/kernels.h>` for the file of `Loc`, placed by
  /// clang-tidy's include inserter (option `IncludeStyle`, llvm or google), on
  /// the first finding of the file that needs it only: clang-tidy's --fix
  /// would add one copy per finding otherwise. nosync-lint's --fix treats it
  /// as an edit of the file, kept when that first finding is left out
  /// (lint/tool/Fixes.cpp).
  std::optional<FixItHint> kernelsInclude(SourceLocation Loc, const SourceManager &SM);

  const ::nosync::rules::Rule &Rule;
  DroppedCodeCallback DroppedCode{*this};
  std::string SeverityText;
  ::nosync::rules::Severity ConfiguredSeverity;
  std::string LowSeverityText;
  LowSeverityMode LowSeverity = LowSeverityMode::Remark;
  /// Option `ExplainContext` (global, default false; nosync-lint turns it on):
  /// each finding gets a note "nosync-context: <what decided its severity>",
  /// which nosync-lint moves into the JSON/SARIF `context` field.
  bool ExplainContext = false;
  SyncContextAnalyzer Analyzer;
  std::string IncludeStyleText;
  utils::IncludeInserter Inserter;
  llvm::DenseMap<const Stmt *, llvm::StringSet<>> ValuesPerStatement;
  std::vector<Finding> Pending;
  ASTContext *PendingContext = nullptr;
  /// The #if branches the preprocessor skipped in this translation unit.
  PreprocessorFacts Preprocessed;
};

}  // namespace clang::tidy::nosync
