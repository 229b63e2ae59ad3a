#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-device-to-host: blocking copies of a tensor to the CPU.
/// Flags `.cpu()`, `.to(kCPU)`, `.to("cpu")`, `.to(at::Device(..cpu..))`,
/// `.to(options.device(kCPU))`, `dst.copy_(src)` into a CPU tensor, and
/// `cpu_dst[i] = src` of a tensor known to be on the GPU, and
/// `cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost)` (the async form into
/// pageable memory the source shows, `v.data()`).
/// Not flagged: dtype-only conversions (`.to(torch::kF32)`), module->to(),
/// copies that are already non_blocking, tensors provably on the CPU, and a
/// `.cpu()` that only feeds `data_ptr<T>()[i]` (nosync-item reports that).
class DeviceToHostCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::DeviceToHost;

  DeviceToHostCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkMove(const CXXMemberCallExpr *Call, ASTContext &Ctx);
  void checkCopyInto(const CXXMemberCallExpr *Copy, ASTContext &Ctx);
  void checkAssignment(const CXXOperatorCallExpr *Assign, ASTContext &Ctx);
};

}  // namespace clang::tidy::nosync
