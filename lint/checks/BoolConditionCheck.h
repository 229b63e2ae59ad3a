#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-bool-condition: a value read from a tensor decides host control
/// flow. Flags `item()` (any type), `is_nonzero()`, `equal()` and
/// `allclose()` (methods and at::/torch:: functions) when they sit in the
/// condition of if/while/for/do/switch or ?:, under && / || / !, or in
/// assert-like macros (assert, TORCH_CHECK, AT_ASSERT expand to those).
/// The same calls outside a condition belong to nosync-item (item) and
/// nosync-hidden-sync (the others).
class BoolConditionCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::BoolCondition;

  BoolConditionCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

}  // namespace clang::tidy::nosync
