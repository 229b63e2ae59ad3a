#include "utils/OpTable.h"

#include "utils/TorchMatchers.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"

namespace clang::tidy::nosync {
using namespace ast_matchers;

namespace {

// "at::nonzero" for the bare spelling "nonzero"; "::c10::Stream::synchronize"
// for a qualified one.
bool spells(llvm::StringRef Spelling, llvm::StringRef Qualified) {
  if (Spelling.consume_front("::"))
    return Spelling == Qualified;
  return (Qualified.consume_front("at::") || Qualified.consume_front("torch::")) && Qualified == Spelling;
}

}  // namespace

std::vector<llvm::StringRef> wordsOf(std::string_view List) {
  std::vector<llvm::StringRef> Out;
  ::nosync::rules::any_word(List, [&Out](std::string_view W) {
    Out.emplace_back(W.data(), W.size());
    return false;
  });
  return Out;
}

internal::Matcher<Stmt> opCall(OpFilter Which) {
  std::vector<llvm::StringRef> Methods, Functions;
  for (const OpEntry &E : ::nosync::rules::kOps) {
    if (!Which(E))
      continue;
    for (llvm::StringRef W : wordsOf(E.methods))
      Methods.push_back(W);
    for (llvm::StringRef W : wordsOf(E.functions))
      Functions.push_back(W);
  }
  if (Methods.empty() && Functions.empty())
    return stmt(unless(anything()));
  if (Functions.empty())
    return torch_matchers::tensorMethodCall(Methods);
  if (Methods.empty())
    return torch_matchers::torchFunctionCall(Functions);
  return stmt(anyOf(torch_matchers::tensorMethodCall(Methods), torch_matchers::torchFunctionCall(Functions)));
}

internal::Matcher<Stmt> opCall(std::initializer_list<Op> Ops) {
  return opCall([Ops](const OpEntry &E) { return llvm::is_contained(Ops, E.op); });
}

const OpEntry *opOfCall(const CallExpr *Call, OpFilter Which) {
  const FunctionDecl *F = Call ? Call->getDirectCallee() : nullptr;
  if (!F)
    return nullptr;
  llvm::StringRef Method = tensorMethodName(Call);
  std::string Qualified = F->getQualifiedNameAsString();
  for (const OpEntry &E : ::nosync::rules::kOps) {
    if (!Which(E))
      continue;
    if (!Method.empty()) {
      if (::nosync::rules::has_word(E.methods, std::string_view(Method.data(), Method.size())))
        return &E;
      continue;
    }
    if (::nosync::rules::any_word(E.functions,
                                  [&](std::string_view W) { return spells({W.data(), W.size()}, Qualified); }))
      return &E;
  }
  return nullptr;
}

bool inGroup(OpGroup Group, llvm::StringRef Name) {
  return ::nosync::rules::in_group(Group, std::string_view(Name.data(), Name.size()));
}

}  // namespace clang::tidy::nosync
