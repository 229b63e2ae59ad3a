// nosync::rules — the op table (ops.def) and the name groups (op_groups.def)
// as constexpr data: which call belongs to which rule, spelled for the linter
// and for the sanitizer's frame matcher.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "nosync/kernel_names.h"
#include "nosync/rules.h"

namespace nosync::rules {

// Which calls of an op's spellings synchronize.
enum class OpForm {
  Call,             // every call
  OneArgument,      // only the one-argument form (where(cond))
  NoOutputSize,     // only with tensor repeats and no output_size (repeat_interleave)
  DefaultRange,     // only when min == max, the default (histc)
  BoolMaskIndex,    // only with a boolean mask among the indices
  TensorSubscript,  // x[t]: operator[] with a tensor subscript
  StreamInsertion,  // operator<< of a tensor into a stream
  Copy,             // a copy: the rule follows its direction; Rule is the fallback
  ElementRead,      // one element read through a host copy of a tensor
  NeverSyncs,       // listed only so its frame is not taken for another op's
  Module,           // Frames name a library file, not a function
};

enum class Op : unsigned {
#define NOSYNC_OP(Name, Display, Rule, InCond, AtRuntime, Priority, Form, Methods, Functions, Frames, Advice, Unseen) \
  Name,
#include "nosync/ops.def"
};

struct OpEntry {
  Op op;
  std::string_view name;     // the enumerator's name
  std::string_view display;  // runtime reports
  RuleId rule;
  RuleId in_condition;
  RuleId at_runtime;
  int priority;
  OpForm form;
  std::string_view methods;    // space-separated
  std::string_view functions;  // space-separated
  std::string_view frames;     // space-separated
  std::string_view advice;
  std::string_view unseen;

  constexpr bool is_static() const { return !methods.empty() || !functions.empty(); }
  constexpr bool is_runtime() const { return !frames.empty(); }
  // The rule the linter reports a call under, given where its value goes.
  constexpr RuleId static_rule(bool decides_control_flow) const {
    return decides_control_flow ? in_condition : rule;
  }
};

inline constexpr std::array kOps = {
#define NOSYNC_OP(Name, Display, Rule, InCond, AtRuntime, Priority, Form, Methods, Functions, Frames, Advice, Unseen) \
  OpEntry{Op::Name,          #Name,     Display, RuleId::Rule, RuleId::InCond, RuleId::AtRuntime, Priority,        \
          OpForm::Form,      Methods,   Functions, Frames,     Advice,         Unseen},
#include "nosync/ops.def"
};

constexpr const OpEntry& get(Op op) { return kOps[static_cast<std::size_t>(op)]; }

// Lower priority wins: `a` is the more specific explanation of a call both match.
constexpr bool outranks(Op a, Op b) { return get(a).priority < get(b).priority; }

// A rule that has no op row, and why (ops.def's NOSYNC_RULE_WITHOUT_OPS).
struct RuleWithoutOps {
  RuleId rule;
  std::string_view why;
};

inline constexpr RuleWithoutOps kRulesWithoutOps[] = {
#define NOSYNC_OP(...)
#define NOSYNC_RULE_WITHOUT_OPS(Rule, Why) RuleWithoutOps{RuleId::Rule, Why},
#include "nosync/ops.def"
};

// ---- space-separated name lists ----------------------------------------------

// Calls fn(word) for each word of `list`; stops early when fn returns true,
// and returns whether it did.
template <typename Fn>
constexpr bool any_word(std::string_view list, Fn fn) {
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && list[i] == ' ') ++i;
    std::size_t j = i;
    while (j < list.size() && list[j] != ' ') ++j;
    if (j > i && fn(list.substr(i, j - i))) return true;
    i = j;
  }
  return false;
}

constexpr bool has_word(std::string_view list, std::string_view word) {
  return any_word(list, [word](std::string_view w) { return w == word; });
}

// ---- name groups --------------------------------------------------------------

enum class OpGroup : unsigned {
#define NOSYNC_OP_GROUP(Name, Names, Doc) Name,
#include "nosync/op_groups.def"
};

struct OpGroupEntry {
  OpGroup group;
  std::string_view names;  // space-separated
  std::string_view doc;
};

inline constexpr std::array kOpGroups = {
#define NOSYNC_OP_GROUP(Name, Names, Doc) OpGroupEntry{OpGroup::Name, Names, Doc},
#include "nosync/op_groups.def"
};

constexpr std::string_view names_of(OpGroup g) { return kOpGroups[static_cast<std::size_t>(g)].names; }
constexpr bool in_group(OpGroup g, std::string_view name) { return has_word(names_of(g), name); }

}  // namespace nosync::rules
