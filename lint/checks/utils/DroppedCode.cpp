#include "utils/DroppedCode.h"

#include "utils/ColdPath.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "clang/Lex/MacroInfo.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

namespace clang::tidy::nosync {
namespace {

struct Token {
  tok::TokenKind Kind;
  StringRef Text;  // identifiers and keywords: their spelling; else the punctuation
  SourceLocation Loc;
};

bool isIdent(const Token &T, StringRef Name = "") {
  return T.Kind == tok::raw_identifier && (Name.empty() || T.Text == Name);
}

// The raw tokens of [Begin, End) of one file, comments left out, and so are
// preprocessor directives and everything inside #if ... #endif: which branch
// the compiler took is not in the text (an inactive #ifdef looks dropped too).
// With `FollowConditionals` false, the text of #if groups is kept (the
// caller knows from the preprocessor which branches were skipped).
std::vector<Token> lexRange(SourceLocation Begin, SourceLocation End, const SourceManager &SM,
                            const LangOptions &LO, bool FollowConditionals = true) {
  std::vector<Token> Out;
  FileID File = SM.getFileID(Begin);
  bool Invalid = false;
  StringRef Buffer = SM.getBufferData(File, &Invalid);
  if (Invalid)
    return Out;
  unsigned From = SM.getFileOffset(Begin), To = SM.getFileOffset(End);
  Lexer Lex(SM.getLocForStartOfFile(File), LO, Buffer.begin(), Buffer.begin() + From, Buffer.end());
  unsigned DirectiveLine = 0;  // the line of the directive being skipped
  int Conditionals = 0;        // #if nesting
  clang::Token T;
  while (true) {
    Lex.LexFromRawLexer(T);
    if (T.is(tok::eof) || SM.getFileOffset(T.getLocation()) >= To)
      break;
    unsigned Line = SM.getSpellingLineNumber(T.getLocation());
    if (T.is(tok::hash) && T.isAtStartOfLine()) {
      DirectiveLine = Line;
      clang::Token Name;
      Lex.LexFromRawLexer(Name);
      StringRef Directive = Name.is(tok::raw_identifier) ? Name.getRawIdentifier() : "";
      if (Directive.starts_with("if"))
        ++Conditionals;
      else if (Directive == "endif" && Conditionals > 0)
        --Conditionals;
      else if ((Directive == "else" || Directive.starts_with("elif")) && Conditionals == 0)
        Conditionals = 1;  // the other branch of an #if opened before this text
      continue;
    }
    if (Line == DirectiveLine || (FollowConditionals && Conditionals > 0))
      continue;
    StringRef Text = T.is(tok::raw_identifier) ? T.getRawIdentifier()
                                               : StringRef(Buffer.data() + SM.getFileOffset(T.getLocation()),
                                                           T.getLength());
    Out.push_back({T.getKind(), Text, T.getLocation()});
  }
  return Out;
}

// Index of the token that closes the bracket opened at `Open`, or Tokens.size().
size_t matching(const std::vector<Token> &Tokens, size_t Open, tok::TokenKind L, tok::TokenKind R) {
  int Depth = 0;
  for (size_t I = Open; I < Tokens.size(); ++I) {
    if (Tokens[I].Kind == L)
      ++Depth;
    else if (Tokens[I].Kind == R && --Depth == 0)
      return I;
  }
  return Tokens.size();
}

// A statement of the dropped text whose body repeats or throttles what is in
// it: a `for` / `while` / `do` loop, or an `if` whose condition takes a
// remainder (`if (i % 50 == 0)`, throttled logging). Its body is the next
// `{...}` after its header, or the next statement when it has no braces.
// Also an `if` whose condition the build fixes false: its body never runs.
struct TextBlock {
  enum Kind { Loop, Throttle, DeadIf };
  SourceLocation At;       // the keyword
  Kind What = Loop;
  size_t HeaderEnd = 0;    // where its `(...)` header ends
};

// The value the build fixes for a condition read from text, by its name;
// none when the name is decided at run time.
using FixedValue = llvm::function_ref<std::optional<bool>(StringRef Name)>;

std::optional<bool> nothingFixed(StringRef) { return std::nullopt; }

// An object-like macro defined as one boolean constant: `false`, `true`,
// `0` or `1`.
std::optional<bool> constantMacro(StringRef Name, Preprocessor &PP) {
  const MacroInfo *MI = PP.getMacroInfo(PP.getIdentifierInfo(Name));
  if (!MI || !MI->isObjectLike() || MI->getNumTokens() != 1)
    return std::nullopt;
  const clang::Token &Body = MI->getReplacementToken(0);
  if (Body.isOneOf(tok::kw_false, tok::kw_true))
    return Body.is(tok::kw_true);
  if (!Body.is(tok::numeric_constant))
    return std::nullopt;
  llvm::SmallString<8> Buffer;
  StringRef Spelling = PP.getSpelling(Body, Buffer);
  return Spelling == "0" || Spelling == "1" ? std::optional<bool>(Spelling == "1") : std::nullopt;
}

// A macro defined as a boolean constant, or a const / constexpr variable of
// the file's scope initialized with one (`constexpr bool kDebug = false;`).
std::optional<bool> fixedValueOf(StringRef Name, ASTContext &Ctx, const PreprocessorFacts &PP) {
  if (PP.PP)
    if (std::optional<bool> Value = constantMacro(Name, *PP.PP))
      return Value;
  for (const NamedDecl *D : Ctx.getTranslationUnitDecl()->lookup(&Ctx.Idents.get(Name)))
    if (const auto *V = dyn_cast<VarDecl>(D))
      return constantValue(V);
  return std::nullopt;
}

// `if (DEBUG)`, `if (!kVerbose)`: a condition that is one name, negated or
// not, whose value the build fixes. Tokens (Open, Close) are the condition.
std::optional<bool> fixedCondition(const std::vector<Token> &Tokens, size_t Open, size_t Close, FixedValue Fixed) {
  bool Negated = false;
  size_t I = Open + 1;
  for (; I < Close && Tokens[I].Kind == tok::exclaim; ++I)
    Negated = !Negated;
  if (I + 1 != Close || !isIdent(Tokens[I]))
    return std::nullopt;
  std::optional<bool> Value = Fixed(Tokens[I].Text);
  return Value ? std::optional<bool>(*Value != Negated) : std::nullopt;
}

// The calls in one run of dropped tokens, each with the dropped loop,
// throttling `if` and never-taken `if` around it.
void collectCalls(const std::vector<Token> &Tokens, const Stmt *Container, std::vector<TextCall> &Out,
                  FixedValue Fixed) {
  std::vector<std::optional<TextBlock>> Braces;  // per open `{`: the block it is the body of
  std::optional<TextBlock> Pending;              // a block whose body has not begun
  std::vector<TextBlock> Braceless;              // blocks whose body is the current statement
  size_t ConditionOpen = 0, ConditionClose = 0;  // the `(...)` of the last if / while / switch
  auto HeaderEndAfter = [&](size_t I) {
    return I + 1 < Tokens.size() && Tokens[I + 1].Kind == tok::l_paren
               ? matching(Tokens, I + 1, tok::l_paren, tok::r_paren)
               : I;
  };
  for (size_t I = 0; I < Tokens.size(); ++I) {
    const Token &T = Tokens[I];
    if (Pending && I == Pending->HeaderEnd + 1 && T.Kind != tok::l_brace) {
      Braceless.push_back(*Pending);  // `for (...) stmt;`, `if (i % n == 0) stmt;`
      Pending.reset();
    }
    if (isIdent(T, "while") || isIdent(T, "if") || isIdent(T, "switch")) {
      ConditionOpen = I + 1;
      ConditionClose = HeaderEndAfter(I);
    }
    if (isIdent(T, "for") || isIdent(T, "while") || isIdent(T, "do")) {
      Pending = TextBlock{T.Loc, TextBlock::Loop, isIdent(T, "do") ? I : HeaderEndAfter(I)};
      continue;
    }
    if (isIdent(T, "if")) {
      size_t End = HeaderEndAfter(I);
      bool Remainder = std::any_of(Tokens.begin() + I, Tokens.begin() + std::min(End, Tokens.size()),
                                   [](const Token &H) { return H.Kind == tok::percent; });
      bool Dead = End > I && End < Tokens.size() && fixedCondition(Tokens, I + 1, End, Fixed) == false;
      Pending = Remainder ? std::optional<TextBlock>(TextBlock{T.Loc, TextBlock::Throttle, End})
                : Dead    ? std::optional<TextBlock>(TextBlock{T.Loc, TextBlock::DeadIf, End})
                          : std::nullopt;
      continue;
    }
    if (T.Kind == tok::l_brace) {
      bool Body = Pending && I > Pending->HeaderEnd;
      Braces.push_back(Body ? Pending : std::nullopt);
      if (Body)
        Pending.reset();
      continue;
    }
    if (T.Kind == tok::r_brace) {
      if (!Braces.empty())
        Braces.pop_back();
      continue;
    }
    // A `;` ends the braceless bodies, unless it is in a header still open
    // (`if (i % 2) for (int j = 0; j < n; ++j) x;`).
    if (T.Kind == tok::semi && !Braceless.empty() && !(Pending && I <= Pending->HeaderEnd) &&
        I > Braceless.back().HeaderEnd) {
      Braceless.clear();
      continue;
    }
    if (!isIdent(T) || I + 1 >= Tokens.size())
      continue;
    // name(  or  name<...>(
    size_t Paren = I + 1;
    if (Tokens[Paren].Kind == tok::less) {
      size_t Close = Paren;
      while (Close < Tokens.size() && Close < Paren + 8 && Tokens[Close].Kind != tok::greater)
        ++Close;
      Paren = Close + 1;
    }
    if (Paren >= Tokens.size() || Tokens[Paren].Kind != tok::l_paren)
      continue;
    TextCall Call;
    Call.NameLoc = T.Loc;
    Call.Name = T.Text.str();
    Call.InCondition = I > ConditionOpen && I < ConditionClose;
    // `acc.template item<float>()`: the member named after `template`.
    size_t Name = I >= 2 && isIdent(Tokens[I - 1], "template") ? I - 1 : I;
    Call.Member = Name > 0 && (Tokens[Name - 1].Kind == tok::period || Tokens[Name - 1].Kind == tok::arrow);
    if (Call.Member && Name >= 2 && Tokens[Name - 2].Kind == tok::r_paren) {
      // Back over the receiver's parentheses to the name before them.
      size_t Depth = 0, Q = Name - 2;
      for (; Q > 0; --Q) {
        Depth += Tokens[Q].Kind == tok::r_paren;
        Depth -= Tokens[Q].Kind == tok::l_paren;
        if (Depth == 0)
          break;
      }
      if (Depth == 0 && Q > 0 && isIdent(Tokens[Q - 1])) {
        Call.ReceiverCall = Tokens[Q - 1].Text.str();
        llvm::SmallVector<StringRef, 8> Args;
        for (size_t A = Q + 1; A + 2 < Name; ++A)
          Args.push_back(Tokens[A].Text);
        Call.ReceiverArgs = llvm::join(Args, " ");
      }
    }
    for (size_t Q = I; !Call.Member && Q >= 2 && Tokens[Q - 1].Kind == tok::coloncolon && isIdent(Tokens[Q - 2]);
         Q -= 2)
      Call.Qualifier = Call.Qualifier.empty() ? Tokens[Q - 2].Text.str()
                                              : Tokens[Q - 2].Text.str() + "::" + Call.Qualifier;
    size_t Close = matching(Tokens, Paren, tok::l_paren, tok::r_paren);
    llvm::SmallVector<StringRef, 8> Args;
    for (size_t A = Paren + 1; A < Close && A < Tokens.size(); ++A)
      Args.push_back(Tokens[A].Text);
    Call.Args = llvm::join(Args, " ");
    auto Around = [&](const TextBlock &B) {
      SourceLocation &Slot = B.What == TextBlock::Throttle ? Call.Scope.Throttle
                             : B.What == TextBlock::DeadIf ? Call.Scope.DeadIf
                                                           : Call.Scope.Loop;
      if (Slot.isInvalid())
        Slot = B.At;
    };
    for (auto It = Braceless.rbegin(); It != Braceless.rend(); ++It)
      if (I > It->HeaderEnd)
        Around(*It);
    for (auto It = Braces.rbegin(); It != Braces.rend(); ++It)
      if (*It)
        Around(**It);
    Call.Container = Container;
    Out.push_back(std::move(Call));
  }
}

// Every compound statement and control statement of a body, lambdas'
// included.
class CompoundFinder : public RecursiveASTVisitor<CompoundFinder> {
public:
  std::vector<const CompoundStmt *> Found;
  std::vector<const Stmt *> Control;
  bool VisitCompoundStmt(CompoundStmt *S) {
    Found.push_back(S);
    return true;
  }
  bool VisitStmt(Stmt *S) {
    if (isa<IfStmt, WhileStmt, SwitchStmt, ForStmt, CXXForRangeStmt, DoStmt>(S))
      Control.push_back(S);
    return true;
  }
};

// A statement Clang kept with an error inside: a declaration whose
// initializer did not type-check (`auto t = from_blob(mat.data, ..).to(dev)`
// with cv::Mat unknown), an expression or a return built around a recovery
// expression. What the error hides is not in the AST in a form the matchers
// know.
bool keptWithErrors(const Stmt *S) {
  if (const auto *E = dyn_cast<Expr>(S))
    return E->containsErrors();
  if (const auto *R = dyn_cast<ReturnStmt>(S))
    return R->getRetValue() && R->getRetValue()->containsErrors();
  if (const auto *D = dyn_cast<DeclStmt>(S))
    return llvm::any_of(D->decls(), [](const Decl *X) {
      const auto *V = dyn_cast<VarDecl>(X);
      return V && V->getInit() && V->getInit()->containsErrors();
    });
  return false;
}

// Where the calls that Clang resolved in a statement are named.
class ResolvedCallNames : public RecursiveASTVisitor<ResolvedCallNames> {
public:
  explicit ResolvedCallNames(const SourceManager &SM) : SM(SM) {}
  llvm::DenseSet<SourceLocation> Names;
  bool VisitCallExpr(CallExpr *C) {
    if (!C->getDirectCallee())
      return true;
    const Expr *Callee = C->getCallee()->IgnoreImplicit();
    if (const auto *M = dyn_cast<MemberExpr>(Callee))
      Names.insert(SM.getFileLoc(M->getMemberLoc()));
    else if (const auto *D = dyn_cast<DeclRefExpr>(Callee))
      Names.insert(SM.getFileLoc(D->getLocation()));
    return true;
  }

private:
  const SourceManager &SM;
};

// The text between the statements of `S` that is not `;`, what Clang parsed
// there and then dropped, and the statements it kept with errors.
void collectDropped(const CompoundStmt &S, ASTContext &Ctx, std::vector<TextCall> &Out, FixedValue Fixed) {
  const SourceManager &SM = Ctx.getSourceManager();
  const LangOptions &LO = Ctx.getLangOpts();
  SourceLocation Open = SM.getExpansionLoc(S.getLBracLoc()), Close = SM.getExpansionLoc(S.getRBracLoc());
  if (Open.isInvalid() || Close.isInvalid() || SM.getFileID(Open) != SM.getFileID(Close) ||
      SM.isInSystemHeader(Open))
    return;
  SourceLocation From = Open.getLocWithOffset(1);
  auto Gap = [&](SourceLocation To) {
    if (SM.getFileID(To) != SM.getFileID(From) || SM.getFileOffset(To) <= SM.getFileOffset(From))
      return;
    std::vector<Token> Tokens = lexRange(From, To, SM, LO);
    bool OnlySemis = llvm::all_of(Tokens, [](const Token &T) { return T.Kind == tok::semi; });
    if (!OnlySemis)
      collectCalls(Tokens, &S, Out, Fixed);
  };
  for (const Stmt *Child : S.body()) {
    CharSourceRange R = SM.getExpansionRange(Child->getSourceRange());
    if (R.getBegin().isInvalid() || R.getEnd().isInvalid())
      return;
    Gap(R.getBegin());
    From = Lexer::getLocForEndOfToken(R.getEnd(), 0, SM, LO);
    if (From.isInvalid())
      return;
    // Its calls the compiler did resolve may be reported by the matchers
    // too; RuleCheck keeps one finding per place.
    if (keptWithErrors(Child) && SM.getFileID(R.getBegin()) == SM.getFileID(From))
      collectCalls(lexRange(R.getBegin(), From, SM, LO), &S, Out, Fixed);
  }
  Gap(Close);
}

// The condition of a control statement and where its parenthesized header
// ends; none for a statement without one (a range-for, a do).
struct ControlHeader {
  const Expr *Cond = nullptr;
  SourceLocation RParen;
};
std::optional<ControlHeader> headerOf(const Stmt *S) {
  if (const auto *If = dyn_cast<IfStmt>(S))
    return ControlHeader{If->getCond(), If->getRParenLoc()};
  if (const auto *W = dyn_cast<WhileStmt>(S))
    return ControlHeader{W->getCond(), W->getRParenLoc()};
  if (const auto *Sw = dyn_cast<SwitchStmt>(S))
    return ControlHeader{Sw->getCond(), Sw->getRParenLoc()};
  if (const auto *F = dyn_cast<ForStmt>(S))
    return ControlHeader{F->getCond(), F->getRParenLoc()};
  return std::nullopt;
}

// The bodies of a control statement written without braces: `if (c) x;`,
// `else y;`, `for (...) z;`. They are not statements of a block, so
// collectDropped does not see them.
llvm::SmallVector<const Stmt *, 2> bracelessBodies(const Stmt *S) {
  llvm::SmallVector<const Stmt *, 2> Bodies;
  if (const auto *If = dyn_cast<IfStmt>(S))
    Bodies = {If->getThen(), If->getElse()};
  else if (const auto *W = dyn_cast<WhileStmt>(S))
    Bodies = {W->getBody()};
  else if (const auto *F = dyn_cast<ForStmt>(S))
    Bodies = {F->getBody()};
  else if (const auto *R = dyn_cast<CXXForRangeStmt>(S))
    Bodies = {R->getBody()};
  else if (const auto *D = dyn_cast<DoStmt>(S))
    Bodies = {D->getBody()};
  llvm::erase_if(Bodies, [](const Stmt *B) { return !B || isa<CompoundStmt>(B); });
  return Bodies;
}

// Calls of the text from `Begin` through the token at `Last`, when both are
// in one file outside system headers.
void collectRange(SourceLocation Begin, SourceLocation Last, const Stmt *Container, ASTContext &Ctx,
                  std::vector<TextCall> &Out, FixedValue Fixed) {
  const SourceManager &SM = Ctx.getSourceManager();
  Begin = SM.getExpansionLoc(Begin);
  Last = SM.getExpansionLoc(Last);
  if (Begin.isInvalid() || Last.isInvalid() || SM.getFileID(Begin) != SM.getFileID(Last) ||
      SM.isInSystemHeader(Begin))
    return;
  SourceLocation End = Lexer::getLocForEndOfToken(Last, 0, SM, Ctx.getLangOpts());
  if (End.isValid())
    collectCalls(lexRange(Begin, End, SM, Ctx.getLangOpts()), Container, Out, Fixed);
}

// What of a control statement's own text the compiler kept with an error:
// its header when the condition did not type-check (Clang keeps the
// statement with a recovery expression there, which the matchers do not see
// into), and each braceless body kept with one.
void collectControlWithErrors(const Stmt &S, ASTContext &Ctx, std::vector<TextCall> &Out, FixedValue Fixed) {
  if (std::optional<ControlHeader> H = headerOf(&S); H && H->Cond && H->Cond->containsErrors())
    collectRange(S.getBeginLoc(), H->RParen, H->Cond, Ctx, Out, Fixed);
  for (const Stmt *Body : bracelessBodies(&S))
    if (keptWithErrors(Body))
      collectRange(Body->getBeginLoc(), Body->getEndLoc(), Body, Ctx, Out, Fixed);
}

// The calls of a template's body that the compiler leaves unresolved until
// instantiation: members of an object whose type depends on a template
// parameter (`batch.data.to(device)`), members given a template parameter as
// template argument (`loss.template item<float_t>()`) and functions called
// with such an object (`torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0)`).
class DependentCallFinder : public RecursiveASTVisitor<DependentCallFinder> {
public:
  struct Unresolved {
    const CallExpr *Call;
    SourceLocation Name;
    bool Member;
  };
  std::vector<Unresolved> Found;
  bool VisitCallExpr(CallExpr *C) {
    const Expr *Callee = C->getCallee()->IgnoreParens();
    if (const auto *M = dyn_cast_or_null<CXXDependentScopeMemberExpr>(Callee))
      Found.push_back({C, M->getMemberLoc(), true});
    // `loss.template item<float_t>()`: a known object, but the template
    // argument waits for the template's own parameter.
    else if (const auto *U = dyn_cast_or_null<UnresolvedMemberExpr>(Callee))
      Found.push_back({C, U->getMemberLoc(), true});
    else if (const auto *L = dyn_cast_or_null<UnresolvedLookupExpr>(Callee))
      Found.push_back({C, L->getNameLoc(), false});
    return true;
  }
};

bool readsHostCopy(const CallExpr &Call, ASTContext &Ctx);

// The instantiations of `F` in this translation unit that have a body: of a
// function template, or of a member function of a class template.
std::vector<const FunctionDecl *> instantiationsOf(const FunctionDecl &F) {
  std::vector<const FunctionDecl *> Out;
  if (const FunctionTemplateDecl *T = F.getDescribedFunctionTemplate())
    for (const FunctionDecl *I : T->specializations())
      if (I->hasBody())
        Out.push_back(I);
  const auto *M = dyn_cast<CXXMethodDecl>(&F);
  const ClassTemplateDecl *Class = M ? M->getParent()->getDescribedClassTemplate() : nullptr;
  if (Class)
    for (const ClassTemplateSpecializationDecl *Spec : Class->specializations())
      for (const CXXMethodDecl *I : Spec->methods())
        if (I->getTemplateInstantiationPattern() == &F && I->hasBody())
          Out.push_back(I);
  return Out;
}

// ------------------------------------------------------------ whole functions

// Names that take a parenthesized header before a `{` but name no function.
bool isStatementKeyword(StringRef Name) {
  return llvm::is_contained({"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype",
                             "noexcept", "throw", "static_assert", "alignas", "requires", "do", "else", "new",
                             "delete", "operator", "__attribute__", "__declspec"},
                            Name);
}

// Index of the token that opens the bracket closed at `Close`, or npos.
size_t matchingBackward(const std::vector<Token> &Tokens, size_t Close, tok::TokenKind L, tok::TokenKind R) {
  int Depth = 0;
  for (size_t I = Close + 1; I-- > 0;) {
    if (Tokens[I].Kind == R)
      ++Depth;
    else if (Tokens[I].Kind == L && --Depth == 0)
      return I;
  }
  return StringRef::npos;
}

// The name of the function whose parameter list closes at `Close`: the
// identifier before its `(`, or npos.
size_t nameBeforeParameters(const std::vector<Token> &Tokens, size_t Close) {
  size_t Open = matchingBackward(Tokens, Close, tok::l_paren, tok::r_paren);
  if (Open == StringRef::npos || Open == 0 || !isIdent(Tokens[Open - 1]) || isStatementKeyword(Tokens[Open - 1].Text))
    return StringRef::npos;
  return Open - 1;
}

// The name of the function whose body opens at `Brace`, or npos: `) {`,
// `) const override {`, `) -> Tensor {`, and a constructor's `) : a_(x),
// b_{y} {`, whose name is the one before the parameter list.
size_t functionNameBefore(const std::vector<Token> &Tokens, size_t Brace) {
  size_t J = Brace;
  while (J > 0 && (isIdent(Tokens[J - 1], "const") || isIdent(Tokens[J - 1], "override") ||
                   isIdent(Tokens[J - 1], "final") || isIdent(Tokens[J - 1], "noexcept") ||
                   isIdent(Tokens[J - 1], "mutable") || Tokens[J - 1].Kind == tok::amp ||
                   Tokens[J - 1].Kind == tok::ampamp))
    --J;
  // `-> std::pair<Tensor, Tensor>`: back to the arrow after the parameters.
  for (size_t K = J; K-- > 0 && J - K < 24;) {
    tok::TokenKind Kind = Tokens[K].Kind;
    if (Kind == tok::semi || Kind == tok::l_brace || Kind == tok::r_brace || Kind == tok::r_paren)
      break;
    if (Kind == tok::arrow) {
      J = K;
      break;
    }
  }
  if (J == 0)
    return StringRef::npos;
  size_t Name = StringRef::npos;
  if (Tokens[J - 1].Kind == tok::r_paren) {
    Name = nameBeforeParameters(Tokens, J - 1);
  } else if (Tokens[J - 1].Kind == tok::r_brace) {
    // `total_{0.0f} {`: only a member initializer closes with a brace here.
    size_t Open = matchingBackward(Tokens, J - 1, tok::l_brace, tok::r_brace);
    if (Open != StringRef::npos && Open >= 2 && isIdent(Tokens[Open - 1]) &&
        (Tokens[Open - 2].Kind == tok::comma || Tokens[Open - 2].Kind == tok::colon))
      Name = Open - 1;
    else
      return StringRef::npos;
  }
  if (Name == StringRef::npos || Name == 0)
    return Name;
  if (Tokens[Name - 1].Kind != tok::comma && Tokens[Name - 1].Kind != tok::colon)
    return Name;
  // `public: Tracker(int steps) {` in a class body: an access label.
  if (Name >= 2 && (isIdent(Tokens[Name - 2], "public") || isIdent(Tokens[Name - 2], "private") ||
                    isIdent(Tokens[Name - 2], "protected")))
    return Name;
  // A member initializer: back over the others, balanced, to the `:` that
  // follows the constructor's parameters.
  for (size_t K = Name - 1; K > 0; --K) {
    tok::TokenKind Kind = Tokens[K].Kind;
    if (Kind == tok::colon && Tokens[K - 1].Kind == tok::r_paren)
      return nameBeforeParameters(Tokens, K - 1);
    if (Kind == tok::r_paren || Kind == tok::r_brace) {
      size_t Open = Kind == tok::r_paren ? matchingBackward(Tokens, K, tok::l_paren, tok::r_paren)
                                         : matchingBackward(Tokens, K, tok::l_brace, tok::r_brace);
      if (Open == StringRef::npos)
        return StringRef::npos;
      K = Open;
      continue;
    }
    if (Kind == tok::semi || Kind == tok::l_brace || Kind == tok::r_brace)
      return StringRef::npos;
  }
  return StringRef::npos;
}

// The tokens since the last `;`, `{`, `}` before `At`: the declaration `{`
// at `At` belongs to.
llvm::ArrayRef<Token> declarationBefore(const std::vector<Token> &Tokens, size_t At) {
  size_t Begin = At;
  while (Begin > 0 && Tokens[Begin - 1].Kind != tok::semi && Tokens[Begin - 1].Kind != tok::l_brace &&
         Tokens[Begin - 1].Kind != tok::r_brace)
    --Begin;
  return llvm::ArrayRef<Token>(Tokens).slice(Begin, At - Begin);
}

// A `{` whose contents are declarations, read through like the file itself:
// a namespace, an `extern "C"` block, a class body.
bool opensDeclarations(llvm::ArrayRef<Token> Declaration) {
  auto Has = [&](StringRef Word) { return llvm::any_of(Declaration, [&](const Token &T) { return isIdent(T, Word); }); };
  if (Has("namespace") || Has("extern"))
    return true;
  bool Class = Has("class") || Has("struct") || Has("union");
  bool Plain = llvm::none_of(Declaration, [](const Token &T) { return T.Kind == tok::l_paren || T.Kind == tok::equal; });
  return Class && Plain && !Has("enum");
}

// Where the function bodies the compiler kept open, as offsets in the main
// file: the declarations of the main file, through namespaces and classes.
void collectBodies(const DeclContext &DC, const SourceManager &SM, llvm::DenseSet<unsigned> &Out) {
  for (const Decl *D : DC.decls()) {
    if (!SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      continue;
    if (const auto *T = dyn_cast<FunctionTemplateDecl>(D))
      D = T->getTemplatedDecl();
    else if (const auto *T = dyn_cast<ClassTemplateDecl>(D))
      D = T->getTemplatedDecl();
    if (const auto *F = dyn_cast<FunctionDecl>(D); F && F->doesThisDeclarationHaveABody() && F->getBody())
      Out.insert(SM.getFileOffset(SM.getExpansionLoc(F->getBody()->getBeginLoc())));
    if (isa<NamespaceDecl, LinkageSpecDecl, CXXRecordDecl>(D))
      collectBodies(*cast<DeclContext>(D), SM, Out);
  }
}

}  // namespace

std::vector<DroppedFunction> droppedFunctions(ASTContext &Ctx, const PreprocessorFacts &PP) {
  std::vector<DroppedFunction> Out;
  if (!Ctx.getDiagnostics().hasErrorOccurred())
    return Out;
  llvm::ArrayRef<SourceRange> Skipped = PP.Skipped;
  auto Fixed = [&](StringRef Name) { return fixedValueOf(Name, Ctx, PP); };
  const SourceManager &SM = Ctx.getSourceManager();
  FileID Main = SM.getMainFileID();
  std::vector<Token> Tokens =
      lexRange(SM.getLocForStartOfFile(Main), SM.getLocForEndOfFile(Main), SM, Ctx.getLangOpts(), false);
  llvm::erase_if(Tokens, [&](const Token &T) {
    return llvm::any_of(Skipped, [&](SourceRange R) {
      return SM.getFileID(R.getBegin()) == Main && !SM.isBeforeInTranslationUnit(T.Loc, R.getBegin()) &&
             SM.isBeforeInTranslationUnit(T.Loc, R.getEnd());
    });
  });
  llvm::DenseSet<unsigned> Kept;
  collectBodies(*Ctx.getTranslationUnitDecl(), SM, Kept);

  // Braces that are neither a namespace nor a class body (an initializer,
  // an enum, a body the compiler kept) hide what is in them.
  std::vector<bool> Opaque;
  for (size_t I = 0; I < Tokens.size(); ++I) {
    if (Tokens[I].Kind == tok::r_brace) {
      if (!Opaque.empty())
        Opaque.pop_back();
      continue;
    }
    if (Tokens[I].Kind != tok::l_brace)
      continue;
    if (llvm::is_contained(Opaque, true)) {
      Opaque.push_back(true);
      continue;
    }
    size_t Name = functionNameBefore(Tokens, I);
    if (Name == StringRef::npos) {
      Opaque.push_back(!opensDeclarations(declarationBefore(Tokens, I)));
      continue;
    }
    size_t Close = matching(Tokens, I, tok::l_brace, tok::r_brace);
    if (!Kept.contains(SM.getFileOffset(Tokens[I].Loc))) {
      DroppedFunction F;
      bool Destructor = Name > 0 && Tokens[Name - 1].Kind == tok::tilde;
      F.Name = (Destructor ? "~" : "") + Tokens[Name].Text.str();
      size_t Qualifier = Name - (Destructor ? 1 : 0);
      if (Qualifier >= 2 && Tokens[Qualifier - 1].Kind == tok::coloncolon && isIdent(Tokens[Qualifier - 2]))
        F.Class = Tokens[Qualifier - 2].Text.str();
      std::vector<Token> Body(Tokens.begin() + I + 1, Tokens.begin() + std::min(Close, Tokens.size()));
      collectCalls(Body, nullptr, F.Calls, Fixed);
      if (!F.Calls.empty())
        Out.push_back(std::move(F));
    }
    I = Close;  // a function's body holds no other function of the file's scope
  }
  return Out;
}

std::vector<TextCall> dependentCalls(const FunctionDecl &F, ASTContext &Ctx) {
  std::vector<TextCall> Out;
  if (!F.isDependentContext() || !F.hasBody())
    return Out;
  const SourceManager &SM = Ctx.getSourceManager();
  // Where an instantiation resolved a call, the matchers saw it there, with
  // its types: the text is not read again.
  ResolvedCallNames Instantiated(SM);
  for (const FunctionDecl *I : instantiationsOf(F))
    Instantiated.TraverseStmt(I->getBody());
  DependentCallFinder Finder;
  Finder.TraverseStmt(F.getBody());
  for (const auto &[Call, NameLoc, Member] : Finder.Found) {
    // File locations: a call written in a macro's argument
    // (`AT_ASSERT(!std::isnan(loss.template item<float>()))`) is read where
    // it is written, not where the macro is.
    SourceLocation Begin = SM.getFileLoc(Call->getBeginLoc()), Last = SM.getFileLoc(Call->getEndLoc());
    SourceLocation Name = SM.getFileLoc(NameLoc);
    if (Begin.isInvalid() || SM.getFileID(Begin) != SM.getFileID(Last) || SM.isInSystemHeader(Begin))
      continue;
    SourceLocation End = Lexer::getLocForEndOfToken(Last, 0, SM, Ctx.getLangOpts());
    std::vector<TextCall> Calls;
    // The compiler kept these: a never-taken branch around them is in the
    // AST (ColdPath.h).
    collectCalls(lexRange(Begin, End, SM, Ctx.getLangOpts()), Call, Calls, nothingFixed);
    for (TextCall &C : Calls)
      if (C.NameLoc == Name && C.Member == Member && !Instantiated.Names.contains(Name)) {
        C.Dependent = true;
        C.OnHostCopy = Member && readsHostCopy(*Call, Ctx);
        Out.push_back(std::move(C));
      }
  }
  return Out;
}

std::vector<TextCall> droppedCalls(const FunctionDecl &F, ASTContext &Ctx, const PreprocessorFacts &PP) {
  std::vector<TextCall> Out;
  if (!Ctx.getDiagnostics().hasErrorOccurred() || !F.hasBody())
    return Out;
  auto Fixed = [&](StringRef Name) { return fixedValueOf(Name, Ctx, PP); };
  CompoundFinder Finder;
  Finder.TraverseStmt(F.getBody());
  for (const CompoundStmt *S : Finder.Found)
    collectDropped(*S, Ctx, Out, Fixed);
  for (const Stmt *S : Finder.Control)
    collectControlWithErrors(*S, Ctx, Out, Fixed);
  return Out;
}

namespace {

bool namesFunction(std::string_view Functions, const TextCall &Call) {
  return ::nosync::rules::any_word(Functions, [&](std::string_view Word) {
    StringRef W = StringRef(Word.data(), Word.size());
    W.consume_front("::");
    size_t Last = W.rfind("::");
    StringRef Name = Last == StringRef::npos ? W : W.substr(Last + 2);
    if (Name != Call.Name)
      return false;
    // A qualified table entry needs the call's own qualifier to end it:
    // torch::cuda::synchronize, not some other synchronize.
    return Last == StringRef::npos || (!Call.Qualifier.empty() && W.drop_back(Name.size() + 2).ends_with(Call.Qualifier));
  });
}

// `.to(...)` read from text: a download when it names the CPU, a blocking
// upload when it names a device, nothing when it converts a dtype.
std::optional<RuleId> directionOfTo(StringRef Args) {
  std::string Lower = Args.lower();
  StringRef L(Lower);
  // kCPU, "cpu", and a device named for it (`cpu`, `cpu_device`, `this->cpu`).
  llvm::SmallVector<StringRef, 8> Words;
  L.split(Words, ' ');
  bool NamesCpu = llvm::any_of(Words, [](StringRef W) {
    W = W.trim("\"");
    return W == "kcpu" || W == "cpu" || W.starts_with("cpu_") || W.ends_with("_cpu");
  });
  if (NamesCpu)
    return RuleId::DeviceToHost;
  bool NamesDevice = L.contains("device") || L.contains("cuda") || L.contains("gpu") || L.starts_with("dev");
  if (NamesDevice && !L.contains("true") && !L.contains("non_blocking"))
    return RuleId::PageableH2D;
  return std::nullopt;
}

// `torch::randint(0, n, {1}).item<int64_t>()`: a factory's result whose
// arguments name no device or options is a host tensor, and reading it
// syncs nothing (a random crop's offset in a dataset transform).
bool readsHostFactory(const TextCall &Call) {
  if (!inGroup(OpGroup::ConstantFactory, Call.ReceiverCall) && !inGroup(OpGroup::RandomFactory, Call.ReceiverCall))
    return false;
  std::string Lower = StringRef(Call.ReceiverArgs).lower();
  return !llvm::any_of(std::initializer_list<StringRef>{"dev", "cuda", "gpu", "opt"},
                       [&](StringRef W) { return StringRef(Lower).contains(W); });
}

// The object of a member call, resolved or not: `vir[0]` in
// `vir[0].template item<double>()`.
const Expr *objectOf(const CallExpr &Call) {
  const Expr *Callee = Call.getCallee()->IgnoreParens();
  if (const auto *M = dyn_cast<CXXDependentScopeMemberExpr>(Callee))
    return M->isImplicitAccess() ? nullptr : M->getBase();
  if (const auto *U = dyn_cast<UnresolvedMemberExpr>(Callee))
    return U->isImplicitAccess() ? nullptr : U->getBase();
  if (const auto *M = dyn_cast<MemberExpr>(Callee))
    return M->getBase();
  return nullptr;
}

// The name of a member call, resolved or not.
StringRef memberNameOf(const CallExpr &Call) {
  const Expr *Callee = Call.getCallee()->IgnoreParens();
  if (const auto *M = dyn_cast<CXXDependentScopeMemberExpr>(Callee))
    return M->getMember().isIdentifier() ? M->getMember().getAsIdentifierInfo()->getName() : "";
  if (const auto *U = dyn_cast<UnresolvedMemberExpr>(Callee))
    return U->getName().isIdentifier() ? U->getName().getAsIdentifierInfo()->getName() : "";
  if (const auto *M = dyn_cast<MemberExpr>(Callee))
    return M->getMemberDecl()->getDeclName().isIdentifier() ? M->getMemberDecl()->getName() : "";
  return "";
}

// The local an object is read from, through subscripts: `vir` in
// `vir[0][1][1]`.
const VarDecl *localUnder(const Expr *E) {
  while (E) {
    E = E->IgnoreParenImpCasts();
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      const auto *V = dyn_cast<VarDecl>(Ref->getDecl());
      return V && V->isLocalVarDecl() ? V : nullptr;
    }
    if (const auto *A = dyn_cast<ArraySubscriptExpr>(E))
      E = A->getBase();
    else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E); Op && Op->getOperator() == OO_Subscript)
      E = Op->getArg(0);
    else
      return nullptr;
  }
  return nullptr;
}

