#include "PreambleCache.h"

#include "clang/Basic/Version.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/LockFileManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA1.h"

#include <algorithm>
#include <chrono>

namespace nosync::lint {
namespace {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

// Bump when the manifest format or the meaning of a key changes.
constexpr const char* kFormat = "nosync-lint-preamble-1";
// An unusable block (say, an #include not installed yet) is tried again after
// this long even if nothing it pulled in changed.
constexpr auto kRetryUnusable = std::chrono::hours(24);

// An entry used this recently may be being loaded by another run.
constexpr auto kRecentlyUsed = std::chrono::minutes(1);
// A build takes well under a minute; a lock this old belongs to a killed run.
constexpr auto kStaleLock = std::chrono::minutes(10);

int64_t nanos(llvm::sys::TimePoint<> t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// The flags that shape the PCH, without what names this one file (its input,
// output, dependency file): files of one project share them.
std::vector<std::string> sharedFlags(const clang::CompilerInvocation& invocation) {
  clang::CompilerInvocation copy(invocation);
  copy.getFrontendOpts().Inputs.clear();
  copy.getFrontendOpts().OutputFile.clear();
  copy.getDependencyOutputOpts() = clang::DependencyOutputOptions();
  copy.getCodeGenOpts().MainFileName.clear();
  copy.getPreprocessorOpts().ImplicitPCHInclude.clear();
  copy.getPreprocessorOpts().PrecompiledPreambleBytes = {0, false};
  return copy.getCC1CommandLine();
}

std::string keyFor(const PreambleBlock& block, llvm::StringRef fileDir, llvm::StringRef cwd,
                   const std::vector<std::string>& flags) {
  llvm::SHA1 h;
  auto add = [&](llvm::StringRef s) {
    h.update(s);
    h.update(llvm::StringRef("\0", 1));
  };
  add(kFormat);
  add(clang::getClangFullRepositoryVersion());
  add(block.text);
  add(block.endsAtStartOfLine ? "1" : "0");
  add(block.dependsOnDirectory ? fileDir : "");
  add(cwd);
  add("analyzer");  // every nosync parse defines __clang_analyzer__ (TranslationUnit.cpp)
  for (const std::string& f : flags) add(f);
  return llvm::toHex(h.final());
}

struct Manifest {
  bool usable = false;
  std::string failure;
  std::string header;
  int64_t builtAt = 0;
  std::vector<PreambleInput> inputs;
  std::vector<std::string> warningFlags;
};

llvm::json::Value toJson(const Manifest& m) {
  llvm::json::Array inputs;
  for (const PreambleInput& in : m.inputs)
    inputs.push_back(llvm::json::Array{in.file, static_cast<int64_t>(in.size), in.mtime, in.system});
  llvm::json::Array warnings;
  for (const std::string& w : m.warningFlags) warnings.push_back(w);
  return llvm::json::Object{{"format", kFormat},           {"usable", m.usable},
                            {"failure", m.failure},         {"header", m.header},
                            {"builtAt", m.builtAt},         {"inputs", std::move(inputs)},
                            {"warnings", std::move(warnings)}};
}

std::optional<Manifest> readManifest(const std::string& file) {
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf) return std::nullopt;
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object* o = json->getAsObject();
  if (!o || o->getString("format") != llvm::StringRef(kFormat)) return std::nullopt;
  Manifest m;
  auto usable = o->getBoolean("usable");
  auto failure = o->getString("failure");
  auto header = o->getString("header");
  auto builtAt = o->getInteger("builtAt");
  const llvm::json::Array* inputs = o->getArray("inputs");
  const llvm::json::Array* warnings = o->getArray("warnings");
  if (!usable || !failure || !header || !builtAt || !inputs || !warnings) return std::nullopt;
  m.usable = *usable;
  m.failure = failure->str();
  m.header = header->str();
  m.builtAt = *builtAt;
  for (const llvm::json::Value& v : *inputs) {
    const llvm::json::Array* a = v.getAsArray();
    if (!a || a->size() != 4) return std::nullopt;
    auto file = (*a)[0].getAsString();
    auto size = (*a)[1].getAsInteger();
    auto mtime = (*a)[2].getAsInteger();
    auto system = (*a)[3].getAsBoolean();
    if (!file || !size || !mtime || !system) return std::nullopt;
    m.inputs.push_back({file->str(), static_cast<uint64_t>(*size), *mtime, *system});
  }
  for (const llvm::json::Value& v : *warnings)
    if (auto w = v.getAsString()) m.warningFlags.push_back(w->str());
  return m;
}

// Write then rename, so that a concurrent run never reads half a file.
bool writeAtomically(const std::string& file, llvm::StringRef text) {
  std::string tmp = file + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(tmp, ec);
    if (ec) return false;
    out << text;
  }
  if (fs::rename(tmp, file)) {
    fs::remove(tmp);
    return false;
  }
  return true;
}

std::string currentDir(llvm::vfs::FileSystem& fs) {
  auto cwd = fs.getCurrentWorkingDirectory();
  return cwd ? *cwd : std::string();
}

// Marks an entry as just used, for the least-recently-used eviction.
void touch(const std::string& file) {
  int fd;
  if (fs::openFileForWrite(file, fd, fs::CD_OpenExisting, fs::OF_Append)) return;
  fs::setLastAccessAndModificationTime(fd, std::chrono::system_clock::now());
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
}

// Every input still stats as it did when the PCH was built.
bool fresh(const Manifest& m, const std::string& header) {
  if (m.header != header) return false;  // the cache directory moved
  if (!m.usable) {
    auto age = std::chrono::system_clock::now().time_since_epoch() - std::chrono::nanoseconds(m.builtAt);
    if (age > kRetryUnusable) return false;
  }
  for (const PreambleInput& in : m.inputs) {
    fs::file_status st;
    if (fs::status(in.file, st) || st.getSize() != in.size || nanos(st.getLastModificationTime()) != in.mtime)
      return false;
  }
  return true;
}

// The block's header, written only when absent or different: the PCH
// records its size and time, and a rewrite would make the PCH stale.
bool ensureHeader(const std::string& header, llvm::StringRef text) {
  if (auto buf = llvm::MemoryBuffer::getFile(header); buf && (*buf)->getBuffer() == text) return true;
  return writeAtomically(header, text);
}

std::string mainFileOf(const clang::CompilerInvocation& invocation, llvm::StringRef cwd) {
  const auto& inputs = invocation.getFrontendOpts().Inputs;
  if (inputs.size() != 1 || !inputs.front().isFile()) return "";
  llvm::SmallString<256> file(inputs.front().getFile());
  if (!path::is_absolute(file)) fs::make_absolute(cwd, file);
  path::remove_dots(file, /*remove_dot_dot=*/true);
  return std::string(file);
}

PreambleUse useOf(const Manifest& m, const PreambleBlock& block, std::string pch, bool builtNow) {
  PreambleUse use;
  use.pch = std::move(pch);
  use.header = m.header;
  use.bytes = static_cast<unsigned>(block.text.size());
  use.endsAtStartOfLine = block.endsAtStartOfLine;
  use.builtNow = builtNow;
  for (const PreambleInput& in : m.inputs)
    if (!in.system && in.file != m.header) use.userHeaders.push_back(in.file);
  return use;
}

}  // namespace

