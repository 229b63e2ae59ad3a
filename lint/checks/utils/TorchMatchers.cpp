#include "utils/TorchMatchers.h"

#include "utils/AstHelpers.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

#include <string>
#include <vector>

namespace clang::tidy::nosync {
using namespace ast_matchers;

namespace {
// `Tensor& operator=(const Tensor&) &&`: called on a temporary (a view).
AST_MATCHER(CXXMethodDecl, isRvalueQualified) { return Node.getRefQualifier() == RQ_RValue; }
}  // namespace

namespace torch_matchers {

Matcher<Decl> tensorClass() {
  return cxxRecordDecl(hasAnyName("::at::Tensor", "::at::TensorBase"));
}

Matcher<QualType> tensorType() {
  auto Tensor = qualType(hasUnqualifiedDesugaredType(recordType(hasDeclaration(tensorClass()))));
  return qualType(anyOf(Tensor, referenceType(pointee(Tensor))));
}

Matcher<Expr> tensorExpr() { return expr(hasType(tensorType())); }

Matcher<Stmt> tensorMethodCall(llvm::ArrayRef<llvm::StringRef> Names) {
  return cxxMemberCallExpr(callee(cxxMethodDecl(hasAnyName(Names), ofClass(tensorClass()))));
}

Matcher<Stmt> tensorCopyAssignment(llvm::ArrayRef<llvm::StringRef> Names) {
  return cxxOperatorCallExpr(callee(cxxMethodDecl(hasAnyName(Names), ofClass(tensorClass()), isRvalueQualified(),
                                                  hasParameter(0, hasType(tensorType())))));
}

Matcher<Stmt> torchFunctionCall(llvm::ArrayRef<llvm::StringRef> Names) {
  // LibTorch re-exports ATen's functions into torch:: (using-declarations and
  // `using namespace at`), so a bare name means either namespace.
  std::vector<std::string> Qualified;
  for (llvm::StringRef N : Names) {
    if (N.starts_with("::")) {
      Qualified.push_back(N.str());
    } else {
      Qualified.push_back(("::at::" + N).str());
      Qualified.push_back(("::torch::" + N).str());
    }
  }
  std::vector<llvm::StringRef> Refs(Qualified.begin(), Qualified.end());
  return callExpr(callee(functionDecl(hasAnyName(llvm::ArrayRef<llvm::StringRef>(Refs)))));
}

Matcher<QualType> tensorContainerType() {
  // named_parameters().items(): a vector of OrderedDict<std::string, Tensor>::Item.
  auto DictItem = qualType(hasUnqualifiedDesugaredType(recordType(hasDeclaration(cxxRecordDecl(
      hasName("Item"), hasParent(classTemplateSpecializationDecl(
                           hasName("::torch::OrderedDict"), hasAnyTemplateArgument(refersToType(tensorType())))))))));
  auto Container = classTemplateSpecializationDecl(
      hasAnyName("::std::vector", "::std::deque", "::std::list", "::std::array",
                 "::c10::ArrayRef", "::c10::List", "::torch::OrderedDict"),
      hasAnyTemplateArgument(refersToType(anyOf(tensorType(), DictItem))));
  auto Plain = qualType(hasUnqualifiedDesugaredType(recordType(hasDeclaration(Container))));
  return qualType(anyOf(Plain, referenceType(pointee(Plain))));
}

}  // namespace torch_matchers

bool isTensorType(QualType T) {
  if (T.isNull())
    return false;
  std::string N = qualifiedTagName(T);
  return N == "at::Tensor" || N == "at::TensorBase";
}

bool isTensorExpr(const Expr *E) { return E && isTensorType(E->getType()); }

llvm::StringRef tensorMethodName(const Expr *E) {
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(E);
  if (!MC)
    return "";
  const CXXMethodDecl *M = MC->getMethodDecl();
  if (!M || !M->getDeclName().isIdentifier())
    return "";
  std::string Cls = M->getParent()->getQualifiedNameAsString();
  if (Cls != "at::Tensor" && Cls != "at::TensorBase")
    return "";
  return M->getName();
}

const Expr *receiverOf(const Expr *Call) {
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(Call);
  return MC ? stripImplicit(MC->getImplicitObjectArgument()) : nullptr;
}

}  // namespace clang::tidy::nosync
