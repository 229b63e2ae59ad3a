#include "Fixes.h"

#include "Finding.h"

#include "nosync/kernel_names.h"

#include "clang-tidy/ClangTidy.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace nosync::lint {
namespace {

using clang::tooling::Replacement;
using clang::tooling::Replacements;

using EditKey = std::tuple<std::string, unsigned, unsigned, std::string>;

// `Repls` with `Insertion` appended to an insertion already at its offset:
// two findings that each declare something before the same loop. Nullopt
// when the conflict is anything else (overlapping replacements).
std::optional<Replacements> appendInsertion(const Replacements &Repls, const Replacement &Insertion) {
  if (Insertion.getLength() != 0)
    return std::nullopt;
  Replacements Out;
  bool Merged = false;
  for (const Replacement &R : Repls) {
    Replacement Kept = R;
    if (!Merged && R.getLength() == 0 && R.getOffset() == Insertion.getOffset()) {
      Kept = Replacement(R.getFilePath(), R.getOffset(), 0, (R.getReplacementText() + Insertion.getReplacementText()).str());
      Merged = true;
    }
    if (llvm::Error Err = Out.add(Kept)) {
      llvm::consumeError(std::move(Err));
      return std::nullopt;
    }
  }
  if (!Merged)
    return std::nullopt;
  return Out;
}

// The `#include <nosync/kernels.h>` edit: clang-tidy's include inserter puts
// it on the first finding of a file only (its --fix would add one copy per
// finding otherwise), so here it is an edit of the file rather than of that
// finding: set aside, and applied once if any applied finding of the file
// calls nosync::kernels.
bool isKernelsInclude(const Replacement& r) {
  return r.getLength() == 0 && r.getReplacementText().trim() ==
                                   "#include " + std::string(nosync::rules::kernel_names::kHeader);
}

bool callsKernels(const Replacement& r) { return r.getReplacementText().contains("nosync::kernels::"); }

// Adds all of one finding's edits or none of them. An edit identical to one
// already taken (a shared header reached from two translation units) goes in
// once. Returns the files whose new code calls nosync::kernels.
std::optional<std::set<std::string>> addAtomically(const clang::tidy::ClangTidyError& e,
                                                   std::map<std::string, Replacements>& byFile,
                                                   std::set<EditKey>& seen,
                                                   std::map<std::string, Replacement>& includes) {
  std::map<std::string, Replacements> trial = byFile;
  std::set<EditKey> trialSeen = seen;
  std::set<std::string> kernelFiles;
  for (const auto& file : e.Message.Fix) {
    for (const Replacement& r : file.getValue()) {
      std::string path = absolutePath(r.getFilePath(), e.BuildDirectory);
      Replacement abs(path, r.getOffset(), r.getLength(), r.getReplacementText());
      if (isKernelsInclude(abs)) {
        includes.emplace(path, abs);
        continue;
      }
      if (callsKernels(abs)) kernelFiles.insert(path);
      auto key = std::make_tuple(path, r.getOffset(), r.getLength(), r.getReplacementText().str());
      if (!trialSeen.insert(key).second) continue;
      if (llvm::Error err = trial[path].add(abs)) {
        llvm::consumeError(std::move(err));
        std::optional<Replacements> merged = appendInsertion(trial[path], abs);
        if (!merged) return std::nullopt;
        trial[path] = std::move(*merged);
      }
    }
  }
  byFile = std::move(trial);
  seen = std::move(trialSeen);
  return kernelFiles;
}

}  // namespace

llvm::Expected<FixSummary> applyFixes(const std::vector<clang::tidy::ClangTidyError>& findings) {
  FixSummary summary;
  std::map<std::string, Replacements> byFile;
  std::set<EditKey> seen;
  std::map<std::string, Replacement> includes;  // the kernels #include edit of each file
  std::set<std::string> kernelFiles;            // files where an applied fix calls nosync::kernels
  for (const auto& e : findings) {
    if (e.Message.Fix.empty()) continue;
    if (std::optional<std::set<std::string>> files = addAtomically(e, byFile, seen, includes)) {
      ++summary.applied;
      kernelFiles.insert(files->begin(), files->end());
    } else {
      ++summary.conflicts;
    }
  }
  for (const std::string& path : kernelFiles) {
    auto include = includes.find(path);
    if (include == includes.end()) continue;  // already included
    if (llvm::Error err = byFile[path].add(include->second)) {
      std::optional<Replacements> merged = appendInsertion(byFile[path], include->second);
      llvm::consumeError(std::move(err));
      if (merged) byFile[path] = std::move(*merged);
    }
  }
  for (const auto& [path, repls] : byFile) {
    if (repls.empty()) continue;
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf) return llvm::createStringError("--fix: cannot read " + path + ": " + buf.getError().message());
    auto fixed = clang::tooling::applyAllReplacements((*buf)->getBuffer(), repls);
    if (!fixed) return fixed.takeError();
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
    if (ec) return llvm::createStringError("--fix: cannot write " + path + ": " + ec.message());
    out << *fixed;
    ++summary.files;
  }
  return summary;
}

llvm::Error exportFixes(const std::string& yamlPath, const std::string& mainFile,
                        const std::vector<clang::tidy::ClangTidyError>& findings) {
  std::error_code ec;
  llvm::raw_fd_ostream out(yamlPath, ec, llvm::sys::fs::OF_None);
  if (ec) return llvm::createStringError("--export-fixes: cannot write " + yamlPath + ": " + ec.message());
  clang::tidy::exportReplacements(mainFile, findings, out);
  return llvm::Error::success();
}

}  // namespace nosync::lint
