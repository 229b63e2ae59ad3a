#include "LintRun.h"

#include "Finding.h"

#include "clang-tidy/ClangTidy.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/VirtualFileSystem.h"

#include <chrono>

namespace nosync::lint {

bool TuResult::parseFailed() const {
  for (const auto& e : errors)
    if (isCompilerError(e)) return true;
  return false;
}

void applySeverityOverrides(const LintConfig& config, std::vector<clang::tidy::ClangTidyError>& errors) {
  for (auto& e : errors) {
    if (isCompilerError(e) || e.DiagLevel != clang::tooling::Diagnostic::Warning) continue;
    auto it = config.severities.find(e.DiagnosticName);
    if (it != config.severities.end()) e.DiagLevel = levelOf(it->second);
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

}  // namespace

TuResult lintTranslationUnit(const std::string& absFile, const clang::tooling::CompilationDatabase& db,
                             const LintConfig& config, const CommandLineOverrides& overrides) {
  auto start = std::chrono::steady_clock::now();
  TuResult r;
  r.file = absFile;
  r.config = &config;
  r.overrides = overrides;
  clang::tidy::ClangTidyContext context(std::make_unique<NosyncOptionsProvider>(config, overrides));
  // A physical file system has its own working directory: ClangTool changes it
  // to each compile command's directory, which must not move the process's
  // (other threads are resolving relative paths).
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(llvm::vfs::createPhysicalFileSystem());
  r.errors = clang::tidy::runClangTidy(context, db, {absFile}, fs, /*ApplyAnyFix=*/false);
  absolutize(r.errors);
  applySeverityOverrides(config, r.errors);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<std::string> enabledChecks(const LintConfig& config, llvm::StringRef absFile,
                                       const CommandLineOverrides& overrides) {
  return clang::tidy::getCheckNames(optionsFor(config, absFile, overrides),
                                    /*AllowEnablingAnalyzerAlphaCheckers=*/false);
}

}  // namespace nosync::lint
