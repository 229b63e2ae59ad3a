#include "Writers.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace nosync::lint {
namespace {

llvm::json::Array editsJson(const std::vector<Edit>& edits) {
  llvm::json::Array out;
  for (const Edit& e : edits)
    out.push_back(llvm::json::Object{{"file", e.file},
                                     {"offset", e.offset},
                                     {"length", e.length},
                                     {"replacement", e.replacement}});
  return out;
}

llvm::json::Array notesJson(const std::vector<FindingNote>& notes) {
  llvm::json::Array out;
  for (const FindingNote& n : notes)
    out.push_back(llvm::json::Object{{"file", n.where.file},
                                     {"line", n.where.line},
                                     {"column", n.where.column},
                                     {"message", n.message}});
  return out;
}

}  // namespace

void writeJson(const std::vector<Finding>& findings, llvm::raw_ostream& os) {
  llvm::json::Array out;
  for (const Finding& f : findings)
    out.push_back(llvm::json::Object{{"file", f.where.file},
                                     {"line", f.where.line},
                                     {"column", f.where.column},
                                     {"rule", f.rule},
                                     {"severity", std::string(rules::to_string(f.severity))},
                                     {"message", f.message},
                                     {"context", f.context},
                                     {"fixes", editsJson(f.fixes)},
                                     {"notes", notesJson(f.notes)}});
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(out))) << "\n";
}

}  // namespace nosync::lint
