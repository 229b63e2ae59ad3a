#include "utils/RuleCheck.h"

#include "utils/AstHelpers.h"
#include "utils/DroppedCode.h"
#include "utils/Placement.h"
#include "utils/TorchMatchers.h"

#include "clang/Lex/Preprocessor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

namespace clang::tidy::nosync {

RuleCheck::RuleCheck(StringRef Name, ClangTidyContext *Context, ::nosync::rules::RuleId RuleId)
    : ClangTidyCheck(Name, Context), Rule(::nosync::rules::get(RuleId)),
      // Read as strings: the templated OptionsView::get<T> overloads mangle
      // differently under g++ and clang++, which breaks the --load plugin.
      SeverityText(Options.get("Severity", ::nosync::rules::to_string(Rule.severity)).str()),
      ConfiguredSeverity(Rule.severity), LowSeverityText(Options.getLocalOrGlobal("LowSeverity", "remark").str()),
      IncludeStyleText(Options.getLocalOrGlobal("IncludeStyle", "llvm").lower()),
      Inserter(IncludeStyleText == "google" ? utils::IncludeSorter::IS_Google : utils::IncludeSorter::IS_LLVM,
               areDiagsSelfContained()) {
  if (std::optional<::nosync::rules::Severity> Configured = parseSeverity(SeverityText)) {
    ConfiguredSeverity = *Configured;
  } else {
    configurationDiag("invalid value '%0' for option '%1.Severity'; expected note, warning or error")
        << SeverityText << Name;
    SeverityText = std::string(::nosync::rules::to_string(Rule.severity));
  }
  ExplainContext = Options.getLocalOrGlobal("ExplainContext", "false").equals_insensitive("true");
  if (std::optional<LowSeverityMode> Mode = parseLowSeverity(LowSeverityText)) {
    LowSeverity = *Mode;
  } else {
    configurationDiag("invalid value '%0' for option '%1.LowSeverity'; expected remark, silent or warning")
        << LowSeverityText << Name;
    LowSeverityText = "remark";
  }
}

void RuleCheck::storeOptions(ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "Severity", SeverityText);
  Options.store(Opts, "LowSeverity", LowSeverityText);
  Options.store(Opts, "IncludeStyle", IncludeStyleText);
}

void RuleCheck::registerPPCallbacks(const SourceManager &, Preprocessor *PP, Preprocessor *) {
  Inserter.registerPreprocessor(PP);
  Preprocessed = PreprocessorFacts();
  Preprocessed.PP = PP;
  PP->addPPCallbacks(std::make_unique<RecordSkippedBranches>(Preprocessed));
}

std::optional<FixItHint> RuleCheck::kernelsInclude(SourceLocation Loc, const SourceManager &SM) {
  return Inserter.createIncludeInsertion(SM.getFileID(SM.getExpansionLoc(Loc)), ::nosync::rules::kernel_names::kHeader);
}

std::optional<::nosync::rules::Severity> RuleCheck::parseSeverity(StringRef Value) {
  using ::nosync::rules::Severity;
  return llvm::StringSwitch<std::optional<Severity>>(Value.lower())
      .Case("note", Severity::Note)
      .Case("warning", Severity::Warning)
      .Case("error", Severity::Error)
      .Default(std::nullopt);
}

std::optional<RuleCheck::LowSeverityMode> RuleCheck::parseLowSeverity(StringRef Value) {
  return llvm::StringSwitch<std::optional<LowSeverityMode>>(Value.lower())
      .Cases("remark", "note", LowSeverityMode::Remark)
      .Cases("silent", "none", "off", LowSeverityMode::Silent)
      .Case("warning", LowSeverityMode::Warning)
      .Default(std::nullopt);
}

bool RuleCheck::isDuplicate(const Finding &F, ASTContext &Ctx) {
  StringRef Value = sourceText(F.Value, Ctx);
  const auto *Site = dyn_cast_or_null<Expr>(F.Site);
  if (Value.empty() || !Site)
    return false;
  const Stmt *Root = statementRoot(Site, Ctx);
  // The same operation on the same value: `loss.item()` twice, not
  // equal(x, y) next to allclose(x, y).
  return !ValuesPerStatement[Root].insert(F.What + "\n" + Value.str()).second;
}

void RuleCheck::report(Finding F, ASTContext &Ctx) {
  PendingContext = &Ctx;
  Pending.push_back(std::move(F));
}

