// The catalog is the single source of truth: ids unique and well formed, each
// rule documented with the sections users rely on, and no doc naming an id
// that does not exist.
#include "nosync/fixes.h"
#include "nosync/rules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using nosync::rules::kRules;

namespace {

const fs::path kDocs = NOSYNC_RULE_DOCS_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// nosync-* words that name tools, not rules.
const std::set<std::string> kToolNames = {"nosync-lint", "nosync-run", "nosync-merge", "nosync-tidy"};

}  // namespace

TEST(RuleCatalog, IdsAreUniqueAndWellFormed) {
  std::set<std::string_view> seen;
  const std::regex well_formed("nosync-[a-z0-9]+(-[a-z0-9]+)*");
  for (const auto& r : kRules) {
    EXPECT_TRUE(seen.insert(r.id).second) << "duplicate id " << r.id;
    EXPECT_TRUE(std::regex_match(std::string(r.id), well_formed)) << r.id;
    EXPECT_FALSE(r.summary.empty()) << r.id;
    EXPECT_FALSE(r.fix.empty()) << r.id;
    EXPECT_FALSE(r.runtime_signature.empty()) << r.id;
    EXPECT_EQ(kToolNames.count(std::string(r.id)), 0u) << r.id << " collides with a tool name";
  }
  EXPECT_GE(kRules.size(), 9u);
}

TEST(RuleCatalog, LookupRoundTrips) {
  for (const auto& r : kRules) {
    const auto* found = nosync::rules::find(r.id);
    ASSERT_NE(found, nullptr) << r.id;
    EXPECT_EQ(found->rule, r.rule);
    EXPECT_EQ(&nosync::rules::get(r.rule), found);
  }
  EXPECT_EQ(nosync::rules::find("nosync-does-not-exist"), nullptr);
}

TEST(RuleDocs, EveryRuleHasAPageWithTheRequiredSections) {
  const char* sections[] = {"## What it flags", "## Why it stalls the GPU", "## Bad", "## Good",
                            "## Runtime signature", "## How to suppress"};
  for (const auto& r : kRules) {
    fs::path page = kDocs / (std::string(r.id) + ".md");
    ASSERT_TRUE(fs::exists(page)) << "rule " << r.id << " has no doc page " << page;
    std::string text = read_file(page);
    EXPECT_EQ(text.rfind("# " + std::string(r.id), 0), 0u) << page << " must start with '# " << r.id << "'";
    for (const char* s : sections)
      EXPECT_NE(text.find(s), std::string::npos) << page << " lacks section '" << s << "'";
  }
}

// Every fix-it of fixes.def is shown before/after in its rule's page, under
// "## Fix-its (--fix)", by its name.
TEST(RuleDocs, EveryFixItIsOnItsRulePage) {
  for (const auto& f : nosync::rules::kFixes) {
    const auto& rule = nosync::rules::get(f.rule);
    EXPECT_TRUE(rule.is_static()) << f.name << ": a fix-it needs a static rule";
    EXPECT_FALSE(f.applied.empty() && f.left_as_note.empty()) << f.name << " says nothing";
    std::string text = read_file(kDocs / (std::string(rule.id) + ".md"));
    size_t section = text.find("## Fix-its (--fix)");
    ASSERT_NE(section, std::string::npos) << rule.id << ".md lacks '## Fix-its (--fix)' for " << f.name;
    EXPECT_NE(text.find("`" + std::string(f.name) + "`", section), std::string::npos)
        << rule.id << ".md does not show fix-it " << f.name;
  }
}

TEST(RuleDocs, DocsNameOnlyExistingIds) {
  const std::regex token("nosync-[a-z0-9]+(-[a-z0-9]+)*");
  size_t pages = 0;
  for (const auto& entry : fs::directory_iterator(kDocs)) {
    if (entry.path().extension() != ".md") continue;
    ++pages;
    std::string stem = entry.path().stem().string();
    EXPECT_NE(nosync::rules::find(stem), nullptr) << entry.path() << " documents no rule in rules.def";
    std::string text = read_file(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), token), end; it != end; ++it) {
      std::string id = it->str();
      if (kToolNames.count(id)) continue;
      EXPECT_NE(nosync::rules::find(id), nullptr) << entry.path() << " names unknown rule id " << id;
    }
  }
  EXPECT_EQ(pages, kRules.size());
}
