#include "TextTypes.h"

#include "TextTokens.h"

#include "llvm/ADT/StringSet.h"

#include <vector>

namespace nosync::lint {
namespace {

// Words that stand before a name without being its type (`return x;`,
// `else foo(y);`, `public: T m;`).
bool isNotAType(llvm::StringRef word) {
  static const llvm::StringSet<> words = {
      "return", "else", "throw", "case", "new", "delete", "goto", "typename", "using", "namespace", "class",
      "struct", "enum", "union", "public", "private", "protected", "virtual", "override", "final", "operator",
      "co_return", "co_yield", "co_await", "sizeof", "template", "const", "static", "inline", "constexpr",
      "auto", "extern", "mutable", "volatile", "friend", "typedef", "explicit", "do", "if", "while", "for",
      "switch", "default", "unsigned", "signed", "void", "register", "thread_local", "noexcept", "decltype"};
  return words.contains(word);
}

// `class Net : public torch::nn::Module, Base<T> {` from `class` at `i`:
// records Net and its bases; a declaration (`class Net;`) records nothing.
void readClass(const std::vector<Tok>& t, size_t i, TextTypes& out) {
  if (i + 1 >= t.size() || t[i + 1].kind != Tok::Ident) return;
  // `template <typename M, class Net>`: a template parameter, no class.
  if (i + 2 < t.size() && (is(t[i + 2], ">") || is(t[i + 2], ",") || is(t[i + 2], "="))) return;
  std::string name = t[i + 1].text.str();
  std::set<std::string> bases;
  int angle = 0;
  bool inBases = false;
  std::string last;
  for (size_t j = i + 2; j < t.size() && j < i + 200; ++j) {
    const Tok& k = t[j];
    if (is(k, "{")) {
      if (!last.empty()) bases.insert(last);
      out.bases[name].insert(bases.begin(), bases.end());
      return;
    }
    if (is(k, ";") || is(k, "(") || is(k, "=") || is(k, ")")) return;
    if (is(k, "<")) ++angle;
    else if (is(k, ">")) --angle;
    else if (angle > 0) continue;
    else if (is(k, ":")) inBases = true;
    else if (is(k, ",") && inBases) {
      if (!last.empty()) bases.insert(last);
      last.clear();
    } else if (inBases && k.kind == Tok::Ident && !isNotAType(k.text)) {  // not public, virtual, ...
      last = k.text.str();  // the last component of a qualified name
    }
  }
}

// `Type name;`, `Type* name =`, `const Type& name)`, `std::unique_ptr<Type>
// name{`: the type named before the declared name at `j`, or "".
llvm::StringRef declaredTypeBefore(const std::vector<Tok>& t, size_t j) {
  size_t k = j;
  while (k > 0 && (is(t[k - 1], "*") || is(t[k - 1], "&") || is(t[k - 1], ">") || is(t[k - 1], "const"))) --k;
  if (k == 0 || t[k - 1].kind != Tok::Ident || isNotAType(t[k - 1].text)) return "";
  return t[k - 1].text;
}

}  // namespace

bool TextTypes::related(llvm::StringRef a, llvm::StringRef b) const {
  auto derives = [&](llvm::StringRef from, llvm::StringRef to) {
    std::vector<std::string> work{from.str()};
    std::set<std::string> seen;
    while (!work.empty()) {
      std::string c = work.back();
      work.pop_back();
      if (c == to) return true;
      if (!seen.insert(c).second) continue;
      if (auto it = bases.find(c); it != bases.end()) work.insert(work.end(), it->second.begin(), it->second.end());
    }
    return false;
  };
  return derives(a, b) || derives(b, a);
}

const std::set<std::string>* TextTypes::typesOf(llvm::StringRef name, llvm::StringRef file) const {
  if (auto f = declaredIn.find(file); f != declaredIn.end())
    if (auto it = f->second.find(name); it != f->second.end()) return &it->second;
  auto it = declared.find(name);
  return it == declared.end() ? nullptr : &it->second;
}

void collectTextTypes(llvm::StringRef code, llvm::StringRef file, TextTypes& out) {
  std::vector<Tok> t = tokenize(code);
  for (size_t j = 0; j < t.size(); ++j) {
    if ((is(t[j], "class") || is(t[j], "struct")) && !(j > 0 && is(t[j - 1], "enum"))) {
      readClass(t, j, out);
      continue;
    }
    if (t[j].kind != Tok::Ident || j + 1 >= t.size() || isNotAType(t[j].text)) continue;
    llvm::StringRef next = t[j + 1].text;
    if (next != ";" && next != "=" && next != "{" && next != "," && next != ")" && next != "[" && next != "(" &&
        next != ":")
      continue;
    if (llvm::StringRef type = declaredTypeBefore(t, j); !type.empty()) {
      out.declared[t[j].text.str()].insert(type.str());
      out.declaredIn[file.str()][t[j].text.str()].insert(type.str());
    }
  }
}

}  // namespace nosync::lint