void RuleCheck::onEndOfTranslationUnit() {
  if (PendingContext) {
    const SourceManager &SM = PendingContext->getSourceManager();
    std::stable_sort(Pending.begin(), Pending.end(), [&](const Finding &A, const Finding &B) {
      return SM.isBeforeInTranslationUnit(A.Loc, B.Loc);
    });
    // Matchers also fire once per template instantiation at the same place.
    Pending.erase(std::unique(Pending.begin(), Pending.end(),
                              [](const Finding &A, const Finding &B) { return A.Loc == B.Loc && A.What == B.What; }),
                  Pending.end());
    // A call read from the text of a statement with an error that the
    // compiler resolved after all: the matchers' finding says more.
    llvm::DenseSet<SourceLocation> Matched;
    for (const Finding &F : Pending)
      if (!F.FromText)
        Matched.insert(F.Loc);
    llvm::erase_if(Pending, [&](const Finding &F) { return F.FromText && Matched.contains(F.Loc); });
    for (const Finding &F : Pending)
      emit(F, *PendingContext);
  }
  Pending.clear();
  ValuesPerStatement.clear();
  PendingContext = nullptr;
  clearPlacementCache();
}

void RuleCheck::registerDroppedCodeMatcher(ast_matchers::MatchFinder *Finder) {
  using namespace ast_matchers;
  // Lambdas are read with the function they are written in; instantiations
  // with their template.
  Finder->addMatcher(functionDecl(isDefinition(), unless(isInstantiated()), unless(cxxMethodDecl(ofClass(isLambda()))))
                         .bind("function"),
                     &DroppedCode);
  Finder->addMatcher(translationUnitDecl().bind("unit"), &DroppedCode);
}

void RuleCheck::DroppedCodeCallback::run(const ast_matchers::MatchFinder::MatchResult &Result) {
  if (const auto *F = Result.Nodes.getNodeAs<FunctionDecl>("function"))
    Owner.reportDroppedCalls(*F, *Result.Context);
  if (Result.Nodes.getNodeAs<TranslationUnitDecl>("unit"))
    Owner.reportDroppedFunctions(*Result.Context);
}

// The rule a call read from text is reported under. Where its value decides
// a branch it goes to the condition's rule, as a resolved call's would: a
// call written in the text's `if (...)` / `while (...)`, or a dependent call,
// which is in the AST, unresolved, under a condition (`if
// (std::isnan(loss.template item<float>()))`, an AT_ASSERT in a template).
static RuleId ruleOfTextCall(const TextCall &Call, const TextOp &Op, ASTContext &Ctx) {
  if (Op.Op->form != OpForm::Call)
    return Op.Rule;
  if (Call.InCondition)
    return Op.Op->static_rule(true);
  if (Call.Dependent)
    if (const auto *E = dyn_cast_or_null<Expr>(Call.Container); E && isInControlFlowCondition(E, Ctx))
      return Op.Op->static_rule(true);
  return Op.Rule;
}

void RuleCheck::reportDroppedCalls(const FunctionDecl &Fn, ASTContext &Ctx) {
  reportTextCalls(droppedCalls(Fn, Ctx, Preprocessed), "in a statement that did not compile", Ctx);
  reportTextCalls(dependentCalls(Fn, Ctx), "on a type that depends on a template parameter", Ctx);
}

void RuleCheck::reportDroppedFunctions(ASTContext &Ctx) {
  for (const DroppedFunction &Fn : droppedFunctions(Ctx, Preprocessed))
    reportTextCalls(Fn.Calls, "in a function the compiler could not read", Ctx, &Fn);
}

void RuleCheck::reportTextCalls(const std::vector<TextCall> &Calls, const char *Where, ASTContext &Ctx,
                                const DroppedFunction *In) {
  for (const TextCall &Call : Calls) {
    std::optional<TextOp> Op = opOfTextCall(Call);
    if (!Op || ruleOfTextCall(Call, *Op, Ctx) != Rule.rule)
      continue;
    // A host copy's reads and copies cost nothing (an upload of it does).
    if (Call.OnHostCopy && Op->Rule != RuleId::PageableH2D)
      continue;
    Finding F;
    F.Site = Call.Container;
    F.Loc = Call.NameLoc;
    F.What = "'" + Call.Name + "()' (" + Where + ", read from its text)";
    F.Advice = std::string(Op->Op->advice);
    F.Text = Call.Scope;
    F.FromText = true;
    if (In)
      F.InDroppedFunction = DroppedFunction{In->Name, In->Class, {}};
    report(std::move(F), Ctx);
  }
}

