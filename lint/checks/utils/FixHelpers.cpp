#include "utils/FixHelpers.h"

#include "utils/AstHelpers.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>
#include <functional>

namespace clang::tidy::nosync {
namespace {

bool isLoop(const Stmt *S) { return isa<ForStmt, CXXForRangeStmt, WhileStmt, DoStmt>(S); }

// Walks up from `S` and calls `Visit` on every statement ancestor, up to the
// function or lambda body (exclusive), which it returns.
template <typename Fn> const Stmt *walkUp(const Stmt *S, ASTContext &Ctx, Fn Visit) {
  DynTypedNode Node = DynTypedNode::create(*S);
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(Node);
    if (Parents.empty())
      return nullptr;
    const DynTypedNode &P = Parents[0];
    if (const auto *F = P.get<FunctionDecl>())
      return F->getBody();
    if (const auto *L = P.get<LambdaExpr>())
      return L->getBody();
    if (const auto *PS = P.get<Stmt>())
      Visit(PS);
    Node = P;
  }
}

bool isAncestor(const Stmt *Maybe, const Stmt *S, ASTContext &Ctx) {
  bool Found = false;
  walkUp(S, Ctx, [&](const Stmt *P) { Found = Found || P == Maybe; });
  return Found;
}

// A local declared before `Loop` in a block that encloses it.
bool isLocalVisibleBefore(const VarDecl *V, const Stmt *Loop, ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  if (!SM.isBeforeInTranslationUnit(V->getEndLoc(), Loop->getBeginLoc()))
    return false;
  DynTypedNodeList Parents = Ctx.getParents(*V);
  const auto *DS = Parents.empty() ? nullptr : Parents[0].get<DeclStmt>();
  if (!DS)
    return false;
  DynTypedNodeList Up = Ctx.getParents(*DS);
  const auto *Block = Up.empty() ? nullptr : Up[0].get<CompoundStmt>();
  return Block && isAncestor(Block, Loop, Ctx);
}

bool isVisibleBefore(const ValueDecl *D, const Stmt *Loop, ASTContext &Ctx) {
  const auto *V = dyn_cast<VarDecl>(D);
  if (!V)
    return isa<FunctionDecl, EnumConstantDecl>(D);
  if (isa<ParmVarDecl>(V) || !V->isLocalVarDeclOrParm() || V->isStaticLocal())
    return true;
  return isLocalVisibleBefore(V, Loop, Ctx);
}

class HoistScan : public RecursiveASTVisitor<HoistScan> {
public:
  HoistScan(const Stmt *Loop, ASTContext &Ctx) : Loop(Loop), Ctx(Ctx) {}
  bool Ok = true;
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    Ok = Ok && isVisibleBefore(E->getDecl(), Loop, Ctx);
    return Ok;
  }

private:
  const Stmt *Loop;
  ASTContext &Ctx;
};

}  // namespace

const Stmt *outermostLoop(const Stmt *S, ASTContext &Ctx) {
  const Stmt *Outermost = nullptr;
  walkUp(S, Ctx, [&](const Stmt *P) {
    if (isLoop(P))
      Outermost = P;
  });
  return Outermost;
}

const Stmt *enclosingBody(const Stmt *S, ASTContext &Ctx) {
  return walkUp(S, Ctx, [](const Stmt *) {});
}

bool isHoistableBefore(const Expr *E, const Stmt *Loop, ASTContext &Ctx) {
  if (!E || !Loop)
    return false;
  HoistScan Scan(Loop, Ctx);
  Scan.TraverseStmt(const_cast<Expr *>(E));
  return Scan.Ok;
}

