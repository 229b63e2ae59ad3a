// Output writers, one per --format. Each takes the findings of the whole run,
// already filtered by --min-severity, in input-file order.
#pragma once

#include "Finding.h"
#include "CommandLine.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace nosync::lint {

struct TuResult;

// --format=json: one array, one object per finding (the schema the corpus
// scorer reads: file, line, column, rule, severity, message, fixes, notes).
void writeJson(const std::vector<Finding>& findings, llvm::raw_ostream& os);

// --format=sarif: one SARIF 2.1.0 run with the rule catalog as
// tool.driver.rules and one result per finding.
struct SarifContext {
  std::string srcRoot;   // results under it get relative URIs against %SRCROOT%
  std::string docsUri;   // base URI of the rule doc pages (helpUri = docsUri/<id>.md)
  bool executionSuccessful = true;
};
void writeSarif(const std::vector<Finding>& findings, const SarifContext& ctx, llvm::raw_ostream& os);

// --format=text: clang-tidy's own diagnostic printer (caret, fix-it lines,
// colour on a terminal), one translation unit at a time.
void writeText(const TuResult& tu, std::optional<bool> color);

// "file:///a/b" for an absolute path, with the characters URIs reserve escaped.
std::string fileUri(llvm::StringRef absPath);

}  // namespace nosync::lint
