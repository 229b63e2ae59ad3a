// AST matchers and predicates for LibTorch types, shared by every nosync
// check. Everything is resolved through declarations and types (at::Tensor,
// c10::Device, torch::nn::Module), never through spelled names alone, so a
// user's own `item()` or `clip_grad_norm_` does not match.
#pragma once

#include "clang/AST/Expr.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace clang::tidy::nosync {

namespace torch_matchers {
using ast_matchers::internal::Matcher;

/// The record declaration of at::Tensor or at::TensorBase.
Matcher<Decl> tensorClass();
/// A type that is (or desugars to) at::Tensor / at::TensorBase, also
/// through references and const.
Matcher<QualType> tensorType();
/// An expression of tensor type.
Matcher<Expr> tensorExpr();
/// A call of a method of at::Tensor / at::TensorBase with one of `Names`.
Matcher<Stmt> tensorMethodCall(llvm::ArrayRef<llvm::StringRef> Names);
/// A call of a free function in namespace at or torch with one of `Names`
/// (qualified names such as "::at::nonzero" are also accepted).
Matcher<Stmt> torchFunctionCall(llvm::ArrayRef<llvm::StringRef> Names);
/// A container of tensors: std::vector<Tensor>, TensorList, c10::List or the
/// result of parameters()/buffers() on a torch::nn::Module.
Matcher<QualType> tensorContainerType();
}  // namespace torch_matchers

bool isTensorType(QualType T);
bool isTensorExpr(const Expr *E);

/// The method name of a call on a tensor (`x.cpu()` -> "cpu"), or "" when
/// `E` is not a call of an at::Tensor/TensorBase method.
llvm::StringRef tensorMethodName(const Expr *E);

/// The object a member call is made on, without implicit casts and parens.
const Expr *receiverOf(const Expr *Call);

/// Which device an expression names, when it can be known from the source.
/// NoDevice: options that provably leave placement alone (a dtype, a
/// default-constructed TensorOptions).
enum class DeviceKind { Unknown, NoDevice, Cpu, Cuda };

/// Classifies a device-like expression: c10::DeviceType (kCPU, kCUDA,
/// DeviceType::CPU), c10::Device constructions, string literals ("cpu",
/// "cuda:0"), TensorOptions chains with .device(...), local variables
/// through their initializer, and the implicit conversions LibTorch inserts
/// between them.
DeviceKind classifyDevice(const Expr *E, const ASTContext &Ctx);

/// True when the expression (under implicit conversions) is a c10::Device or
/// c10::DeviceType, i.e. it certainly names a device even if not which one.
bool isDeviceTyped(const Expr *E);

/// For a call of Tensor::to(...): the device it targets, or nullptr when the
/// overload only changes dtype (`.to(torch::kF32)`) or copies another
/// tensor's placement (`.to(other)`).
const Expr *deviceArgOfTo(const CXXMemberCallExpr *ToCall);

/// True when the value of `E` provably lives in host memory: results of
/// .cpu()/.to(kCPU), factories without a CUDA device (torch::zeros({..}),
/// from_blob of a host pointer), and locals initialized that way and never
/// reassigned in their function. Tensor ops that keep placement
/// (x.cpu().sum()) are looked through.
bool isProvablyOnCpu(const Expr *E, ASTContext &Ctx);

/// Where the value of a tensor expression provably lives, by the same
/// reasoning as isProvablyOnCpu; Unknown when the source does not say.
DeviceKind placementOf(const Expr *E, ASTContext &Ctx);

/// True for page-locked host tensors: .pin_memory() results and factories
/// given TensorOptions().pinned_memory(true), also through locals.
bool isPinned(const Expr *E, ASTContext &Ctx);

/// The `non_blocking` argument of a LibTorch call (to, copy_, ...): Yes/No
/// when it is a constant or left at its default, Unknown for a variable.
enum class NonBlocking { No, Yes, Unknown };
NonBlocking nonBlockingArg(const CallExpr *Call, const ASTContext &Ctx);

/// Where a diagnostic about a call points: the method name of a member call
/// (`x.cpu()` -> `cpu`), the start of any other call.
SourceLocation callNameLoc(const CallExpr *Call);

/// True when the expression's value decides host control flow: it sits in
/// the condition of if/while/for/do or ?:, is an operand of && / || / !, or
/// an argument of assert-like macros (which expand to one of those).
bool isInControlFlowCondition(const Expr *E, ASTContext &Ctx);

/// The outermost expression of the statement that contains `E`; two syncs
/// with the same statement root are "in one statement".
const Stmt *statementRoot(const Expr *E, ASTContext &Ctx);

/// The macro the user wrote at the outermost expansion of `Loc` (e.g.
/// "TEST_F" for a GoogleTest body, "TORCH_CHECK"); "" outside macros.
llvm::StringRef outermostMacroName(SourceLocation Loc, const ASTContext &Ctx);

/// Source text of `E` (for messages and duplicate detection); empty when it
/// comes from a macro body that has no spelling in the file.
llvm::StringRef sourceText(const Expr *E, const ASTContext &Ctx);

}  // namespace clang::tidy::nosync
