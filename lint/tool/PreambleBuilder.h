// Emits a precompiled header for a file's leading block under the file's own
// compiler invocation, and records what it was built from.
//
// The block is written as a header of its own (in the cache, named for its
// key) and compiled as a PCH; the file is later parsed with that PCH loaded
// and its first bytes skipped (PreprocessorOptions::PrecompiledPreambleBytes),
// which is how clang's PrecompiledPreamble is consumed too, but kept on disk
// across runs and shared by every file whose block and flags are the same.
#pragma once

#include "PreambleBlock.h"

#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/PCHContainerOperations.h"
#include "llvm/Support/VirtualFileSystem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nosync::lint {

// A file the PCH was built from, as it was then: the PCH is stale when any
// of these no longer stats the same.
struct PreambleInput {
  std::string file;  // absolute
  uint64_t size = 0;
  int64_t mtime = 0;  // nanoseconds since the epoch
  bool system = false;
};

struct PreambleBuildResult {
  bool ok = false;
  std::string failure;  // one line, when !ok
  std::vector<PreambleInput> inputs;
  // The -W flags of the warnings the block produced outside system headers:
  // a run that reports them (--checks=clang-diagnostic-...) must not use the
  // PCH, or it would lose them.
  std::vector<std::string> warningFlags;
};

// Compiles `headerPath` (holding the block's text) to `pchPath` with the
// flags of `base`, the file's own invocation. `fileDir`: the file's
// directory, searched for the block's quoted includes as if the block were
// still in the file.
PreambleBuildResult buildPreamblePch(const clang::CompilerInvocation& base, const std::string& headerPath,
                                     const std::string& pchPath, const std::string& fileDir,
                                     llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs,
                                     std::shared_ptr<clang::PCHContainerOperations> pch);

}  // namespace nosync::lint
