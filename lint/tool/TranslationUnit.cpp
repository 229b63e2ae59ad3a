#include "TranslationUnit.h"

#include "Finding.h"
#include "MissingIncludes.h"
#include "PreambleReplay.h"
#include "UserCodeScope.h"

#ifdef NOSYNC_HAVE_CHECKS
#include "utils/SyncContext.h"
#endif

#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/GlobList.h"
// Complete type of ClangTidyASTConsumerFactory's member, for its destructor.
#include "clang-tidy/ClangTidyModule.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Frontend/MultiplexConsumer.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/VirtualFileSystem.h"

#include <chrono>
#include <functional>

namespace nosync::lint {

unsigned TuResult::compilerErrors() const {
  return static_cast<unsigned>(llvm::count_if(errors, [](const auto& e) { return isCompilerError(e); }));
}

bool TuResult::parseFailed() const { return compilerErrors() > 0; }

void raiseConfiguredErrors(const LintConfig& config, std::vector<clang::tidy::ClangTidyError>& errors) {
  for (auto& e : errors) {
    if (isCompilerError(e) || e.DiagLevel != clang::tooling::Diagnostic::Warning) continue;
    auto it = config.tidy.CheckOptions.find(e.DiagnosticName + ".Severity");
    if (it != config.tidy.CheckOptions.end() && it->getValue().Value == "error")
      e.DiagLevel = clang::tooling::Diagnostic::Error;
  }
}

namespace {

// clang-tidy keeps paths as the compiler opened them, often relative to the
// compile command's directory; every consumer downstream (printer, writers,
// cache, fixes) wants them absolute.
void absolutize(clang::tooling::DiagnosticMessage& m, llvm::StringRef buildDir) {
  m.FilePath = absolutePath(m.FilePath, buildDir);
  llvm::StringMap<clang::tooling::Replacements> fixes;
  for (const auto& file : m.Fix) {
    clang::tooling::Replacements& out = fixes[absolutePath(file.getKey(), buildDir)];
    for (const auto& r : file.getValue())
      llvm::consumeError(out.add(clang::tooling::Replacement(absolutePath(r.getFilePath(), buildDir),
                                                             r.getOffset(), r.getLength(),
                                                             r.getReplacementText())));
  }
  m.Fix = std::move(fixes);
}

void absolutize(std::vector<clang::tidy::ClangTidyError>& errors) {
  for (auto& e : errors) {
    absolutize(e.Message, e.BuildDirectory);
    for (auto& n : e.Notes) absolutize(n, e.BuildDirectory);
  }
}

// A diagnostic or note placed in the preamble's header (a macro the leading
// block defines) is placed in the file itself: the header is the file's first
// bytes, so offsets, lines and columns are the same.
void moveOutOfPreamble(std::vector<clang::tidy::ClangTidyError>& errors, const std::string& header,
                       const std::string& file) {
  auto move = [&](clang::tooling::DiagnosticMessage& m) {
    if (m.FilePath == header) m.FilePath = file;
    auto it = m.Fix.find(header);
    if (it == m.Fix.end()) return;
    clang::tooling::Replacements moved = std::move(it->getValue());
    m.Fix.erase(it);
    for (const auto& r : moved)
      llvm::consumeError(m.Fix[file].add(
          clang::tooling::Replacement(file, r.getOffset(), r.getLength(), r.getReplacementText())));
  };
  for (auto& e : errors) {
    move(e.Message);
    for (auto& n : e.Notes) move(n);
  }
}

// What the project-wide context needs of a unit besides its findings.
struct UnitSummary {
  std::vector<ExportedCall> calls;
  bool namesCuda = true;
  bool hasMain = false;
  bool trains = false;
};

// Records what the project-wide context needs of the unit: its call graph,
// whether it names a CUDA device and whether it holds main().
class CallGraphExport : public clang::ASTConsumer {
 public:
  explicit CallGraphExport(UnitSummary& out) : out_(out) {}
  void HandleTranslationUnit(clang::ASTContext& ctx) override {
#ifdef NOSYNC_HAVE_CHECKS
    out_.calls = clang::tidy::nosync::exportCallEdges(ctx, &out_.trains);
    out_.namesCuda = clang::tidy::nosync::namesCudaDevice(ctx);
    out_.hasMain = clang::tidy::nosync::definesMain(ctx);
#else
    (void)ctx;
#endif
  }

 private:
  UnitSummary& out_;
};

// clang-tidy's own ASTConsumer, behind UserCodeScope, on a preprocessor that
// goes on past missing includes; the call graph is exported alongside.
class ScopedTidyAction : public clang::ASTFrontendAction {
 public:
  ScopedTidyAction(clang::tidy::ClangTidyASTConsumerFactory& factory, std::string excluded,
                   UnitSummary& summary)
      : factory_(factory), excluded_(std::move(excluded)), summary_(summary) {}