// For a finding that a host tensor would silence, "\tassume=<function>#
// <parameter>" for each parameter whose callers elsewhere would put the
// finding's tensor on the CPU (a member filled from a setter's argument, read
// in another method; a helper called here with a copy of that member). Else
// "\tpfn=<function>\tpidx=<parameter>\tquiet=<c|g>" when one parameter places
// it. nosync-lint places it from the callers in other files.
static std::string placingFacts(const Finding &F, ASTContext &Ctx) {
  if (!F.PlacedBy || F.QuietWhenOn == DeviceKind::Unknown)
    return "";
  std::string Facts;
  if (F.QuietWhenOn == DeviceKind::Cpu)
    for (const ParmVarDecl *Open : hostIfCallersElsewhereAgree(F.PlacedBy, Ctx))
      if (const auto *Fn = dyn_cast<FunctionDecl>(Open->getDeclContext()))
        Facts += "\tassume=" + functionKey(Fn) + "#" + std::to_string(Open->getFunctionScopeIndex());
  if (!Facts.empty())
    return Facts + "\tquiet=c";
  const ParmVarDecl *Param = placingParameter(F.PlacedBy, Ctx);
  if (const auto *Fn = Param ? dyn_cast<FunctionDecl>(Param->getDeclContext()) : nullptr)
    return "\tpfn=" + functionKey(Fn) + "\tpidx=" + std::to_string(Param->getFunctionScopeIndex()) +
           "\tquiet=" + placementCode(F.QuietWhenOn);
  return "";
}

void RuleCheck::emit(const Finding &F, ASTContext &Ctx) {
  SyncContext Where =
      F.InDroppedFunction
          ? Analyzer.classifyDroppedFunction(F.InDroppedFunction->Name, F.InDroppedFunction->isConstructorOrDestructor(),
                                              Ctx, F.Text)
          : Analyzer.classify(F.Site, Ctx, F.Text);
  // `error` is reported as a warning here and raised by the driver (nosync-lint
  // from the Severity option, clang-tidy with --warnings-as-errors): a check's
  // own error-level diagnostic could not be silenced with NOLINT, and clang
  // would take it for a compile error.
  DiagnosticIDs::Level Level =
      ConfiguredSeverity == ::nosync::rules::Severity::Note ? DiagnosticIDs::Remark : DiagnosticIDs::Warning;
  if (Where.isLowSeverity()) {
    if (LowSeverity == LowSeverityMode::Silent)
      return;
    if (LowSeverity == LowSeverityMode::Remark)
      Level = DiagnosticIDs::Remark;
  }

  if (isDuplicate(F, Ctx)) {
    // Attaches to the finding emitted just before for the same statement.
    diag(F.Loc, "%0 synchronizes on '%1' again in this statement; read it once into a local and reuse it",
         DiagnosticIDs::Note)
        << F.What << sourceText(F.Value, Ctx);
    return;
  }

  std::string Context = Where.describe();
  std::string Message = F.What + (Context.empty() ? "" : " " + Context) + ": " + std::string(Rule.summary) +
                        "; " + std::string(Rule.fix);
  {
    DiagnosticBuilder D = diag(F.Loc, "%0", Level) << Message;
    for (const FixItHint &Fix : F.Fixes)
      D << Fix;
    if (!F.Fixes.empty() && F.FixCallsKernels)
      if (std::optional<FixItHint> Include = kernelsInclude(F.Loc, Ctx.getSourceManager()))
        D << *Include;
  }
  if (F.Fix && !F.Fixes.empty()) {
    diag(F.Loc, "%0", DiagnosticIDs::Note) << ::nosync::rules::get(*F.Fix).applied;
  } else if (!F.Advice.empty()) {
    DiagnosticBuilder N = diag(F.Loc, "%0", DiagnosticIDs::Note) << F.Advice;
    for (const FixItHint &Fix : F.AdviceFixes)
      N << Fix;
  }
  if (ExplainContext) {
    std::string Why = Where.explain(Ctx.getSourceManager());
    bool Lowered = Level == DiagnosticIDs::Remark && ConfiguredSeverity != ::nosync::rules::Severity::Note;
    Why += Lowered ? "; lowered to a note (low-severity context)"
                   : "; severity " + std::string(::nosync::rules::to_string(ConfiguredSeverity)) +
                         (ConfiguredSeverity == Rule.severity ? " (the catalog's)" : " (option Severity)");
    // After " || ": the facts nosync-lint needs to re-decide the context
    // with callers from other translation units (ProjectContext.cpp).
    std::string Facts = " || fn=" + functionKey(Where.Function) + "\tname=" + Where.functionName() +
                        "\tlocal=" + encodeLocal(Where.Local) + "\tkind=" +
                        std::to_string(static_cast<int>(Where.Kind)) + "\tsev=" +
                        std::string(::nosync::rules::to_string(ConfiguredSeverity)) + "\tlow=" +
                        LowSeverityText + placingFacts(F, Ctx) + "\twhat=" + F.What;
    diag(F.Loc, "nosync-context: %0", DiagnosticIDs::Note) << Why + Facts;
  }
}

}  // namespace clang::tidy::nosync
