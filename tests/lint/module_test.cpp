// The nosync clang-tidy module registers exactly one check per static rule of
// the catalog, under the rule's id, and each check reads the catalog's
// severity unless its Severity option says otherwise.
#include "NosyncModuleAnchor.h"
#include "nosync/rules.h"

#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

namespace {

std::set<std::string> registeredNosyncChecks() {
  std::set<std::string> names;
  for (const auto &entry : clang::tidy::ClangTidyModuleRegistry::entries()) {
    if (entry.getName() != "nosync-module") continue;
    std::unique_ptr<clang::tidy::ClangTidyModule> module = entry.instantiate();
    clang::tidy::ClangTidyCheckFactories factories;
    module->addCheckFactories(factories);
    for (const auto &f : factories) names.insert(f.getKey().str());
  }
  return names;
}

}  // namespace

TEST(NosyncModule, RegistersOneCheckPerStaticRuleUnderItsId) {
  std::set<std::string> expected;
  for (const auto &r : nosync::rules::kRules)
    if (r.is_static()) expected.insert(std::string(r.id));
  EXPECT_EQ(registeredNosyncChecks(), expected);
}
