#include "utils/AstHelpers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"

#include <cctype>

namespace clang::tidy::nosync {

const Expr *stripImplicit(const Expr *E) {
  return E ? E->IgnoreUnlessSpelledInSource()->IgnoreParens() : nullptr;
}

std::string qualifiedTagName(QualType T) {
  T = T.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  if (const TagDecl *D = T->getAsTagDecl())
    return D->getQualifiedNameAsString();
  return "";
}

SourceLocation callNameLoc(const CallExpr *Call) {
  if (const auto *M = dyn_cast<MemberExpr>(Call->getCallee()->IgnoreParenImpCasts()))
    return M->getMemberLoc();
  return Call->getExprLoc();
}

namespace {

// XCHECK, CHECK_EQ, DCHECK, RG_ASSERT, ENSURE, VERIFY, EXPECT_TRUE, REQUIRE:
// a macro named for checking a condition.
bool isAssertionMacro(llvm::StringRef Name) {
  llvm::SmallVector<std::string, 4> Words = identifierWords(Name);
  return llvm::any_of(Words, [](const std::string &W) {
    return W == "check" || W == "assert" || W == "ensure" || W == "verify" || W == "expect" || W == "require" ||
           W == "xcheck" || W == "dcheck";
  });
}

// Whether the statement `S`, written in the expansion of the macro that
// `Expansion` names, is a call of the macro's own, outside any branch that
// the expansion itself opens: TORCH_CHECK expands to an `if` whose branch
// holds the message (a failure path), XCHECK to a call.
bool outsideTheMacrosBranches(const Stmt *S, SourceLocation Expansion, ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  DynTypedNode Node = DynTypedNode::create(*S);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Node);
    const Stmt *P = Parents.empty() ? nullptr : Parents[0].get<Stmt>();
    if (!P || !P->getBeginLoc().isMacroID() || SM.getExpansionLoc(P->getBeginLoc()) != Expansion)
      return true;
    if (isa<IfStmt, SwitchStmt, WhileStmt, DoStmt, ForStmt, AbstractConditionalOperator>(P))
      return false;
    Node = Parents[0];
  }
}

}  // namespace

bool isInControlFlowCondition(const Expr *E, ASTContext &Ctx) {
  const Stmt *Child = E;
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(*Child);
    if (Parents.empty())
      return false;
    const DynTypedNode &P = Parents[0];
    if (const auto *If = P.get<IfStmt>())
      return Child == If->getCond() || Child == If->getConditionVariableDeclStmt();
    if (const auto *W = P.get<WhileStmt>())
      return Child == W->getCond() || Child == W->getConditionVariableDeclStmt();
    if (const auto *F = P.get<ForStmt>())
      return Child == F->getCond() || Child == F->getConditionVariableDeclStmt();
    if (const auto *D = P.get<DoStmt>())
      return Child == D->getCond();
    if (const auto *Sw = P.get<SwitchStmt>())
      return Child == Sw->getCond();
    if (const auto *C = P.get<AbstractConditionalOperator>()) {
      if (Child == C->getCond())
        return true;
    } else if (const auto *B = P.get<BinaryOperator>()) {
      if (B->isLogicalOp())
        return true;
    } else if (P.get<LambdaExpr>()) {
      return false;
    }
    // `if (auto stop = x.item<bool>())` goes through the condition variable.
    if (const auto *V = P.get<VarDecl>()) {
      DynTypedNodeList VP = Ctx.getParents(*V);
      if (VP.empty() || !VP[0].get<DeclStmt>())
        return false;
      Child = VP[0].get<DeclStmt>();
      continue;
    }
    const auto *PE = P.get<Expr>();
    if (!PE) {
      // A statement of its own: `XCHECK(!torch::isnan(x).any().item<bool>())`
      // expands to a call that aborts when its argument is false, so whether
      // the program goes on is the condition, as for assert(), whose
      // expansion is a conditional. (TORCH_CHECK's message is not: it sits in
      // the branch of the `if` the macro expands to.)
      SourceLocation Loc = E->getBeginLoc();
      return Loc.isMacroID() && isAssertionMacro(outermostMacroName(Loc, Ctx)) &&
             outsideTheMacrosBranches(Child, Ctx.getSourceManager().getExpansionLoc(Loc), Ctx);
    }
    Child = PE;
  }
}


const Stmt *statementRoot(const Expr *E, ASTContext &Ctx) { 
  const Expr *Root = E;
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(*Root);
    if (Parents.empty())
      return Root;
    const auto *P = Parents[0].get<Expr>();
    if (!P)
      return Root;
    Root = P;
  }
}

llvm::StringRef outermostMacroName(SourceLocation Loc, const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  if (!Loc.isMacroID())
    return "";
  SourceLocation Spelled = SM.getExpansionLoc(Loc);
  return Lexer::getSourceText(CharSourceRange::getTokenRange(Spelled), SM, Ctx.getLangOpts());
}

llvm::StringRef sourceText(const Expr *E, const ASTContext &Ctx) {
  if (!E)
    return "";
  return Lexer::getSourceText(CharSourceRange::getTokenRange(E->getSourceRange()),
                              Ctx.getSourceManager(), Ctx.getLangOpts());
}

llvm::SmallVector<std::string, 4> identifierWords(llvm::StringRef Name) {
  llvm::SmallVector<std::string, 4> Words;
  std::string Cur;
  for (size_t I = 0; I < Name.size(); ++I) {
    char C = Name[I];
    bool Boundary = C == '_' || (std::isupper(static_cast<unsigned char>(C)) && I > 0 &&
                                 std::islower(static_cast<unsigned char>(Name[I - 1])));
    if (Boundary && !Cur.empty())
      Words.push_back(std::move(Cur)), Cur.clear();
    if (C != '_')
      Cur.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(C))));
  }
  if (!Cur.empty())
    Words.push_back(Cur);
  return Words;
}

}  // namespace clang::tidy::nosync
