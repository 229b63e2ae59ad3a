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
/// A container of tensors: std::vector<Tensor>, TensorList, c10::List, the
/// result of parameters()/buffers() on a torch::nn::Module, or the items of
/// named_parameters() (std::vector<OrderedDict<std::string, Tensor>::Item>).
Matcher<QualType> tensorContainerType();
/// `dst = src` of two tensors where `dst` is an rvalue (`x[i]`,
/// `x.select(0, i)`): at::Tensor's rvalue-qualified operator=, spelled by
/// one of `Names`, which copies `src` into the view. Assigning to a named
/// tensor (an lvalue) rebinds it and is not matched; nor is `x[i] = 1.0`.
Matcher<Stmt> tensorCopyAssignment(llvm::ArrayRef<llvm::StringRef> Names);
}  // namespace torch_matchers

bool isTensorType(QualType T);
bool isTensorExpr(const Expr *E);

/// The method name of a call on a tensor (`x.cpu()` -> "cpu"), or "" when
/// `E` is not a call of an at::Tensor/TensorBase method.
llvm::StringRef tensorMethodName(const Expr *E);

/// The object a member call is made on, without implicit casts and parens.
const Expr *receiverOf(const Expr *Call);

}  // namespace clang::tidy::nosync
