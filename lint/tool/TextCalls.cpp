#include "TextCalls.h"

#include "TextTokens.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <map>
#include <optional>
#include <set>

namespace nosync::lint {
namespace {

// Names followed by `(` that are not calls of a function.
bool isKeyword(llvm::StringRef name) {
  static const llvm::StringSet<> keywords = {
      "if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "catch", "static_cast",
      "dynamic_cast", "reinterpret_cast", "const_cast", "noexcept", "throw", "new", "delete", "typeid",
      "static_assert", "defined", "alignas", "requires", "co_return", "co_await", "co_yield", "do", "else"};
  return keywords.contains(name);
}

bool isTestMacro(llvm::StringRef name) {
  static const llvm::StringSet<> macros = {"TEST",      "TEST_F",          "TEST_P",       "TYPED_TEST",
                                           "TEST_CASE", "TEST_CASE_METHOD", "SCENARIO",    "DOCTEST_TEST_CASE",
                                           "TEST_CASE_FIXTURE", "BENCHMARK",  "BENCHMARK_F"};
  return macros.contains(name);
}

// The index of the token that closes the bracket opened at `open`.
size_t closing(const std::vector<Tok>& t, size_t open, llvm::StringRef l, llvm::StringRef r) {
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    depth += is(t[i], l);
    if (is(t[i], r) && --depth == 0) return i;
  }
  return t.size();
}

// The arguments of the call whose `(` is at `open`: its top-level commas
// plus one, none for `()`. Commas inside template arguments count too (text
// cannot tell `<` from less-than), so a count may be high, never low.
unsigned argumentCount(const std::vector<Tok>& t, size_t open) {
  size_t close = closing(t, open, "(", ")");
  if (close == open + 1 || close >= t.size()) return 0;
  unsigned commas = 0;
  int depth = 0;
  for (size_t i = open + 1; i < close; ++i) {
    if (is(t[i], "(") || is(t[i], "{") || is(t[i], "[")) ++depth;
    if (is(t[i], ")") || is(t[i], "}") || is(t[i], "]")) --depth;
    commas += depth == 0 && is(t[i], ",");
  }
  return commas + 1;
}

// After the `)` of a parameter list at `close`: the `{` of the function body
// that follows (past cv/ref qualifiers, noexcept, a trailing return type and
// a constructor's initializer list), or nullopt for a declaration or a call.
std::optional<size_t> bodyAfter(const std::vector<Tok>& t, size_t close) {
  bool initList = false;
  for (size_t i = close + 1; i < t.size(); ++i) {
    const Tok& k = t[i];
    if (is(k, "{")) {
      // `: member_{value}` inside an initializer list is not the body.
      if (initList && i > 0 && t[i - 1].kind == Tok::Ident && !is(t[i - 1], "override") &&
          !is(t[i - 1], "const") && !is(t[i - 1], "final")) {
        i = closing(t, i, "{", "}");
        continue;
      }
      return i;
    }
    if (is(k, ";") || is(k, "=") || is(k, "}") || is(k, ")")) return std::nullopt;
    if (is(k, ":") && !initList) {
      initList = true;
      continue;
    }
    if (is(k, "(")) {  // noexcept(...), an initializer `member_(value)`
      i = closing(t, i, "(", ")");
      continue;
    }
    if (k.kind == Tok::Ident || is(k, "->") || is(k, "::") || is(k, "&") || is(k, "*") || is(k, "<") ||
        is(k, ">") || is(k, ",") || is(k, "&&"))
      continue;
    return std::nullopt;
  }
  return std::nullopt;
}

// A `{...}` or braceless statement the walk is inside, and what it is.
struct Scope {
  enum Kind { Function, Loop, Throttle, Command, Class, Other } kind;
  std::string name;        // for a function or a class
  bool braceless = false;  // ends at the next `;` of its brace depth
  size_t braceDepth = 0;
  bool constructor = false;  // a function that constructs or destroys its class
  std::string className;     // for a function: the class it is a method of, "" if none is written
};

class Walker {
public:
  Walker(const std::vector<Tok>& t, llvm::StringRef file, std::vector<TextCallEdge>& out)
      : t_(t), file_(file), out_(out) {}

