// --list-rules and --explain: the rule catalog and its doc pages.
#pragma once

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace nosync::lint {

void listRules(llvm::raw_ostream& os);

// Directory holding <rule id>.md: installed share/nosync/rules/docs next to the
// binary's prefix first, then the source tree this binary was built from.
// Empty when neither exists.
std::string findDocsDir(const char* argv0);

// Prints the catalog entry and the doc page of `ruleId`. Returns false (after
// one error line) for an unknown rule.
bool explainRule(const std::string& ruleId, const std::string& docsDir, llvm::raw_ostream& os);

}  // namespace nosync::lint
