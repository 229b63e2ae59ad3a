#pragma once

#include "utils/Placement.h"
#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-pageable-h2d: host-to-device copies that block the host.
/// Flags `.to(device)` / `.cuda()` / `dst.copy_(src)` / `dst[i] = src` towards the GPU from
/// memory that is not pinned, or without non_blocking, and tensors built on
/// the CPU only to be moved (`torch::ones({..}).to(device)`), or built from
/// host values straight onto the GPU (`torch::tensor(v, opts.device(d))`), and
/// `cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice)` (the async form from
/// pageable memory the source shows, `v.data()`). For the
/// latter the fix (create it on the device) keeps behaviour and is applied
/// by --fix for deterministic factories.
///
/// Not flagged: moves to the CPU or dtype-only conversions, tensors already
/// on the GPU, `non_blocking=true` copies unless the source is provably
/// pageable, module->to().
class PageableH2DCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::PageableH2D;

  PageableH2DCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkMove(const CXXMemberCallExpr *Call, ASTContext &Ctx);
  void checkCopyFrom(const CXXMemberCallExpr *Copy, ASTContext &Ctx);
  void checkAssignment(const CXXOperatorCallExpr *Assign, ASTContext &Ctx);
  /// `torch::tensor(host_values, options)` whose options name a GPU device.
  void checkTensorFromHost(const CallExpr *Call, ASTContext &Ctx);
  /// `Src` written into `Dst` (copy_ or a view's operator=).
  void checkCopy(const Expr *Site, SourceLocation Loc, const Expr *Dst, const Expr *Src, NonBlocking Async,
                 std::string What, ASTContext &Ctx);
};

}  // namespace clang::tidy::nosync
