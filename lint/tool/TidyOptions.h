// Feeds clang-tidy's context with nosync's defaults, the file's config and the
// command line, in that order of precedence (later wins; Checks globs append).
#pragma once

#include "ConfigFile.h"

#include "clang-tidy/ClangTidyOptions.h"

#include <optional>
#include <string>

namespace nosync::lint {

// What the command line overrides for every file.
struct CommandLineOverrides {
  std::string checks;          // --checks
  std::optional<bool> color;   // --color / --no-color
};

// The default checks: only nosync's, whatever else happens to be linked in.
inline constexpr const char* kDefaultChecks = "-*,nosync-*";

// Header paths never reported even when inside the project root: installed
// packages and vendored dependencies (LibTorch from a wheel lives in .venv).
inline constexpr const char* kExcludedHeaders =
    "(^|/)(\\.venv|venv|site-packages|dist-packages|libtorch|third_party|_deps)/";

// The options clang-tidy should use for one file under `config`.
clang::tidy::ClangTidyOptions optionsFor(const LintConfig& config, llvm::StringRef absFile,
                                         const CommandLineOverrides& overrides);

// A provider answering with the options of one already-resolved config.
class NosyncOptionsProvider : public clang::tidy::ClangTidyOptionsProvider {
 public:
  NosyncOptionsProvider(const LintConfig& config, CommandLineOverrides overrides)
      : config_(config), overrides_(std::move(overrides)) {}

  const clang::tidy::ClangTidyGlobalOptions& getGlobalOptions() override { return global_; }
  std::vector<OptionsSource> getRawOptions(llvm::StringRef fileName) override;

 private:
  const LintConfig& config_;
  CommandLineOverrides overrides_;
  clang::tidy::ClangTidyGlobalOptions global_;
};

}  // namespace nosync::lint