PreambleCache::PreambleCache(std::string cacheDir, uint64_t limitBytes, Build build)
    : limitBytes_(limitBytes), build_(build) {
  llvm::SmallString<256> dir(cacheDir);
  path::append(dir, "preambles");
  dir_ = std::string(dir);
}

std::mutex& PreambleCache::lockFor(const std::string& key) {
  std::lock_guard<std::mutex> lock(mapMutex_);
  auto& m = keyMutexes_[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

std::optional<PreambleUse> PreambleCache::acquire(const clang::CompilerInvocation& invocation,
                                                  clang::FileManager& files,
                                                  std::shared_ptr<clang::PCHContainerOperations> pch,
                                                  const std::function<bool(llvm::StringRef)>& reported) {
  auto vfs = files.getVirtualFileSystemPtr();
  std::string cwd = currentDir(*vfs);
  std::string mainFile = mainFileOf(invocation, cwd);
  if (mainFile.empty()) return std::nullopt;
  auto buffer = vfs->getBufferForFile(mainFile);
  if (!buffer) return std::nullopt;
  std::optional<PreambleBlock> block = leadingBlock((*buffer)->getBuffer(), invocation.getLangOpts());
  if (!block) return std::nullopt;

  std::string fileDir(path::parent_path(mainFile));
  std::string key = keyFor(*block, fileDir, cwd, sharedFlags(invocation));
  std::string stem = dir_ + "/" + key;
  std::string header = stem + ".h", pchFile = stem + ".pch", manifestFile = stem + ".json";

  auto usable = [&](const Manifest& m) -> bool {
    if (!m.usable) return false;
    return std::none_of(m.warningFlags.begin(), m.warningFlags.end(), reported);
  };

  // One build per key: other threads of this run wait for it; other
  // processes wait on a lock file beside the PCH.
  std::lock_guard<std::mutex> keyLock(lockFor(key));
  if (auto m = readManifest(manifestFile); m && fresh(*m, header)) {
    touch(manifestFile);
    if (!usable(*m)) return std::nullopt;
    return useOf(*m, *block, pchFile, /*builtNow=*/false);
  }
  if (build_ == Build::Later) {
    // A lock beside the PCH: another process is building it already.
    fs::file_status lock;
    if (fs::status(pchFile + ".lock", lock) ||
        std::chrono::system_clock::now() - lock.getLastModificationTime() > kStaleLock)
      pending_ = true;
    return std::nullopt;
  }
  if (fs::create_directories(dir_)) return std::nullopt;  // an unwritable cache only costs speed
  std::optional<llvm::LockFileManager> crossProcess;
  crossProcess.emplace(pchFile);
  if (crossProcess->getState() == llvm::LockFileManager::LFS_Shared) {
    crossProcess->waitForUnlock(600);
    crossProcess.reset();
    if (auto m = readManifest(manifestFile); m && fresh(*m, header)) {
      if (!usable(*m)) return std::nullopt;
      return useOf(*m, *block, pchFile, /*builtNow=*/false);
    }
  }

  if (!ensureHeader(header, block->text)) return std::nullopt;
  PreambleBuildResult built = buildPreamblePch(invocation, header, pchFile, fileDir, vfs, std::move(pch));
  Manifest m;
  m.usable = built.ok;
  m.failure = built.failure;
  m.header = header;
  m.builtAt = nanos(std::chrono::system_clock::now());
  m.inputs = std::move(built.inputs);
  m.warningFlags = std::move(built.warningFlags);
  if (!m.usable) fs::remove(pchFile);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << toJson(m);
  if (!writeAtomically(manifestFile, os.str())) return std::nullopt;
  crossProcess.reset();
  evict(key);
  if (!usable(m)) return std::nullopt;
  return useOf(m, *block, pchFile, /*builtNow=*/true);
}

// Drops the least recently used entries until the rest fit in the bound,
// and temporary files a killed run left. Never an entry this run uses (its
// key has a mutex) or one used in the last minute: a parse may be about to
// load it.
void PreambleCache::evict(const std::string& keep) {
  struct Entry {
    std::string stem;
    llvm::sys::TimePoint<> used;
    uint64_t bytes = 0;
  };
  std::vector<Entry> entries;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef file = it->path();
    fs::file_status st;
    if (fs::status(file, st)) continue;
    if (file.contains(".tmp") && now - st.getLastModificationTime() > std::chrono::hours(1)) {
      fs::remove(file);
      continue;
    }
    if (!file.ends_with(".json")) continue;
    Entry e{file.drop_back(5).str(), st.getLastModificationTime(), st.getSize()};
    for (const char* ext : {".pch", ".h"}) {
      fs::file_status part;
      if (!fs::status(e.stem + ext, part)) e.bytes += part.getSize();
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used > b.used; });
  uint64_t total = 0;
  for (const Entry& e : entries) {
    total += e.bytes;
    if (total <= limitBytes_ || path::filename(e.stem) == keep || now - e.used < kRecentlyUsed) continue;
    {
      std::lock_guard<std::mutex> lock(mapMutex_);
      if (keyMutexes_.count(path::filename(e.stem))) continue;
    }
    for (const char* ext : {".json", ".pch", ".h"}) fs::remove(e.stem + ext);
    total -= e.bytes;
  }
}

}  // namespace nosync::lint

