// Per-directory configuration: the nearest .nosync.yaml (or a .clang-tidy that
// talks about nosync) above each linted file.
#pragma once

#include "nosync/rules.h"

#include "clang-tidy/ClangTidyOptions.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace nosync::lint {

struct LintConfig {
  std::string source;   // the file it was read from; empty for the built-in defaults
  std::string rootDir;  // the user's source tree: the header filter reports only below it
  // Checks, CheckOptions (a rule's severity is its check's option
  // '<rule>.Severity', which the check reads itself), header filter.
  clang::tidy::ClangTidyOptions tidy;
  // CompileFlags: used when no compile_commands.json is found for a file
  // (a pre-commit hook in a project without a CMake build); relative paths in
  // them are relative to the config file's directory.
  std::vector<std::string> compileFlags;
  std::string digest;   // identifies the content, for the result cache
};

// Reads one config file. `.clang-tidy` files go through clang-tidy's own parser
// (so nosync-lint accepts exactly what clang-tidy does) and contribute their
// nosync-* settings; any other name is a .nosync.yaml. Errors are one line.
llvm::Expected<LintConfig> readConfigFile(llvm::StringRef path);

// True when a .clang-tidy file's options mention nosync at all; other
// .clang-tidy files are ignored so that a project's '-*,readability-*' does not
// switch nosync off.
bool mentionsNosync(const clang::tidy::ClangTidyOptions& opts);

// Finds and caches the config for each directory.
class ConfigDiscovery {
 public:
  // explicitFile: --config-file, used for every input instead of discovery.
  explicit ConfigDiscovery(std::string explicitFile = {});

  // The config governing `absFile` (built-in defaults when none is found).
  llvm::Expected<const LintConfig*> forFile(llvm::StringRef absFile);

 private:
  llvm::Expected<const LintConfig*> forDirectory(llvm::StringRef dir);

  std::string explicitFile_;
  std::unique_ptr<LintConfig> explicitConfig_;
  llvm::StringMap<std::unique_ptr<LintConfig>> byDir_;
};

// The project root for a file with no config: the nearest directory holding
// .git, else the file's own directory.
std::string projectRootFor(llvm::StringRef absFile);

}  // namespace nosync::lint