  bool BeginSourceFileAction(clang::CompilerInstance& compiler) override {
    clang::Preprocessor& pp = compiler.getPreprocessor();
    pp.addPPCallbacks(std::make_unique<MissingIncludes>(pp));
    if (unsigned skipped = compiler.getPreprocessorOpts().PrecompiledPreambleBytes.first)
      pp.addPPCallbacks(std::make_unique<PreambleReplay>(pp, skipped));
    return true;
  }

  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& compiler,
                                                        llvm::StringRef file) override {
    std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
    // First: MultiplexConsumer calls HandleTranslationUnit in order, so the
    // scope is set before the matchers run.
    consumers.push_back(std::make_unique<UserCodeScope>(excluded_));
    consumers.push_back(factory_.createASTConsumer(compiler, file));
    consumers.push_back(std::make_unique<CallGraphExport>(summary_));
    return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
  }

 private:
  clang::tidy::ClangTidyASTConsumerFactory& factory_;
  std::string excluded_;
  UnitSummary& summary_;
};

// Where a translation unit may take its leading block from a preamble, and
// what it did.
struct PreambleRequest {
  PreambleCache* cache = nullptr;
  // Whether the run reports compiler warning -W<flag> in this file.
  std::function<bool(llvm::StringRef)> reported;
  // Build the preamble and stop: nothing is linted.
  bool only = false;
  std::optional<PreambleUse> used;
};

class ScopedTidyActionFactory : public clang::tooling::FrontendActionFactory {
 public:
  ScopedTidyActionFactory(clang::tidy::ClangTidyContext& context,
                          llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> fs, std::string excluded,
                          UnitSummary& summary, PreambleRequest& preamble)
      : factory_(context, std::move(fs)), excluded_(std::move(excluded)), summary_(summary), preamble_(preamble) {}

  std::unique_ptr<clang::FrontendAction> create() override {
    return std::make_unique<ScopedTidyAction>(factory_, excluded_, summary_);
  }

  bool runInvocation(std::shared_ptr<clang::CompilerInvocation> invocation, clang::FileManager* files,
                     std::shared_ptr<clang::PCHContainerOperations> pch,
                     clang::DiagnosticConsumer* diags) override {
    // As clang-tidy does: code may hide things from static analysis behind
    // __clang_analyzer__.
    invocation->getPreprocessorOpts().SetUpStaticAnalyzer = true;
    if (preamble_.cache) usePreamble(*invocation, *files, pch);
    if (preamble_.only) return true;
    return FrontendActionFactory::runInvocation(std::move(invocation), files, std::move(pch), diags);
  }

 private:
  // Loads the block's PCH and has the lexer start after the block, so the
  // rest of the file keeps its offsets and line numbers.
  void usePreamble(clang::CompilerInvocation& invocation, clang::FileManager& files,
                   std::shared_ptr<clang::PCHContainerOperations> pch) {
    preamble_.used = preamble_.cache->acquire(invocation, files, std::move(pch), preamble_.reported);
    if (!preamble_.used) return;
    clang::PreprocessorOptions& pp = invocation.getPreprocessorOpts();
    pp.ImplicitPCHInclude = preamble_.used->pch;
    pp.PrecompiledPreambleBytes = {preamble_.used->bytes, preamble_.used->endsAtStartOfLine};
  }

  clang::tidy::ClangTidyASTConsumerFactory factory_;
  std::string excluded_;
  UnitSummary& summary_;
  PreambleRequest& preamble_;
};

// clang::tidy::runClangTidy, with the AST consumer wrapped (see UserCodeScope)
// and the tool's own failure reported: a file the compiler could not even
// start on (a bad compile command) leaves no diagnostic behind otherwise.
std::vector<clang::tidy::ClangTidyError> runTidy(const std::string& absFile,
                                                 const clang::tooling::CompilationDatabase& db,
                                                 const LintConfig& config, const CommandLineOverrides& overrides,
                                                 UnitSummary& summary, PreambleRequest& preamble) {
  clang::tidy::ClangTidyContext context(std::make_unique<NosyncOptionsProvider>(config, overrides));
  // A physical file system has its own working directory: ClangTool changes it
  // to each compile command's directory, which must not move the process's
  // (other threads are resolving relative paths).
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::createPhysicalFileSystem());
  clang::tooling::ClangTool tool(db, {absFile}, std::make_shared<clang::PCHContainerOperations>(), fs);
  tool.appendArgumentsAdjuster(clang::tooling::getStripPluginsAdjuster());