// `x.cpu()`, `x.to(torch::kCPU)`, `x.to("cpu")`: a copy to the host, whether
// or not the compiler resolved it.
bool isHostCopyCall(const Expr *E, ASTContext &Ctx) {
  const auto *Call = dyn_cast_or_null<CallExpr>(E ? E->IgnoreImplicit()->IgnoreParens() : nullptr);
  if (!Call)
    return false;
  StringRef Name = memberNameOf(*Call);
  if (Name == "cpu")
    return true;
  if (Name != "to" || Call->getNumArgs() == 0)
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  CharSourceRange Args = CharSourceRange::getTokenRange(SM.getFileLoc(Call->getArg(0)->getBeginLoc()),
                                                        SM.getFileLoc(Call->getArg(Call->getNumArgs() - 1)->getEndLoc()));
  std::vector<Token> Tokens = lexRange(Args.getBegin(), Lexer::getLocForEndOfToken(Args.getEnd(), 0, SM,
                                                                                    Ctx.getLangOpts()),
                                       SM, Ctx.getLangOpts());
  llvm::SmallVector<StringRef, 8> Words;
  for (const Token &T : Tokens)
    Words.push_back(T.Text);
  return directionOfTo(llvm::join(Words, " ")) == RuleId::DeviceToHost;
}

