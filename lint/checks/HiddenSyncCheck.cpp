#include "HiddenSyncCheck.h"

#include "utils/TorchMatchers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "nosync/kernel_names.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace clang::ast_matchers;

namespace clang::tidy::nosync {
namespace {

namespace kn = ::nosync::rules::kernel_names;

// What to use instead, per synchronizing operation.
const llvm::StringMap<std::string> &adviceTable() {
  static const llvm::StringMap<std::string> Table = {
      {"clip_grad_norm_", std::string(kn::kClipGradNorm) +
                              "(parameters, max_norm) clips without a sync and returns the total norm as "
                              "a device tensor (include " +
                              std::string(kn::kHeader) + "); read the norm late if you log it"},
      {"nonzero", "keep the mask instead of the indices (torch::where(mask, x, 0), masked_fill_), or "
                  "use nonzero_static(size) when an upper bound is known"},
      {"argwhere", "keep the mask instead of the indices (torch::where(mask, x, 0)), or use "
                   "nonzero_static(size) when an upper bound is known"},
      {"where", "the one-argument where is nonzero(); use the three-argument torch::where(mask, a, b)"},
      {"masked_select", "use torch::where(mask, x, torch::zeros_like(x)) (fixed shape) and reduce over "
                        "it, instead of selecting a data-dependent number of elements"},
      {"unique", "the output size depends on the data; if you only need counts or a bound, use "
                 "torch::bincount with minlength or a fixed-size scatter on the device"},
      {"unique_consecutive", "the output size depends on the data; keep a fixed-size representation on "
                             "the device (bincount with minlength, scatter_reduce)"},
      {"repeat_interleave", "pass output_size (the sum of repeats, if the host knows it) so the output "
                            "shape does not have to be read back"},
      {"index", "boolean-mask indexing reads the mask's true count on the host; use torch::where(mask, "
                "x, 0) or masked_fill_ to keep a fixed shape"},
      {"operator<<", "printing copies the tensor to the CPU; print its sizes()/dtype(), or read a "
                     "scalar late (outside the hot loop)"},
      {"linalg", "use the _ex variant (e.g. torch::linalg_inv_ex(A)), which returns an info tensor "
                 "instead of checking it on the host; check info on the device or read it late"},
      {"equal", "compare on the device: (a == b).all() stays a tensor; read it late, or use "
                "at::_assert_async for checks"},
      {"allclose", "compare on the device: torch::isclose(a, b).all() stays a tensor; read it late, or "
                   "use at::_assert_async for checks"},
      {"is_nonzero", "keep the flag on the device (a bool tensor) and read it late"},
  };
  return Table;
}

// linalg functions whose host-side error check has a sync-free _ex twin.
constexpr llvm::StringRef kCheckedLinalg[] = {
    "linalg_inv", "linalg_cholesky", "linalg_solve", "linalg_lu_factor", "linalg_ldl_factor",
    "inverse", "cholesky"};

bool isBoolMaskExpr(const Expr *E, int Depth = 0);

// A boolean tensor built from a comparison or a predicate: x > 0, x.eq(y),
// torch::isnan(x), ~m, a & b, and locals initialized that way.
bool isBoolMaskExpr(const Expr *E, int Depth) {
  if (!E || Depth > 6)
    return false;
  E = E->IgnoreUnlessSpelledInSource()->IgnoreParens();
  if (!isTensorExpr(E))
    return false;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    switch (Op->getOperator()) {
    case OO_Less: case OO_Greater: case OO_LessEqual: case OO_GreaterEqual: case OO_EqualEqual:
    case OO_ExclaimEqual: case OO_Exclaim:
      return true;
    case OO_Tilde: case OO_Amp: case OO_Pipe:
      return isBoolMaskExpr(Op->getArg(0), Depth + 1);
    default:
      return false;
    }
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F || !F->getDeclName().isIdentifier())
      return false;
    return llvm::is_contained({"gt", "lt", "ge", "le", "eq", "ne", "greater", "less", "isnan", "isinf",
                               "isfinite", "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
                               "logical_xor", "signbit", "isclose"},
                              F->getName());
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && V->getInit() && !isa<ParmVarDecl>(V))
      return isBoolMaskExpr(V->getInit(), Depth + 1);
  return false;
}

// Any boolean mask among the indices of x.index({...}) / x[mask].
bool hasBoolMaskIndex(const Stmt *S) {
  if (!S)
    return false;
  if (const auto *E = dyn_cast<Expr>(S); E && isBoolMaskExpr(E))
    return true;
  return llvm::any_of(S->children(), hasBoolMaskIndex);
}

const Expr *argumentFor(const CallExpr *Call, StringRef ParamName) {
  const FunctionDecl *F = Call->getDirectCallee();
  for (unsigned I = 0, N = std::min(F->getNumParams(), Call->getNumArgs()); I < N; ++I)
    if (F->getParamDecl(I)->getName() == ParamName)
      return Call->getArg(I);
  return nullptr;
}

}  // namespace

