#include "TextTokens.h"

#include <cctype>

namespace nosync::lint {
namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

// Identifiers, literals and punctuation (`::` and `->` as one token);
// preprocessor lines are skipped whole.
std::vector<Tok> tokenize(llvm::StringRef code) {
  std::vector<Tok> out;
  unsigned line = 1;
  bool lineStart = true;
  for (size_t i = 0; i < code.size();) {
    char c = code[i];
    if (c == '\n') {
      ++line, ++i, lineStart = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '#' && lineStart) {  // a directive, with its continuation lines (counted)
      for (; i < code.size() && code[i] != '\n'; ++i)
        if (code[i] == '\\' && i + 1 < code.size() && code[i + 1] == '\n') ++line, ++i;
      continue;
    }
    lineStart = false;
    size_t start = i;
    if (isIdentStart(c)) {
      while (i < code.size() && isIdentChar(code[i])) ++i;
      out.push_back({Tok::Ident, code.slice(start, i), line});
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < code.size() && (isIdentChar(code[i]) || code[i] == '.' || code[i] == '\'')) ++i;
      out.push_back({Tok::Literal, code.slice(start, i), line});
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < code.size() && code[i] != c && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
      if (i < code.size() && code[i] == c) ++i;  // an unterminated one ends before its newline
      out.push_back({Tok::Literal, code.slice(start, i), line});
    } else {
      llvm::StringRef two = code.substr(i, 2);
      i += two == "::" || two == "->" ? 2 : 1;
      out.push_back({Tok::Punct, code.slice(start, i), line});
    }
  }
  return out;
}

}  // namespace nosync::lint
