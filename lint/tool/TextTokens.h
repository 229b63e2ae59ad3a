// Source text as tokens, for the readers that look at a project's sources
// without parsing them (TextCalls.h, TextTypes.h).
#pragma once

#include "llvm/ADT/StringRef.h"

#include <vector>

namespace nosync::lint {

struct Tok {
  enum Kind { Ident, Punct, Literal } kind;
  llvm::StringRef text;
  unsigned line;
};

/// Identifiers, literals and punctuation (`::` and `->` as one token) of a
/// source whose comments are blanked; preprocessor lines are skipped whole.
std::vector<Tok> tokenize(llvm::StringRef code);

inline bool is(const Tok& t, llvm::StringRef text) { return t.text == text; }

}  // namespace nosync::lint
