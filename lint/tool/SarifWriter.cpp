// SARIF 2.1.0 as GitHub code scanning reads it: one run, the static rules of
// the catalog as tool.driver.rules, results with a physical location, related
// locations for notes, and fixes as artifactChanges with byte-offset regions.
#include "Writers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

namespace nosync::lint {
namespace {

constexpr const char* kSchema = "https://json.schemastore.org/sarif-2.1.0.json";
constexpr const char* kRootBase = "%SRCROOT%";

std::string sarifLevel(rules::Severity s) {
  switch (s) {
    case rules::Severity::Note: return "note";
    case rules::Severity::Warning: return "warning";
    case rules::Severity::Error: return "error";
  }
  return "warning";
}

// Percent-encodes what may not appear raw in a URI path.
std::string escapeUriPath(llvm::StringRef p) {
  std::string out;
  for (char c : p) {
    if (llvm::isAlnum(c) || llvm::StringRef("/-._~+").contains(c)) out += c;
    else out += "%" + llvm::utohexstr(static_cast<unsigned char>(c), /*LowerCase=*/false, 2);
  }
  return out;
}

llvm::json::Object artifactLocation(llvm::StringRef file, llvm::StringRef root) {
  if (!root.empty() && file.starts_with(root) && file.size() > root.size() && file[root.size()] == '/')
    return llvm::json::Object{{"uri", escapeUriPath(file.drop_front(root.size() + 1))}, {"uriBaseId", kRootBase}};
  return llvm::json::Object{{"uri", fileUri(file)}};
}

llvm::json::Object physicalLocation(const Location& loc, llvm::StringRef root) {
  llvm::json::Object phys{{"artifactLocation", artifactLocation(loc.file, root)}};
  if (loc.line > 0) phys["region"] = llvm::json::Object{{"startLine", loc.line}, {"startColumn", loc.column}};
  return phys;
}

llvm::json::Array rulesJson(const std::string& docsUri) {
  llvm::json::Array out;
  for (const rules::Rule& r : rules::kRules) {
    if (!r.is_static()) continue;
    std::string id(r.id);
    llvm::json::Object rule{
        {"id", id},
        {"name", id},
        {"shortDescription", llvm::json::Object{{"text", std::string(r.summary)}}},
        {"help", llvm::json::Object{{"text", std::string(r.fix)}}},
        {"defaultConfiguration", llvm::json::Object{{"level", sarifLevel(r.severity)}}}};
    if (!docsUri.empty()) rule["helpUri"] = docsUri + "/" + id + ".md";
    out.push_back(std::move(rule));
  }
  return out;
}

// ruleIndex into tool.driver.rules, or -1 for diagnostics outside the catalog
// (compiler errors).
int ruleIndex(llvm::StringRef id) {
  int i = 0;
  for (const rules::Rule& r : rules::kRules) {
    if (!r.is_static()) continue;
    if (r.id == std::string_view(id.data(), id.size())) return i;
    ++i;
  }
  return -1;
}

llvm::json::Array fixesJson(const Finding& f, llvm::StringRef root) {
  if (f.fixes.empty()) return {};
  llvm::json::Array changes;
  for (size_t i = 0; i < f.fixes.size();) {
    const std::string& file = f.fixes[i].file;
    llvm::json::Array replacements;
    for (; i < f.fixes.size() && f.fixes[i].file == file; ++i)
      replacements.push_back(llvm::json::Object{
          {"deletedRegion", llvm::json::Object{{"charOffset", f.fixes[i].offset},
                                               {"charLength", f.fixes[i].length}}},
          {"insertedContent", llvm::json::Object{{"text", f.fixes[i].replacement}}}});
    changes.push_back(llvm::json::Object{{"artifactLocation", artifactLocation(file, root)},
                                         {"replacements", std::move(replacements)}});
  }
  return llvm::json::Array{llvm::json::Object{
      {"description", llvm::json::Object{{"text", "apply the fix-it of " + f.rule}}},
      {"artifactChanges", std::move(changes)}}};
}

llvm::json::Object resultJson(const Finding& f, llvm::StringRef root) {
  llvm::json::Object res{{"ruleId", f.rule},
                         {"level", sarifLevel(f.severity)},
                         {"message", llvm::json::Object{{"text", f.message}}}};
  if (int idx = ruleIndex(f.rule); idx >= 0) res["ruleIndex"] = idx;
  if (!f.where.file.empty())
    res["locations"] = llvm::json::Array{llvm::json::Object{{"physicalLocation", physicalLocation(f.where, root)}}};
  llvm::json::Array related;
  for (const FindingNote& n : f.notes) {
    if (n.where.file.empty()) continue;
    related.push_back(llvm::json::Object{{"id", static_cast<int64_t>(related.size())},
                                         {"message", llvm::json::Object{{"text", n.message}}},
                                         {"physicalLocation", physicalLocation(n.where, root)}});
  }
  if (!related.empty()) res["relatedLocations"] = std::move(related);
  llvm::json::Array fixes = fixesJson(f, root);
  if (!fixes.empty()) res["fixes"] = std::move(fixes);
  if (!f.context.empty()) res["properties"] = llvm::json::Object{{"context", f.context}};
  return res;
}

}  // namespace

std::string fileUri(llvm::StringRef absPath) { return "file://" + escapeUriPath(absPath); }

void writeSarif(const std::vector<Finding>& findings, const SarifContext& ctx, llvm::raw_ostream& os) {
  llvm::json::Array results;
  for (const Finding& f : findings) results.push_back(resultJson(f, ctx.srcRoot));
  llvm::json::Object driver{{"name", "nosync-lint"},
                            {"version", NOSYNC_VERSION},
                            {"rules", rulesJson(ctx.docsUri)}};
  llvm::json::Object run{{"tool", llvm::json::Object{{"driver", std::move(driver)}}},
                         {"results", std::move(results)},
                         {"invocations", llvm::json::Array{llvm::json::Object{
                                             {"executionSuccessful", ctx.executionSuccessful}}}}};
  if (!ctx.srcRoot.empty())
    run["originalUriBaseIds"] =
        llvm::json::Object{{kRootBase, llvm::json::Object{{"uri", fileUri(ctx.srcRoot) + "/"}}}};
  llvm::json::Object log{{"$schema", kSchema},
                         {"version", "2.1.0"},
                         {"runs", llvm::json::Array{std::move(run)}}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(log))) << "\n";
}

}  // namespace nosync::lint