HiddenSyncCheck::HiddenSyncCheck(StringRef Name, ClangTidyContext *Context)
    : RuleCheck(Name, Context, ::nosync::rules::RuleId::HiddenSync) {}

void HiddenSyncCheck::registerMatchers(MatchFinder *Finder) {
  using namespace torch_matchers;
  static const llvm::StringRef Ops[] = {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive",
                                        "_unique", "_unique2", "unique_dim", "repeat_interleave", "equal", "allclose",
                                        "is_nonzero", "where"};
  Finder->addMatcher(callExpr(anyOf(tensorMethodCall(Ops), torchFunctionCall(Ops))).bind("op"), this);
  Finder->addMatcher(callExpr(anyOf(torchFunctionCall(kCheckedLinalg),
                                    torchFunctionCall({"::torch::linalg::inv", "::torch::linalg::cholesky",
                                                       "::torch::linalg::solve", "::torch::linalg::lu_factor",
                                                       "::torch::linalg::ldl_factor"})))
                         .bind("linalg"),
                     this);
  Finder->addMatcher(callExpr(torchFunctionCall({"::torch::nn::utils::clip_grad_norm_"})).bind("clip"), this);
  Finder->addMatcher(callExpr(tensorMethodCall({"index", "index_put_"})).bind("index"), this);
  Finder->addMatcher(cxxOperatorCallExpr(hasOverloadedOperatorName("[]"), hasArgument(0, tensorExpr()),
                                         hasArgument(1, tensorExpr()))
                         .bind("subscript"),
                     this);
  Finder->addMatcher(cxxOperatorCallExpr(hasOverloadedOperatorName("<<"), hasArgument(1, tensorExpr()),
                                         callee(functionDecl(hasAnyName("::at::operator<<", "::c10::operator<<"))))
                         .bind("print"),
                     this);
}

void HiddenSyncCheck::check(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const auto &Nodes = Result.Nodes;
  const CallExpr *Call = nullptr;
  std::string Key;
  if ((Call = Nodes.getNodeAs<CallExpr>("op"))) {
    Key = Call->getDirectCallee()->getName().str();
    if (Key == "_unique" || Key == "_unique2" || Key == "unique_dim")
      Key = "unique";
    // Conditions belong to nosync-bool-condition.
    if ((Key == "equal" || Key == "allclose" || Key == "is_nonzero") && isInControlFlowCondition(Call, Ctx))
      return;
    // where(cond, a, b) is fine; only the one-argument form syncs.
    if (Key == "where" && Call->getNumArgs() + (receiverOf(Call) ? 1 : 0) != 1)
      return;
    if (Key == "repeat_interleave") {
      const Expr *Repeats = receiverOf(Call) && !argumentFor(Call, "repeats") ? receiverOf(Call)
                                                                             : argumentFor(Call, "repeats");
      const Expr *OutputSize = argumentFor(Call, "output_size");
      if (!Repeats || !isTensorExpr(Repeats) || (OutputSize && !isa<CXXDefaultArgExpr>(OutputSize)))
        return;
    }
  } else if ((Call = Nodes.getNodeAs<CallExpr>("linalg"))) {
    Key = "linalg";
  } else if ((Call = Nodes.getNodeAs<CallExpr>("clip"))) {
    Key = "clip_grad_norm_";
  } else if ((Call = Nodes.getNodeAs<CallExpr>("index"))) {
    if (Call->getNumArgs() < 1 || !hasBoolMaskIndex(Call->getArg(0)))
      return;
    Key = "index";
  } else if ((Call = Nodes.getNodeAs<CallExpr>("subscript"))) {
    if (!isBoolMaskExpr(Call->getArg(1)))
      return;
    Key = "index";
  } else if ((Call = Nodes.getNodeAs<CallExpr>("print"))) {
    Key = "operator<<";
  }

  // Host tensors never sync. clip_grad_norm_ takes parameters, not a tensor
  // expression we can place, so it is always reported.
  if (Key != "clip_grad_norm_") {
    const Expr *Subject = receiverOf(Call);
    if (!Subject)
      for (const Expr *Arg : Call->arguments())
        if (isTensorExpr(Arg)) {
          Subject = Arg;
          break;
        }
    if (Subject && isProvablyOnCpu(Subject, Ctx))
      return;
  }

  Finding F;
  F.Site = Call;
  F.Loc = isa<CXXOperatorCallExpr>(Call) ? Call->getExprLoc() : callNameLoc(Call);
  const FunctionDecl *Callee = Call->getDirectCallee();
  F.What = Key == "index" ? "boolean-mask indexing"
           : Key == "operator<<"
               ? "printing a tensor"
               : "'" + (Callee->getDeclName().isIdentifier() ? Callee->getName().str() : Key) + "()'";
  F.Advice = adviceTable().lookup(Key);
  report(std::move(F), Ctx);
}

}  // namespace clang::tidy::nosync