  void run() {
    for (size_t i = 0; i < t_.size(); ++i) {
      const Tok& k = t_[i];
      if (pending_ && i == pendingEnd_ + 1 && !is(k, "{")) {
        scopes_.push_back({*pending_, "", true, braces_});
        pending_.reset();
      }
      if (is(k, "{")) {
        openBrace(i);
      } else if (is(k, "}")) {
        closeBrace();
      } else if (is(k, ";")) {
        while (!scopes_.empty() && scopes_.back().braceless && scopes_.back().braceDepth == braces_)
          scopes_.pop_back();
      } else if ((is(k, "class") || is(k, "struct")) && i + 1 < t_.size() && t_[i + 1].kind == Tok::Ident) {
        classBody(i);
      } else if (k.kind == Tok::Ident && (is(k, "for") || is(k, "while")) && next(i, "(")) {
        pendingEnd_ = closing(t_, i + 1, "(", ")");
        pending_ = is(k, "for") && tinyLoop(i + 1, pendingEnd_) ? Scope::Other : Scope::Loop;
      } else if (is(k, "do")) {
        pendingEnd_ = i;
        pending_ = Scope::Loop;
      } else if (is(k, "if") && next(i, "(")) {
        size_t end = closing(t_, i + 1, "(", ")");
        bool remainder = false;
        for (size_t j = i + 1; j < end && j < t_.size(); ++j) remainder = remainder || is(t_[j], "%");
        pendingEnd_ = end;
        if (!(i > 0 && is(t_[i - 1], "else"))) markCommandChain(i);
        pending_ = remainder                  ? std::optional<Scope::Kind>(Scope::Throttle)
                   : commandIfs_.count(i) ? std::optional<Scope::Kind>(Scope::Command)
                                           : std::nullopt;
      } else if (k.kind == Tok::Ident && next(i, "(") && !isKeyword(k.text)) {
        call(i, i + 1);
      } else if (k.kind == Tok::Ident && next(i, "<") && !isKeyword(k.text)) {
        if (std::optional<size_t> close = templateArgumentsEnd(i + 1); close && next(*close, "("))
          call(i, *close + 1);
      }
    }
  }

private:
  bool next(size_t i, llvm::StringRef text) const { return i + 1 < t_.size() && is(t_[i + 1], text); }

  static std::optional<long> decimal(const Tok& k) {
    long v = 0;
    if (k.kind != Tok::Literal || k.text.getAsInteger(10, v)) return std::nullopt;
    return v;
  }

