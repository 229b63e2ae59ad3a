// The behaviour-keeping rewrite of a loop over a tensor list into one
// multi-tensor call (nosync-launch-loop's fix-it):
//   for (auto& p : params) acc += p.grad().pow(2).sum();
//     -> acc += nosync::kernels::l2_norm(nosync::kernels::grads_of(params)).pow(2);
//   for (auto& p : params) p.grad().mul_(coef);
//     -> at::_foreach_mul_(nosync::kernels::grads_of(params), coef);
// Only loops whose body is exactly one such statement (optionally after
// `if (!p.grad().defined()) continue;`, which grads_of does too), over every
// element of the list (range-for, named_parameters(), or an index loop from 0
// to size()), are rewritten.
#pragma once

#include "clang/AST/Expr.h"
#include "clang/Basic/Diagnostic.h"
#include "nosync/fixes.h"

#include <optional>

namespace clang::tidy::nosync {

struct ListLoopRewrite {
  FixItHint Edit;
  ::nosync::rules::FixId Fix;
  bool CallsKernels = false;
};

/// The rewrite of `Loop` (a range-for over `Range` or an index loop
/// subscripting `Range`), or nullopt when its body is not a recognised
/// reduction or update.
std::optional<ListLoopRewrite> rewriteListLoop(const Stmt *Loop, const Expr *Range, ASTContext &Ctx);

}  // namespace clang::tidy::nosync