std::string deviceVariableBefore(const Stmt *Loop, ASTContext &Ctx) {
  const Stmt *Body = enclosingBody(Loop, Ctx);
  if (!Body)
    return "";
  DynTypedNodeList Parents = Ctx.getParents(*Body);
  const FunctionDecl *F = Parents.empty() ? nullptr : Parents[0].get<FunctionDecl>();
  auto IsDevice = [](const VarDecl *V) {
    return qualifiedTagName(V->getType()) == "c10::Device" && V->getDeclName().isIdentifier();
  };
  // The local declared last before the loop wins: the one the code uses.
  std::string Found;
  std::function<void(const Stmt *)> Scan = [&](const Stmt *S) {
    if (!S)
      return;
    if (const auto *DS = dyn_cast<DeclStmt>(S))
      for (const Decl *D : DS->decls())
        if (const auto *V = dyn_cast<VarDecl>(D); V && IsDevice(V) && isLocalVisibleBefore(V, Loop, Ctx))
          Found = V->getName().str();
    for (const Stmt *C : S->children())
      Scan(C);
  };
  if (F)
    for (const ParmVarDecl *P : F->parameters())
      if (IsDevice(P))
        Found = P->getName().str();
  Scan(Body);
  return Found;
}

std::string initializedVariable(const Expr *E, ASTContext &Ctx) {
  const auto *Root = dyn_cast<Expr>(statementRoot(E, Ctx));
  DynTypedNodeList Parents = Ctx.getParents(*Root);
  const auto *V = Parents.empty() ? nullptr : Parents[0].get<VarDecl>();
  if (!V || !V->getInit() || stripImplicit(V->getInit()) != stripImplicit(E) || !V->getDeclName().isIdentifier())
    return "";
  return V->getName().str();
}

std::string identifierFrom(llvm::StringRef Text) {
  std::string Out;
  for (char C : Text) {
    if (std::isalnum(static_cast<unsigned char>(C)) || C == '_')
      Out += C;
    else if (!Out.empty() && Out.back() != '_')
      Out += '_';
  }
  while (!Out.empty() && Out.back() == '_')
    Out.pop_back();
  if (Out.empty() || std::isdigit(static_cast<unsigned char>(Out[0])))
    Out = "v" + Out;
  return Out;
}

std::string freshName(llvm::StringRef Base, const Stmt *Body, ASTContext &Ctx) {
  // The identifiers spelled in the body (comments and strings do not count).
  llvm::StringSet<> Used;
  const SourceManager &SM = Ctx.getSourceManager();
  if (Body) {
    SourceLocation Begin = SM.getExpansionLoc(Body->getBeginLoc());
    unsigned End = SM.getFileOffset(SM.getExpansionLoc(Body->getEndLoc()));
    std::pair<FileID, unsigned> Pos = SM.getDecomposedLoc(Begin);
    StringRef Buffer = SM.getBufferData(Pos.first);
    Lexer Raw(SM.getLocForStartOfFile(Pos.first), Ctx.getLangOpts(), Buffer.begin(), Buffer.begin() + Pos.second,
              Buffer.end());
    Token T;
    while (!Raw.LexFromRawLexer(T) && SM.getFileOffset(T.getLocation()) <= End)
      if (T.is(tok::raw_identifier))
        Used.insert(T.getRawIdentifier());
  }
  std::string Name = Base.str();
  for (int I = 2; Used.contains(Name); ++I)
    Name = Base.str() + "_" + std::to_string(I);
  return Name;
}

std::optional<FixItHint> insertStatementBefore(const Stmt *S, llvm::StringRef Text, ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation Begin = S->getBeginLoc();
  if (Begin.isInvalid() || Begin.isMacroID())
    return std::nullopt;
  std::pair<FileID, unsigned> Pos = SM.getDecomposedLoc(Begin);
  StringRef Buffer = SM.getBufferData(Pos.first);
  size_t LineStart = Buffer.rfind('\n', Pos.second == 0 ? 0 : Pos.second - 1);
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  StringRef Indent = Buffer.slice(LineStart, Pos.second);
  if (!llvm::all_of(Indent, [](char C) { return C == ' ' || C == '\t'; }))
    return std::nullopt;
  SourceLocation At = Begin.getLocWithOffset(-static_cast<int>(Indent.size()));
  return FixItHint::CreateInsertion(At, (Indent + Text + "\n").str());
}

std::optional<CharSourceRange> fileRange(SourceRange R, const ASTContext &Ctx) {
  if (R.isInvalid() || R.getBegin().isMacroID() || R.getEnd().isMacroID())
    return std::nullopt;
  return CharSourceRange::getTokenRange(R);
}

}  // namespace clang::tidy::nosync
