#include "InputPlan.h"

#include "HeaderContext.h"
#include "ProjectScan.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace nosync::lint {

namespace {

// A header that is the tail of another file is parsed through that file's
// text before its #include (HeaderContext.h). When no project file includes
// it, or the prefix cannot be written, it is parsed alone, as before.
void parseThroughIncluder(LintJob& job, CompileDatabases& dbs) {
  if (!isHeaderFile(job.file)) return;  // sources are never read twice
  auto text = llvm::MemoryBuffer::getFile(job.file);
  if (!text || !needsIncluder(job.file, (*text)->getBuffer())) return;
  std::string root = projectRootOf(job.file);
  if (root.empty()) return;
  std::optional<Includer> includer = findIncluder(job.file, root);
  if (!includer) return;
  auto prefix = writeIncluderPrefix(*includer, job.file);
  if (!prefix) {
    llvm::consumeError(prefix.takeError());
    return;
  }
  job.db = dbs.adopt(withIncluderPrefix(*job.db, *prefix, llvm::sys::path::parent_path(includer->file).str()));
  job.includer = includer->file + ":" + std::to_string(includer->line);
}

}  // namespace

bool isCxxSource(llvm::StringRef file) {
  return isHeaderFile(file) || llvm::StringSwitch<bool>(llvm::sys::path::extension(file))
                                   .Cases(".cpp", ".cc", ".cxx", ".c++", ".cp", ".C", ".cu", true)
                                   .Default(false);
}

std::vector<LintJob> planJobs(const std::vector<std::string>& files, CompileDatabases& dbs,
                              ConfigDiscovery& configs, std::vector<std::string>& problems) {
  std::vector<LintJob> jobs;
  for (const std::string& f : files) {
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(f, st) || !llvm::sys::fs::exists(st)) {
      problems.push_back("no such file: " + f);
      continue;
    }
    if (llvm::sys::fs::is_directory(st)) {
      problems.push_back(f + " is a directory; pass the source files to lint");
      continue;
    }
    if (!isCxxSource(f)) {
      problems.push_back(f + " is not a C++ source file (expected .cpp, .cc, .cxx, .cu, .h, .hpp or similar)");
      continue;
    }
    llvm::SmallString<256> abs(f);
    llvm::sys::fs::make_absolute(abs);
    llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
    LintJob job{std::string(abs)};
    auto cfg = configs.forFile(job.file);
    if (!cfg) {
      problems.push_back(llvm::toString(cfg.takeError()));
      continue;
    }
    job.config = *cfg;
    auto db = dbs.forFile(job.file, *job.config);
    if (!db) {
      problems.push_back(llvm::toString(db.takeError()));
      continue;
    }
    job.db = *db;
    parseThroughIncluder(job, dbs);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace nosync::lint
