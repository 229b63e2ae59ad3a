#include "Catalog.h"

#include "nosync/rules.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace nosync::lint {

namespace path = llvm::sys::path;

void listRules(llvm::raw_ostream& os) {
  for (const auto& r : rules::kRules)
    os << r.id << "  [" << rules::to_string(r.severity) << ", " << rules::to_string(r.where) << "]  "
       << r.summary << "\n";
}

std::string findDocsDir(const char* argv0) {
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, &anchor);
  llvm::SmallString<256> installed(path::parent_path(path::parent_path(exe)));
  path::append(installed, "share", "nosync", "rules", "docs");
  if (llvm::sys::fs::is_directory(installed)) return std::string(installed);
  if (llvm::sys::fs::is_directory(NOSYNC_RULE_DOCS_SOURCE_DIR)) return NOSYNC_RULE_DOCS_SOURCE_DIR;
  return {};
}

bool explainRule(const std::string& ruleId, const std::string& docsDir, llvm::raw_ostream& os) {
  const rules::Rule* rule = rules::find(ruleId);
  if (!rule) {
    llvm::errs() << "nosync-lint: error: unknown rule '" << ruleId << "' (see --list-rules)\n";
    return false;
  }
  os << rule->id << " (" << rules::to_string(rule->severity) << ", " << rules::to_string(rule->where)
     << ")\n\n"
     << "  what: " << rule->summary << "\n"
     << "  seen at run time as: " << rule->runtime_signature << "\n"
     << "  fix: " << rule->fix << "\n\n";
  llvm::SmallString<256> doc(docsDir);
  path::append(doc, ruleId + ".md");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buf =
      std::make_error_code(std::errc::no_such_file_or_directory);
  if (!docsDir.empty()) buf = llvm::MemoryBuffer::getFile(doc);
  if (!buf) {
    os << "(the doc page " << ruleId << ".md was not found: nosync-lint looks in share/nosync/rules/docs "
       << "beside its install prefix and in " << NOSYNC_RULE_DOCS_SOURCE_DIR << ")\n";
    return true;
  }
  os << (*buf)->getBuffer();
  return true;
}

}  // namespace nosync::lint
