// The op table (rules/include/nosync/ops.def) is consistent with the catalog
// and complete: every rule has op rows or says why not, every op is seen by at
// least one side and says why when only one side sees it, and every op the
// linter can see is called in a fixture of its rule.
#include "nosync/ops.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nosync::rules::kOps;
using nosync::rules::kRules;
using nosync::rules::OpEntry;
using nosync::rules::RuleId;

namespace {

const fs::path kFixtures = NOSYNC_LINT_FIXTURES_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// tests/lint/checks/<id without "nosync-">.cpp and its variants <...>.<variant>.cpp.
std::vector<fs::path> fixtures_of(RuleId rule) {
  std::string stem(nosync::rules::get(rule).id.substr(std::string_view("nosync-").size()));
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kFixtures)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".cpp" && (name == stem + ".cpp" || name.rfind(stem + ".", 0) == 0))
      out.push_back(e.path());
  }
  return out;
}

std::vector<std::string> words(std::string_view list) {
  std::vector<std::string> out;
  nosync::rules::any_word(list, [&out](std::string_view w) {
    out.emplace_back(w);
    return false;
  });
  return out;
}

// How a spelling looks at a call site: "clip_grad_norm_(" for
// "::torch::nn::utils::clip_grad_norm_", "item<" or "item(" for "item",
// "<<" for "::at::operator<<".
bool called_in(const std::string& text, const std::string& spelling) {
  std::string name = spelling.substr(spelling.rfind(':') == std::string::npos ? 0 : spelling.rfind(':') + 1);
  if (name.rfind("operator", 0) == 0) return text.find(name.substr(8)) != std::string::npos;
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    bool starts_word = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
    char next = at + name.size() < text.size() ? text[at + name.size()] : '\0';
    if (starts_word && (next == '(' || next == '<')) return true;
  }
  return false;
}

}  // namespace

TEST(OpTable, EveryOpIsSeenBySomeSideAndSaysWhyWhenOnlyByOne) {
  for (const OpEntry& op : kOps) {
    EXPECT_TRUE(op.is_static() || op.is_runtime()) << op.name << " has neither spellings nor frames";
    if (op.is_static() && op.is_runtime())
      EXPECT_TRUE(op.unseen.empty()) << op.name << " is seen by both sides but says it is not: " << op.unseen;
    else
      EXPECT_FALSE(op.unseen.empty()) << op.name << " is seen by one side only and does not say why";
  }
}

TEST(OpTable, RulesMatchTheSideThatReportsThem) {
  for (const OpEntry& op : kOps) {
    if (op.is_static()) {
      EXPECT_TRUE(nosync::rules::get(op.rule).is_static()) << op.name << ": the linter cannot report a runtime rule";
      EXPECT_TRUE(nosync::rules::get(op.in_condition).is_static()) << op.name;
    }
    if (op.is_runtime() && !op.display.empty()) {
      EXPECT_TRUE(nosync::rules::get(op.at_runtime).is_runtime()) << op.name;
    }
    EXPECT_GE(op.priority, 0) << op.name;
  }
}

TEST(OpTable, NamesAreUniqueAndFramesAreNotEmptyWords) {
  std::set<std::string_view> names;
  for (const OpEntry& op : kOps) {
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate op " << op.name;
    EXPECT_EQ(&nosync::rules::get(op.op), &op) << op.name;
    for (const std::string& f : words(op.frames)) EXPECT_GE(f.size(), 4u) << op.name << ": frame '" << f << "'";
  }
}

TEST(OpTable, EveryRuleHasOpRowsOrSaysWhyNot) {
  for (const auto& rule : kRules) {
    bool has_ops = false;
    for (const OpEntry& op : kOps)
      has_ops = has_ops || op.rule == rule.rule || op.at_runtime == rule.rule || op.in_condition == rule.rule;
    bool says_why = false;
    for (const auto& w : nosync::rules::kRulesWithoutOps)
      if (w.rule == rule.rule) {
        says_why = true;
        EXPECT_FALSE(w.why.empty()) << rule.id;
      }
    EXPECT_NE(has_ops, says_why) << rule.id << (has_ops ? ": has op rows and a reason for having none"
                                                         : ": has no op row and no NOSYNC_RULE_WITHOUT_OPS");
  }
}

TEST(OpTable, EveryStaticRuleHasAFixture) {
  for (const auto& rule : kRules) {
    if (!rule.is_static()) continue;
    EXPECT_FALSE(fixtures_of(rule.rule).empty())
        << rule.id << " has no fixture " << (kFixtures / (std::string(rule.id.substr(7)) + ".cpp"));
  }
}

TEST(OpTable, EveryOpTheLinterSeesIsCalledInAFixtureOfItsRule) {
  for (const OpEntry& op : kOps) {
    if (!op.is_static()) continue;
    std::string text;
    for (RuleId r : {op.rule, op.in_condition})
      for (const fs::path& f : fixtures_of(r)) text += read_file(f);
    bool called = false;
    for (std::string_view list : {op.methods, op.functions})
      for (const std::string& s : words(list)) called = called || called_in(text, s);
    EXPECT_TRUE(called) << op.name << ": no fixture of " << nosync::rules::get(op.rule).id
                        << " calls any of '" << op.methods << "' / '" << op.functions << "'";
  }
}

TEST(OpGroups, GroupsAreNonEmptyAndLookupsWork) {
  for (const auto& g : nosync::rules::kOpGroups) {
    EXPECT_FALSE(g.names.empty());
    EXPECT_FALSE(g.doc.empty());
  }
  EXPECT_TRUE(nosync::rules::in_group(nosync::rules::OpGroup::PlacingFactory, "zeros"));
  EXPECT_FALSE(nosync::rules::in_group(nosync::rules::OpGroup::PlacingFactory, "zero"));
  EXPECT_TRUE(nosync::rules::has_word("a  bc d", "bc"));
  EXPECT_FALSE(nosync::rules::has_word("a  bc d", "b"));
}
