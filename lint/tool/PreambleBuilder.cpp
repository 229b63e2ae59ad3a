#include "PreambleBuilder.h"

#include "clang/Basic/DiagnosticIDs.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Frontend/MultiplexConsumer.h"
#include "clang/Sema/Scope.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/SemaConsumer.h"
#include "clang/Lex/HeaderSearchOptions.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <set>

namespace nosync::lint {
namespace {

// Keeps what the build said: the first error (the reason it is unusable) and
// the flags of the warnings outside system headers.
class BuildDiagnostics : public clang::DiagnosticConsumer {
 public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level >= clang::DiagnosticsEngine::Error) {
      if (firstError.empty()) {
        llvm::SmallString<128> text;
        info.FormatDiagnostic(text);
        firstError = std::string(text);
      }
    } else if (level == clang::DiagnosticsEngine::Warning) {
      llvm::StringRef flag = clang::DiagnosticIDs::getWarningOptionForDiag(info.getID());
      warningFlags.insert(flag.empty() ? std::string("warning") : flag.str());
    }
  }
  std::string firstError;
  std::set<std::string> warningFlags;
};

// Does in the PCH the work a complete translation unit does last: define
// the vtables the headers use and instantiate the virtual members that pulls
// in (torch::nn's Cloneable<T>::clone_, c10's type equality, ...). Clang
// leaves that to every file that loads a PCH, where it cost ~2 s for nothing
// but torch/torch.h; the result is the same declarations, made once.
class CompleteInstantiations : public clang::SemaConsumer {
 public:
  void InitializeSema(clang::Sema& sema) override { sema_ = &sema; }
  void ForgetSema() override { sema_ = nullptr; }
  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (!sema_ || sema_->getDiagnostics().hasErrorOccurred()) return;
    // The parser's translation-unit scope is gone by now; an instantiation
    // may still declare a builtin into it, so it gets a stand-in.
    clang::Scope tuScope(nullptr, clang::Scope::DeclScope, sema_->getDiagnostics());
    tuScope.setEntity(context.getTranslationUnitDecl());
    sema_->TUScope = &tuScope;
    // Defining a vtable can instantiate a class whose vtable is then used.
    bool more = true;
    for (int round = 0; more && round < 100; ++round) {
      more = sema_->DefineUsedVTables();
      sema_->PerformPendingInstantiations();
    }
    sema_->TUScope = nullptr;
  }

 private:
  clang::Sema* sema_ = nullptr;
};

class GeneratePreamblePch : public clang::GeneratePCHAction {
 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance& compiler,
                                                        llvm::StringRef file) override {
    auto writer = GeneratePCHAction::CreateASTConsumer(compiler, file);
    if (!writer) return nullptr;
    std::vector<std::unique_ptr<clang::ASTConsumer>> consumers;
    consumers.push_back(std::make_unique<CompleteInstantiations>());  // before the writer
    consumers.push_back(std::move(writer));
    return std::make_unique<clang::MultiplexConsumer>(std::move(consumers));
  }
};

// The invocation of the file, turned into "emit a PCH of the header".
std::shared_ptr<clang::CompilerInvocation> pchInvocation(const clang::CompilerInvocation& base,
                                                         const std::string& headerPath,
                                                         const std::string& pchPath, const std::string& fileDir) {
  auto ci = std::make_shared<clang::CompilerInvocation>(base);
  clang::FrontendOptions& fe = ci->getFrontendOpts();
  clang::InputKind kind = fe.Inputs.empty() ? clang::InputKind(clang::Language::CXX) : fe.Inputs.front().getKind();
  fe.Inputs = {clang::FrontendInputFile(headerPath, kind)};
  fe.OutputFile = pchPath;
  fe.ProgramAction = clang::frontend::GeneratePCH;
  fe.SkipFunctionBodies = false;  // checks look into inline and template bodies
  // The headers' own template uses are instantiated once, into the PCH,
  // rather than again at the end of every file that loads it: the difference
  // between ~6.5 s and ~2 s per LibTorch file.
  ci->getLangOpts().PCHInstantiateTemplates = true;
  ci->getDependencyOutputOpts() = clang::DependencyOutputOptions();
  clang::PreprocessorOptions& pp = ci->getPreprocessorOpts();
  pp.ImplicitPCHInclude.clear();
  pp.PrecompiledPreambleBytes = {0, false};
  // Records an #if still open at the block's end (a header's include guard)
  // into the PCH, for the file's lexer to carry on inside it.
  pp.GeneratePreamble = true;
  // The block's quoted includes were relative to the file: its directory is
  // searched right after the header's own (the cache, which holds none).
  auto& entries = ci->getHeaderSearchOpts().UserEntries;
  entries.insert(entries.begin(), clang::HeaderSearchOptions::Entry(fileDir, clang::frontend::Quoted,
                                                                    /*IsFramework=*/false,
                                                                    /*IgnoreSysRoot=*/true));
  return ci;
}

std::string currentDir(llvm::vfs::FileSystem& fs) {
  auto cwd = fs.getCurrentWorkingDirectory();
  return cwd ? *cwd : std::string();
}

std::vector<PreambleInput> inputsOf(const clang::SourceManager& sm, llvm::vfs::FileSystem& fs) {
  std::vector<PreambleInput> inputs;
  std::set<std::string> seen;
  std::string cwd = currentDir(fs);
  for (unsigned i = 0; i < sm.local_sloc_entry_size(); ++i) {
    const clang::SrcMgr::SLocEntry& entry = sm.getLocalSLocEntry(i);
    if (!entry.isFile()) continue;
    clang::OptionalFileEntryRef fe = entry.getFile().getContentCache().OrigEntry;
    if (!fe) continue;  // the predefines buffer
    llvm::SmallString<256> abs(fe->getName());
    if (!llvm::sys::path::is_absolute(abs)) llvm::sys::fs::make_absolute(cwd, abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    if (!seen.insert(std::string(abs)).second) continue;
    auto st = fs.status(abs);
    if (!st) continue;
    inputs.push_back({std::string(abs), st->getSize(),
                      std::chrono::duration_cast<std::chrono::nanoseconds>(
                          st->getLastModificationTime().time_since_epoch())
                          .count(),
                      clang::SrcMgr::isSystem(entry.getFile().getFileCharacteristic())});
  }
  return inputs;
}

}  // namespace

PreambleBuildResult buildPreamblePch(const clang::CompilerInvocation& base, const std::string& headerPath,
                                     const std::string& pchPath, const std::string& fileDir,
                                     llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs,
                                     std::shared_ptr<clang::PCHContainerOperations> pch) {
  PreambleBuildResult result;
  BuildDiagnostics diags;
  clang::CompilerInstance compiler(std::move(pch));
  compiler.setInvocation(pchInvocation(base, headerPath, pchPath, fileDir));
  compiler.createDiagnostics(&diags, /*ShouldOwnClient=*/false);
  compiler.createFileManager(fs);
  GeneratePreamblePch action;
  bool ran = compiler.ExecuteAction(action);
  // Kept for a failed build too: it is tried again when one of them changes.
  if (compiler.hasSourceManager()) result.inputs = inputsOf(compiler.getSourceManager(), *fs);
  result.warningFlags.assign(diags.warningFlags.begin(), diags.warningFlags.end());
  if (!ran || compiler.getDiagnostics().hasErrorOccurred()) {
    result.failure = diags.firstError.empty() ? "the compiler could not build it" : diags.firstError;
    return result;
  }
  result.ok = true;
  return result;
}

}  // namespace nosync::lint

