#include "InputPlan.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace nosync::lint {

bool isCxxSource(llvm::StringRef file) {
  return llvm::StringSwitch<bool>(llvm::sys::path::extension(file))
      .Cases(".cpp", ".cc", ".cxx", ".c++", ".cp", ".C", ".cu", true)
      .Cases(".h", ".hh", ".hpp", ".hxx", ".h++", ".cuh", ".inl", ".ipp", ".tpp", true)
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
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace nosync::lint
