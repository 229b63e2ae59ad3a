#include "Fixes.h"

#include "Finding.h"

#include "clang-tidy/ClangTidy.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>
#include <tuple>

namespace nosync::lint {
namespace {

using clang::tooling::Replacement;
using clang::tooling::Replacements;

// Adds all of one finding's edits or none of them.
bool addAtomically(const clang::tidy::ClangTidyError& e, std::map<std::string, Replacements>& byFile,
                   std::set<std::tuple<std::string, unsigned, unsigned, std::string>>& seen) {
  std::map<std::string, Replacements> trial = byFile;
  for (const auto& file : e.Message.Fix) {
    for (const Replacement& r : file.getValue()) {
      std::string path = absolutePath(r.getFilePath(), e.BuildDirectory);
      auto key = std::make_tuple(path, r.getOffset(), r.getLength(), r.getReplacementText().str());
      if (!seen.insert(key).second) continue;
      Replacement abs(path, r.getOffset(), r.getLength(), r.getReplacementText());
      if (llvm::Error err = trial[path].add(abs)) {
        llvm::consumeError(std::move(err));
        return false;
      }
    }
  }
  byFile = std::move(trial);
  return true;
}

}  // namespace

llvm::Expected<FixSummary> applyFixes(const std::vector<clang::tidy::ClangTidyError>& findings) {
  FixSummary summary;
  std::map<std::string, Replacements> byFile;
  std::set<std::tuple<std::string, unsigned, unsigned, std::string>> seen;
  for (const auto& e : findings) {
    if (e.Message.Fix.empty()) continue;
    if (addAtomically(e, byFile, seen)) ++summary.applied;
    else ++summary.conflicts;
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
