// nosync::rules — the catalog's fix-its (fixes.def) as constexpr data.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "nosync/kernel_names.h"
#include "nosync/rules.h"

namespace nosync::rules {

enum class FixId : unsigned {
#define NOSYNC_FIX(Name, Rule, Applied, LeftAsNote) Name,
#include "nosync/fixes.def"
};

struct FixEntry {
  FixId fix;
  std::string_view name;
  RuleId rule;
  std::string_view applied;       // the note on an applied fix-it
  std::string_view left_as_note;  // why the same idiom was not rewritten ("" when it always is)
};

inline constexpr std::array kFixes = {
#define NOSYNC_FIX(Name, Rule, Applied, LeftAsNote) FixEntry{FixId::Name, #Name, RuleId::Rule, Applied, LeftAsNote},
#include "nosync/fixes.def"
};

constexpr const FixEntry& get(FixId f) { return kFixes[static_cast<std::size_t>(f)]; }

}  // namespace nosync::rules
