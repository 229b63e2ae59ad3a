// Replays the #include directives of a preamble's block to the translation
// unit's preprocessor callbacks, as clangd does (ReplayPreamble). A preamble
// makes the lexer skip the file's leading block, so no callback ever sees its
// includes; clang-tidy's include inserter learns where a file's includes are
// from those callbacks, and without them it places `#include
// <nosync/kernels.h>` at offset 0 instead of among the file's own includes:
// the same finding would carry a different fix with and without a preamble.
#pragma once

#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"

namespace nosync::lint {

class PreambleReplay : public clang::PPCallbacks {
 public:
  // `bytes`: the length of the block the lexer skips (PrecompiledPreambleBytes).
  PreambleReplay(clang::Preprocessor& pp, unsigned bytes) : pp_(pp), bytes_(bytes) {}

  // On entering the main file: every #include / #import of the block, once,
  // in order.
  void FileChanged(clang::SourceLocation loc, FileChangeReason reason, clang::SrcMgr::CharacteristicKind,
                   clang::FileID) override;

 private:
  void replay(clang::FileID mainFile);
  clang::OptionalFileEntryRef resolve(llvm::StringRef name, bool angled, clang::FileID mainFile);

  clang::Preprocessor& pp_;
  unsigned bytes_;
  bool done_ = false;
};

}  // namespace nosync::lint
