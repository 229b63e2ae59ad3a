#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-explicit-sync: explicit device, stream and event synchronizes:
/// torch::cuda::synchronize(), at::/c10::cuda::device_synchronize() and
/// stream_synchronize(), CUDAStream/CUDAEvent/c10::Stream/c10::Event
/// synchronize(), and the CUDA runtime/driver calls
/// (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize,
/// cuCtxSynchronize, ...). Like every rule, it warns in hot code and in
/// functions no code of the run calls (a serving engine's execute_model(), a
/// framework's per-step callback: their callers are elsewhere); throttled,
/// test and one-off code (timing after the loop, shutdown) is low severity.
class ExplicitSyncCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::ExplicitSync;

  ExplicitSyncCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

}  // namespace clang::tidy::nosync
