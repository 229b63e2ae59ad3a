#pragma once

#include "utils/RuleCheck.h"

namespace clang::tidy::nosync {

/// nosync-item: reading a tensor element on the host. Flags `t.item()`,
/// `t.item<T>()`, `t.template item<T>()`, `.item().toFloat()` and friends,
/// and `.cpu().data_ptr<T>()[i]` / `.cpu().data<T>()[i]`.
///
/// Not flagged here: reads that decide control flow (nosync-bool-condition
/// owns those), and tensors provably on the CPU. `.item().toX()` gets the
/// behaviour-preserving fix `.item<X>()`.
class ItemCheck : public RuleCheck {
public:
  /// The catalog entry this check reports (and is registered) under.
  static constexpr ::nosync::rules::RuleId Id = ::nosync::rules::RuleId::Item;

  ItemCheck(StringRef Name, ClangTidyContext *Context);
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkItemCall(const CXXMemberCallExpr *Call, ASTContext &Ctx);
  void checkHostElementRead(const CXXMemberCallExpr *CpuCall, ASTContext &Ctx);
};

}  // namespace clang::tidy::nosync
