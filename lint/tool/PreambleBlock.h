// The leading block of a file that a preamble stands for: the comments and
// preprocessor directives before its first line of code, as clang's lexer
// delimits it for clangd (Lexer::ComputePreamble). LibTorch programs start
// with `#include <torch/torch.h>`, so this block is where nearly all of a
// translation unit's parse time goes, and it rarely changes when the file is
// edited.
#pragma once

#include "clang/Basic/LangOptions.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace nosync::lint {

struct PreambleBlock {
  // The block's bytes exactly as they start the file: the main file's lexer
  // skips this many bytes when the preamble is used, so the rest of the file
  // keeps its line numbers.
  std::string text;
  bool endsAtStartOfLine = true;
  // A quoted include (or __FILE__) in the block resolves against the file's
  // own directory, so the block means the same only to files in one directory.
  bool dependsOnDirectory = false;
};

// The block of `buffer`, or nullopt when it includes nothing (a preamble of a
// few macros saves nothing and would only cost disk).
std::optional<PreambleBlock> leadingBlock(llvm::StringRef buffer, const clang::LangOptions& langOpts);

}  // namespace nosync::lint
