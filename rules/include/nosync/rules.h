// nosync::rules — the rule catalog as constexpr data, expanded from rules.def.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace nosync::rules {

enum class Severity { Note, Warning, Error };

// Which half of nosync can report a rule.
enum class Where { Static, Runtime, Both };

enum class RuleId : unsigned {
#define NOSYNC_RULE(Name, Id, Sev, Wh, Summary, Sig, Fix) Name,
#include "nosync/rules.def"
};

struct Rule {
  RuleId rule;
  std::string_view id;
  Severity severity;
  Where where;
  std::string_view summary;
  std::string_view runtime_signature;
  std::string_view fix;

  constexpr bool is_static() const { return where != Where::Runtime; }
  constexpr bool is_runtime() const { return where != Where::Static; }
};

inline constexpr std::array kRules = {
#define NOSYNC_RULE(Name, Id, Sev, Wh, Summary, Sig, Fix) \
  Rule{RuleId::Name, Id, Severity::Sev, Where::Wh, Summary, Sig, Fix},
#include "nosync/rules.def"
};

inline constexpr std::size_t kRuleCount = kRules.size();

constexpr const Rule& get(RuleId r) { return kRules[static_cast<std::size_t>(r)]; }

// nullptr when no rule has this id.
constexpr const Rule* find(std::string_view id) {
  for (const Rule& r : kRules)
    if (r.id == id) return &r;
  return nullptr;
}

constexpr std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "warning";
}

constexpr std::string_view to_string(Where w) {
  switch (w) {
    case Where::Static: return "static";
    case Where::Runtime: return "runtime";
    case Where::Both: return "static+runtime";
  }
  return "static+runtime";
}

// Relative to the source tree; installed under share/nosync/rules/docs.
inline std::string_view doc_dir() { return "rules/docs"; }

}  // namespace nosync::rules