  // `Test<DataLoader, Model>(loader, model)`: the `>` that closes the
  // template arguments opening at `open`, when what lies between can only be
  // types and constants (names, numbers, `::`, `,`, `*`, `&`, nested `<>`); a
  // comparison such as `i < n && f(x)` holds other tokens and is none.
  std::optional<size_t> templateArgumentsEnd(size_t open) const {
    int depth = 0;
    for (size_t j = open; j < t_.size() && j < open + 64; ++j) {
      const Tok& k = t_[j];
      if (is(k, "<")) {
        ++depth;
      } else if (is(k, ">")) {
        if (--depth == 0) return j;
      } else if (is(k, "&") && j + 1 < t_.size() && is(t_[j + 1], "&")) {
        return std::nullopt;
      } else if (!(k.kind == Tok::Ident || k.kind == Tok::Literal || is(k, "::") || is(k, ",") || is(k, "*") ||
                   is(k, "&"))) {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // The last token of the statement that starts at `start`: its closing `}`,
  // or the `;` of a braceless one.
  size_t statementEnd(size_t start) const {
    if (start < t_.size() && is(t_[start], "{")) return closing(t_, start, "{", "}");
    size_t end = start;
    while (end < t_.size() && !is(t_[end], ";")) ++end;
    return end;
  }

  // `for (int i = 0; i < 2; ++i) body` with no loop in its body: at most four
  // turns with literal bounds is straight-line code written as a loop (the
  // checks' isTinyLoop reads the AST the same way). `open` and `close` are the
  // header's parentheses.
  bool tinyLoop(size_t open, size_t close) const {
    size_t semi = open;
    while (semi < close && !is(t_[semi], ";")) ++semi;
    if (semi >= close || semi < open + 4 || !is(t_[semi - 2], "=") || semi + 4 >= close) return false;
    const Tok& var = t_[semi - 3];
    std::optional<long> from = decimal(t_[semi - 1]);
    if (var.kind != Tok::Ident || !from || t_[semi + 1].text != var.text) return false;
    size_t b = semi + 2;
    bool less = is(t_[b], "<"), notEqual = is(t_[b], "!");
    bool orEqual = b + 1 < close && is(t_[b + 1], "=");
    if (!less && !(notEqual && orEqual)) return false;
    size_t lit = b + (orEqual ? 2 : 1);
    std::optional<long> to = lit < close ? decimal(t_[lit]) : std::nullopt;
    if (!to || lit + 1 >= t_.size() || !is(t_[lit + 1], ";")) return false;
    long turns = *to - *from + (less && orEqual ? 1 : 0);
    if (turns < 0 || turns > 4) return false;
    size_t bodyEnd = statementEnd(close + 1);
    for (size_t j = close + 1; j < bodyEnd && j < t_.size(); ++j)
      if (is(t_[j], "for") || is(t_[j], "while") || is(t_[j], "do")) return false;
    return true;
  }

  // The condition `( ... )` opening at `open` compares with a string literal:
  // `cmd.name == "NVT"`.
  bool comparesWithString(size_t open, size_t close) const {
    for (size_t j = open + 1; j + 1 < close && j + 1 < t_.size(); ++j)
      if (is(t_[j], "=") && is(t_[j + 1], "=") &&
          ((j + 2 < close && t_[j + 2].text.starts_with("\"")) || (j > 0 && t_[j - 1].text.ends_with("\""))))
        return true;
    return false;
  }

  // `if (cmd == "NVE") ... else if (cmd == "NVT") ... else if (cmd == "ANNEAL")`
  // from the `if` at `i`: when the chain has at least three such branches,
  // their `if`s are a command interpreter's (see dispatchesCommand in the
  // checks): what a branch calls runs once per command, not per turn of the
  // loop reading the commands.
  void markCommandChain(size_t i) {
    std::vector<size_t> chain;
    while (i + 1 < t_.size() && is(t_[i], "if") && is(t_[i + 1], "(")) {
      size_t close = closing(t_, i + 1, "(", ")");
      if (close >= t_.size() || !comparesWithString(i + 1, close)) break;
      chain.push_back(i);
      size_t end = statementEnd(close + 1);
      if (end + 2 >= t_.size() || !is(t_[end + 1], "else")) break;
      i = end + 2;
    }
    if (chain.size() >= 3) commandIfs_.insert(chain.begin(), chain.end());
  }

  const Scope* function() const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (it->kind == Scope::Function) return &*it;
    return nullptr;
  }

  void openBrace(size_t i) {
    ++braces_;
    if (pending_ && i > pendingEnd_) {
      scopes_.push_back({*pending_, "", false, braces_});
      pending_.reset();
    } else if (bodyStart_ && *bodyStart_ == i) {
      scopes_.push_back({Scope::Function, bodyName_, false, braces_, bodyConstructs_, bodyClass_});
      bodyStart_.reset();
    } else if (auto cls = classBraces_.find(i); cls != classBraces_.end()) {
      scopes_.push_back({Scope::Class, cls->second, false, braces_});
    } else {
      scopes_.push_back({Scope::Other, "", false, braces_});
    }
  }

  void closeBrace() {
    while (!scopes_.empty() && scopes_.back().braceless) scopes_.pop_back();
    if (!scopes_.empty()) scopes_.pop_back();
    if (braces_ > 0) --braces_;
  }

  // `struct Net : Module {` at `i`: the `{` that opens the class body, so that
  // a function named like the class inside it is known as its constructor.
  // A declaration (`struct Net;`, `struct Net* p`) opens none.
  void classBody(size_t i) {
    for (size_t j = i + 2; j < t_.size(); ++j) {
      if (is(t_[j], "{")) {
        classBraces_[j] = t_[i + 1].text.str();
        return;
      }
      if (is(t_[j], ";") || is(t_[j], "(") || is(t_[j], "=") || is(t_[j], ")") || is(t_[j], "*")) return;
    }
  }

  // `Net::Net(`, `Net::~Net(` or, in the body of class Net, `Net(` / `~Net(`.
  bool namesConstructor(size_t i) const {
    if (i >= 1 && is(t_[i - 1], "~")) return true;
    if (i >= 2 && is(t_[i - 1], "::") && t_[i - 2].text == t_[i].text) return true;
    return !scopes_.empty() && scopes_.back().kind == Scope::Class && scopes_.back().name == t_[i].text;
  }

  // `name(` or `name<...>(` with its `(` at `open`: outside a body, perhaps a
  // definition; inside one, a call.
  void call(size_t i, size_t open) {
    const Scope* fn = function();
    if (!fn) {
      if (bodyStart_ && i < *bodyStart_) return;  // a parameter list or initializer list read already
      size_t close = closing(t_, open, "(", ")");
      if (std::optional<size_t> body = bodyAfter(t_, close)) {
        bodyStart_ = *body;
        bodyName_ = t_[i].text.str();
        bodyConstructs_ = namesConstructor(i);
        bodyClass_ = definingClass(i);
      }
      return;
    }
    // `matcher->operator()(ids)`: which class's operator the text cannot
    // tell, and every overloaded operator of the project has that name.
    if (is(t_[i], "operator")) return;
    TextCallEdge e;
    e.caller = fn->name;
    e.callee = t_[i].text.str();
    e.args = argumentCount(t_, open);
    for (const Scope& s : scopes_) {
      // Loops outside a command's branch do not repeat it.
      e.inLoop = s.kind == Scope::Command ? false : e.inLoop || s.kind == Scope::Loop;
      e.throttled = e.throttled || s.kind == Scope::Throttle;
    }
    e.callerIsMain = fn->name == "main";
    e.callerIsTest = isTestMacro(fn->name);
    e.callerIsConstructor = fn->constructor;
    e.at = (file_ + ":" + llvm::Twine(t_[i].line)).str();
    e.receiver = receiverOf(i);
    if (i >= 2 && is(t_[i - 1], "::") && t_[i - 2].kind == Tok::Ident) e.qualifier = t_[i - 2].text.str();
    e.callerClass = fn->className;
    out_.push_back(std::move(e));
  }

  // The object of the member call whose name is at `i`: `x` in `x.f(`,
  // `x->f(` and `x[i]->f(`, "this" in `this->f(`; "" for a call on a
  // temporary (`make().f(`) or no member call.
  std::string receiverOf(size_t i) const {
    if (i < 2 || !(is(t_[i - 1], ".") || is(t_[i - 1], "->"))) return "";
    size_t r = i - 2;
    if (is(t_[r], "]")) {
      int depth = 0;
      for (;; --r) {
        depth += is(t_[r], "]") - is(t_[r], "[");
        if (depth == 0 || r == 0) break;
      }
      if (r == 0) return "";
      --r;
    }
    return t_[r].kind == Tok::Ident ? t_[r].text.str() : "";
  }

  // The class a function defined by the name at `i` belongs to: `Agent` for
  // `Agent::act(`, the enclosing class for an in-class definition.
  std::string definingClass(size_t i) const {
    if (i >= 2 && is(t_[i - 1], "::") && t_[i - 2].kind == Tok::Ident) return t_[i - 2].text.str();
    if (!scopes_.empty() && scopes_.back().kind == Scope::Class) return scopes_.back().name;
    return "";
  }

  const std::vector<Tok>& t_;
  std::string file_;
  std::vector<TextCallEdge>& out_;
  std::vector<Scope> scopes_;
  size_t braces_ = 0;
  std::optional<Scope::Kind> pending_;  // a loop or throttling `if` whose body has not begun
  std::set<size_t> commandIfs_;         // the `if`s of command chains (markCommandChain)
  size_t pendingEnd_ = 0;               // where its header ends
  std::optional<size_t> bodyStart_;     // the `{` of a function definition just read
  std::string bodyName_;
  bool bodyConstructs_ = false;                // it is a constructor or destructor
  std::string bodyClass_;                      // the class it is a method of
  std::map<size_t, std::string> classBraces_;  // the `{` of each class body, with the class's name
};

}  // namespace

void collectTextCalls(llvm::StringRef code, llvm::StringRef file, std::vector<TextCallEdge>& out) {
  std::vector<Tok> tokens = tokenize(code);
  Walker(tokens, file, out).run();
}

}  // namespace nosync::lint
