#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-launch-loop: a loop over a list of tensors that launches tensor
/// ops per element. Loops are range-for over parameters(),
/// named_parameters(), buffers(), std::vector<Tensor>, TensorList or
/// c10::List<Tensor>, and index for-loops that subscript such a container
/// with their induction variable. The body must launch kernels: reductions (sum, norm), in-place
/// scaling/clamping, hand-written optimizer updates. Not flagged: bodies that
/// only read metadata (numel, sizes, defined), set flags (requires_grad_),
/// call torch::nn::init, or loops that run once (constructors, setup
/// functions, main() outside its loops).
class LaunchLoopCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::LaunchLoop;

  LaunchLoopCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

}  // namespace clang::tidy::nosync
