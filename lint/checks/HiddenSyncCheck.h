#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-hidden-sync: LibTorch calls that synchronize inside:
///  - torch::nn::utils::clip_grad_norm_ (the C++ version returns a double);
///  - data-dependent output sizes: nonzero, argwhere, one-argument where,
///    masked_select, unique / unique_consecutive, repeat_interleave with
///    tensor repeats and no output_size, indexing with a boolean mask;
///  - printing a tensor (operator<< copies it to the CPU);
///  - linalg functions that check errors on the host where an `_ex`
///    variant exists (linalg_inv, linalg_cholesky, linalg_solve, ...);
///  - equal / allclose / is_nonzero outside a condition (in a condition,
///    nosync-bool-condition reports them).
/// All are resolved by declaration: a user's own clip_grad_norm_ or nonzero
/// is not matched. Calls whose tensors are provably on the CPU are skipped.
class HiddenSyncCheck : public RuleCheck {
public:
  HiddenSyncCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

}  // namespace clang::tidy::nosync