  clang::tidy::ClangTidyDiagnosticConsumer diagConsumer(context, nullptr, /*RemoveIncompatibleErrors=*/true,
                                                         /*GetFixesFromNotes=*/false);
  clang::DiagnosticsEngine engine(new clang::DiagnosticIDs(), new clang::DiagnosticOptions(), &diagConsumer,
                                  /*ShouldOwnClient=*/false);
  context.setDiagnosticsEngine(&engine);
  tool.setDiagnosticConsumer(&diagConsumer);

  clang::tidy::ClangTidyOptions fileOptions = context.getOptionsForFile(absFile);
  std::string excluded = fileOptions.ExcludeHeaderFilterRegex.value_or("");
  auto checks = std::make_shared<clang::tidy::CachedGlobList>(fileOptions.Checks.value_or(""));
  preamble.reported = [checks](llvm::StringRef flag) {
    return checks->contains("clang-diagnostic-" + flag.str());
  };
  ScopedTidyActionFactory factory(context, fs, excluded, summary, preamble);
  int rc = tool.run(&factory);
  std::vector<clang::tidy::ClangTidyError> errors = diagConsumer.take();
  bool sawError = llvm::any_of(errors, [](const auto& e) { return isCompilerError(e); });
  if (rc != 0 && !sawError) {
    clang::tidy::ClangTidyError e("clang-diagnostic-error", clang::tooling::Diagnostic::Error, "", false);
    e.Message = clang::tooling::DiagnosticMessage("the compiler could not run on this file (check its compile command)");
    e.Message.FilePath = absFile;
    e.Message.FileOffset = 0;
    errors.push_back(std::move(e));
  }
  return errors;
}

}  // namespace

TuResult lintTranslationUnit(const std::string& absFile, const clang::tooling::CompilationDatabase& db,
                             const LintConfig& config, const CommandLineOverrides& overrides,
                             PreambleCache* preambles) {
  auto start = std::chrono::steady_clock::now();
  TuResult r;
  r.file = absFile;
  r.config = &config;
  r.overrides = overrides;
  PreambleRequest preamble;
  preamble.cache = preambles;
  UnitSummary summary;
  r.errors = runTidy(absFile, db, config, overrides, summary, preamble);
  r.calls = std::move(summary.calls);
  r.namesCuda = summary.namesCuda;
  r.hasMain = summary.hasMain;
  r.trains = summary.trains;
  if (preamble.used) {
    moveOutOfPreamble(r.errors, preamble.used->header, absFile);
    r.preamble = preamble.used->builtNow ? TuResult::Preamble::Built : TuResult::Preamble::Reused;
    r.preambleHeaders = std::move(preamble.used->userHeaders);
  }
  absolutize(r.errors);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void buildPreamble(const std::string& absFile, const clang::tooling::CompilationDatabase& db,
                   const LintConfig& config, const CommandLineOverrides& overrides, PreambleCache& preambles) {
  PreambleRequest preamble;
  preamble.cache = &preambles;
  preamble.only = true;
  UnitSummary summary;
  runTidy(absFile, db, config, overrides, summary, preamble);
}

std::vector<std::string> enabledChecks(const LintConfig& config, llvm::StringRef absFile,
                                       const CommandLineOverrides& overrides) {
  return clang::tidy::getCheckNames(optionsFor(config, absFile, overrides),
                                    /*AllowEnablingAnalyzerAlphaCheckers=*/false);
}

// A --checks entry that matches no check is almost always a typo of a rule id.
std::optional<std::string> unknownCheckGlob(llvm::StringRef globs) {
  llvm::SmallVector<llvm::StringRef> items;
  globs.split(items, ',', -1, /*KeepEmpty=*/false);
  std::vector<std::string> known = clang::tidy::getCheckNames(
      [] {
        clang::tidy::ClangTidyOptions all = clang::tidy::ClangTidyOptions::getDefaults();
        all.Checks = "*";
        return all;
      }(),
      false);
  for (const auto& r : rules::kRules)
    if (r.is_static()) known.emplace_back(r.id);
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.consume_front("-")) item = item.trim();
    if (item.empty() || item == "*") continue;
    // Regex::escape escapes the '*' too; a glob '*' means '.*'.
    std::string pattern = "^" + llvm::Regex::escape(item) + "$";
    size_t pos;
    while ((pos = pattern.find("\\*")) != std::string::npos) pattern.replace(pos, 2, ".*");
    llvm::Regex re(pattern);
    bool any = false;
    for (const auto& name : known) any = any || re.match(name);
    if (!any) return item.str();
  }
  return std::nullopt;
}

}  // namespace nosync::lint
