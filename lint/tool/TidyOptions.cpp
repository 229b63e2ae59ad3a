#include "TidyOptions.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Regex.h"

namespace nosync::lint {

using clang::tidy::ClangTidyOptions;

namespace {

ClangTidyOptions nosyncDefaults(const LintConfig& config, llvm::StringRef absFile) {
  ClangTidyOptions o = ClangTidyOptions::getDefaults();
  o.Checks = kDefaultChecks;
  std::string root = config.rootDir.empty() ? projectRootFor(absFile) : config.rootDir;
  // The main file is always reported; headers only when they are the user's:
  // below the project root, or named relative to the build directory (a
  // compile database with relative paths; system and package headers are
  // found through absolute include paths).
  o.HeaderFilterRegex = "^(" + llvm::Regex::escape(root) + "/|[^/])";
  o.ExcludeHeaderFilterRegex = kExcludedHeaders;
  o.SystemHeaders = false;
  // Each finding says what decided its severity (the JSON/SARIF `context`).
  o.CheckOptions["ExplainContext"] = ClangTidyOptions::ClangTidyValue("true");
  return o;
}

}  // namespace

ClangTidyOptions optionsFor(const LintConfig& config, llvm::StringRef absFile,
                            const CommandLineOverrides& overrides) {
  ClangTidyOptions o = nosyncDefaults(config, absFile);
  o.mergeWith(config.tidy, 1);
  ClangTidyOptions cli;
  if (!overrides.checks.empty()) cli.Checks = overrides.checks;
  cli.UseColor = overrides.color;
  o.mergeWith(cli, 2);
  return o;
}

std::vector<clang::tidy::ClangTidyOptionsProvider::OptionsSource> NosyncOptionsProvider::getRawOptions(
    llvm::StringRef fileName) {
  llvm::SmallString<256> abs(fileName);
  llvm::sys::fs::make_absolute(abs);
  return {{optionsFor(config_, abs, overrides_),
           config_.source.empty() ? OptionsSourceTypeDefaultBinary : config_.source}};
}

}  // namespace nosync::lint
