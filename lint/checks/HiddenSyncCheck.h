#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-hidden-sync: LibTorch calls that synchronize inside, i.e. the rows
/// of the op table (rules/include/nosync/ops.def) whose rule is
/// nosync-hidden-sync: clip_grad_norm_ (the C++ version returns a double),
/// data-dependent output sizes (nonzero, masked_select, unique, bincount,
/// boolean-mask indexing, ...), host-side checks (multinomial, linalg without
/// `_ex`), printing a tensor. Each row's Form says which calls sync
/// (one-argument where, repeat_interleave without output_size, histc with
/// min == max), and its InCondition rule takes the call over in a condition
/// (equal / allclose / is_nonzero belong to nosync-bool-condition there).
/// All are resolved by declaration: a user's own clip_grad_norm_ or nonzero
/// is not matched. Calls whose tensors are provably on the CPU are skipped.
class HiddenSyncCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::HiddenSync;

  HiddenSyncCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

}  // namespace clang::tidy::nosync
