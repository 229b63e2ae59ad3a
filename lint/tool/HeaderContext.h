// Headers that cannot be parsed on their own, parsed where they are included.
//
// A template implementation file (Trainer.tpp, foo.inl, bar.ipp) is the tail
// of another header: it uses that header's declarations and often opens
// with `#ifndef TRAINER_HPP / #error "include Trainer.hpp instead"`, or
// includes its own header back, which then includes the .tpp a second time.
// Parsed alone it gives nothing but errors. As clangd does for such files,
// nosync-lint parses it in the context of a project file that includes it:
// that file's text before the #include line is given to the compiler first
// (`-include`), so its macros, declarations and include guards are in place,
// and the findings stay in the linted file.
#pragma once

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>

namespace nosync::lint {

// Whether `header` (its path and text) is part of another file rather than a
// header of its own: a .tpp/.inl/.ipp, a header whose leading conditionals
// hold an #error (the "include X.hpp instead" guard), or one that writes
// `torch::` without including LibTorch, itself or through the headers beside
// it that it includes (its includer includes <torch/torch.h> first); a quoted
// include found elsewhere (an include path) may bring LibTorch: no includer.
bool needsIncluder(llvm::StringRef header, llvm::StringRef text);

struct Includer {
  std::string file;   // absolute
  unsigned line = 0;  // of the #include that pulls the header in (1-based)
};

// A project source (under `root`, as ProjectScan walks it) whose #include
// names `header`: one whose quoted include resolves beside it first, else
// one whose include path is a tail of the header's path; the first in path
// order among equals. nullopt when none does.
std::optional<Includer> findIncluder(llvm::StringRef header, llvm::StringRef root);

// The includer's text before its #include line, with the conditionals still
// open there closed, written under the system temp directory (the same path
// for the same includer, line and header, so the result cache recognises it).
// Its lines are numbered as the includer's (#line). The path, or an error.
llvm::Expected<std::string> writeIncluderPrefix(const Includer& includer, llvm::StringRef header);

// `base` with `-include <prefix>` and `-iquote <includer's directory>` added to
// every command (the prefix's quoted #includes were written beside the includer).
std::unique_ptr<clang::tooling::CompilationDatabase> withIncluderPrefix(
    const clang::tooling::CompilationDatabase& base, std::string prefix, std::string includerDir);

}  // namespace nosync::lint
