// The command line of nosync-lint, parsed into one plain struct.
//
// Hand-parsed rather than through llvm::cl so that every usage error is a
// single line naming the bad argument (llvm::cl prints multi-line advice and
// shares global option state with the Clang libraries we link).
#pragma once

#include "nosync/rules.h"

#include <optional>
#include <string>
#include <vector>

namespace nosync::lint {

using rules::Severity;

enum class OutputFormat { Text, Json, Sarif };

struct LintOptions {
  std::vector<std::string> files;

  // Compile arguments after `--`; when present they replace any database.
  std::vector<std::string> compileArgs;
  bool haveCompileArgs = false;
  std::string buildPath;  // -p

  std::string checks;       // --checks globs, applied after the config file's
  std::string explainRule;  // --explain
  std::string exportFixes;  // --export-fixes
  std::string configFile;   // --config-file: use this instead of discovery
  bool fix = false;

  OutputFormat format = OutputFormat::Text;
  Severity minSeverity = Severity::Warning;  // lowest severity shown
  Severity failOn = Severity::Warning;       // lowest severity that makes exit 1
  std::optional<bool> color;                 // unset: colour when stdout is a terminal

  unsigned jobs = 0;        // 0: one per core
  bool useCache = true;  // results and preambles both
  // --preamble: parse the leading include block from a stored PCH; when it
  // is missing, build it in the background (Auto) or first (Wait).
  enum class PreambleMode { Auto, Wait, Off } preamble = PreambleMode::Auto;
  uint64_t preambleLimitMiB = 4096;
  // Internal: the background run Auto starts; builds missing preambles of
  // the files and lints nothing.
  bool buildPreamblesOnly = false;
  std::string cacheDir;  // default: <project root>/.cache/nosync-lint
  bool quiet = false;    // no summary/progress lines on stderr

  bool listRules = false;
  bool version = false;
  bool help = false;
};

// The internal option of the background preamble build (not in --help).
inline constexpr const char* kBuildPreamblesOnly = "--internal-build-preambles";

// Parses argv. On a usage error returns std::nullopt and sets `error` to one
// line (without the "nosync-lint: error: " prefix).
std::optional<LintOptions> parseCommandLine(int argc, const char* const* argv, std::string& error);

// The --help text. Kept next to the parser so the two cannot drift apart.
const char* usageText();

std::optional<Severity> parseSeverity(const std::string& name);

}  // namespace nosync::lint
