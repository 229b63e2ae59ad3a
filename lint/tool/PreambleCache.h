// Precompiled preambles kept across runs, so that a changed LibTorch file is
// linted without parsing torch/torch.h again (clangd's idea, on disk).
//
// A missing or stale entry is built either before the file is parsed or, by
// default, by a background run after this one (Build::Later).
//
// An entry is keyed by a hash of the file's leading block (PreambleBlock.h),
// its directory when the block has quoted includes, the working directory,
// the compiler invocation's flags and the Clang version; files with the same
// block and flags share one entry. The entry's manifest lists every file the
// PCH was built from with its size and modification time (system headers
// too: a torch upgrade in place rebuilds it); when one differs the entry is
// rebuilt under the same key. A block that does not build cleanly (an
// #include not found, an error in a header) is remembered as unusable and
// those files are parsed whole, as without the cache.
//
// Entries live in <cache dir>/preambles/ as <key>.h (the block), <key>.pch
// and <key>.json (the manifest, touched on every use); when they take more
// than the size bound the least recently used go, except those this run
// uses and those another run touched in the last minute (it may be loading
// them).
#pragma once

#include "PreambleBuilder.h"

#include "clang/Basic/FileManager.h"
#include "llvm/ADT/StringMap.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace nosync::lint {

// How a translation unit uses a preamble: load `pch`, skip `bytes` of the file.
struct PreambleUse {
  std::string pch;
  // The block as a header of its own: byte for byte the file's first `bytes`,
  // so a location in it (a macro the block defines) is the same offset, line
  // and column in the file.
  std::string header;
  unsigned bytes = 0;
  bool endsAtStartOfLine = true;
  bool builtNow = false;
  // The project's headers the PCH holds (absolute): the result cache must
  // miss when one changes, as it would if they had been parsed in the file.
  std::vector<std::string> userHeaders;
};

class PreambleCache {
 public:
  // What to do when a file's preamble is missing or stale.
  enum class Build {
    // Build it first, then parse the file with it.
    Wait,
    // Parse the file whole (today's cost) and leave the build to a
    // background run (see pendingBuilds): writing the PCH costs about a third
    // of a LibTorch parse on top, which a commit should not wait for.
    Later,
  };

  PreambleCache(std::string cacheDir, uint64_t limitBytes, Build build);

  // The preamble to parse `invocation`'s file with, built now when missing or
  // stale; nullopt when the file is to be parsed whole. `reported(flag)` says
  // whether this run reports the compiler warning -W<flag> (clang-diagnostic-
  // checks): a preamble whose headers warn is not used then.
  std::optional<PreambleUse> acquire(const clang::CompilerInvocation& invocation, clang::FileManager& files,
                                     std::shared_ptr<clang::PCHContainerOperations> pch,
                                     const std::function<bool(llvm::StringRef)>& reported);

  const std::string& dir() const { return dir_; }

  // Whether a file of this run went without its preamble for want of a build
  // (Build::Later) that no other process is doing.
  bool pendingBuilds() const { return pending_; }

 private:
  std::mutex& lockFor(const std::string& key);
  void evict(const std::string& keep);

  std::string dir_;
  uint64_t limitBytes_;
  Build build_;
  std::atomic<bool> pending_{false};
  std::mutex mapMutex_;
  llvm::StringMap<std::unique_ptr<std::mutex>> keyMutexes_;  // also: the keys this run uses
};

}  // namespace nosync::lint