// Whether `S` assigns to `V` anywhere.
bool assigns(const Stmt *S, const VarDecl *V) {
  if (!S)
    return false;
  auto IsV = [V](const Expr *E) {
    const auto *Ref = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    return Ref && Ref->getDecl() == V;
  };
  if (const auto *B = dyn_cast<BinaryOperator>(S); B && B->isAssignmentOp() && IsV(B->getLHS()))
    return true;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S); Op && Op->isAssignmentOp() && IsV(Op->getArg(0)))
    return true;
  return llvm::any_of(S->children(), [V](const Stmt *C) { return assigns(C, V); });
}

bool readsHostCopy(const CallExpr &Call, ASTContext &Ctx) {
  const VarDecl *V = localUnder(objectOf(Call));
  if (!V || !isHostCopyCall(V->getInit(), Ctx))
    return false;
  const auto *Fn = dyn_cast<FunctionDecl>(V->getDeclContext());
  return Fn && !assigns(Fn->getBody(), V);
}

}  // namespace

std::optional<TextOp> opOfTextCall(const TextCall &Call) {
  if (Call.Member && readsHostFactory(Call) && Call.Name != "cuda" && Call.Name != "to")
    return std::nullopt;
  for (const OpEntry &E : ::nosync::rules::kOps) {
    if (E.form == OpForm::Call) {
      // `pose.inverse()` is as often Eigen's or Sophus's as a tensor's: read
      // from text, where the receiver has no type, only the functions count.
      if (E.op == Op::Linalg && Call.Member)
        continue;
      bool Named = Call.Member ? ::nosync::rules::has_word(E.methods, Call.Name) : namesFunction(E.functions, Call);
      if (Named)
        return TextOp{&E, E.rule};
    } else if (E.form == OpForm::Copy && Call.Member && ::nosync::rules::has_word(E.methods, Call.Name)) {
      // ones_like(t).cuda(): made where `t` is (see `.to` below).
      if (E.op == Op::Cuda && StringRef(Call.ReceiverCall).ends_with("_like"))
        return std::nullopt;
      if (E.op == Op::Cpu || E.op == Op::Cuda)
        return TextOp{&E, E.rule};
      if (E.op == Op::To) {
        std::optional<RuleId> Rule = directionOfTo(Call.Args);
        // ones_like(t).to(device): made where `t` is, which the text does not
        // say; in training code `t` is a model output and the copy a no-op.
        if (Rule == RuleId::PageableH2D && StringRef(Call.ReceiverCall).ends_with("_like"))
          return std::nullopt;
        if (Rule)
          return TextOp{&E, *Rule};
      }
    }
  }
  return std::nullopt;
}

}  // namespace clang::tidy::nosync
