// The program: options -> plan (every input resolved, fail fast) -> lint each
// translation unit (cached, optionally in parallel) -> filter -> write ->
// fixes -> exit code.
#include "LintDriver.h"
#include "ProjectContext.h"

#include "Catalog.h"
#include "CompileDatabase.h"
#include "Fixes.h"
#include "InputPlan.h"
#include "CommandLine.h"
#include "TranslationUnit.h"
#include "ResultCache.h"
#include "Writers.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

namespace nosync::lint {
namespace {

int usageError(const llvm::Twine& message) {
  llvm::errs() << "nosync-lint: error: " << message << "\n";
  return kUsage;
}

std::string defaultCacheDir(const std::vector<LintJob>& jobs) {
  const LintConfig& cfg = *jobs.front().config;
  llvm::SmallString<256> dir(cfg.rootDir.empty() ? projectRootFor(jobs.front().file) : cfg.rootDir);
  llvm::sys::path::append(dir, ".cache", "nosync-lint");
  return std::string(dir);
}

// The cached result when there is one, else a fresh parse (stored for next time).
TuResult reuseOrLint(const LintJob& job, const CommandLineOverrides& overrides, ResultCache* cache) {
  if (!cache) return lintTranslationUnit(job.file, *job.db, *job.config, overrides);
  auto cached = cache->lookup(job, overrides);
  if (!cached) return cache->lintAndStore(job, overrides);
  TuResult r;
  r.file = job.file;
  r.config = job.config;
  r.overrides = overrides;
  r.errors = std::move(cached->errors);
  r.calls = std::move(cached->calls);
  r.namesCuda = cached->namesCuda;
  r.hasMain = cached->hasMain;
  r.trains = cached->trains;
  r.fromCache = true;
  return r;
}

// The unit's findings, at the severities its config asks for.
TuResult lintOrReuse(const LintJob& job, const CommandLineOverrides& overrides, ResultCache* cache) {
  TuResult r = reuseOrLint(job, overrides, cache);
  raiseConfiguredErrors(*job.config, r.errors);
  return r;
}

const char* preambleNote(TuResult::Preamble p) {
  switch (p) {
    case TuResult::Preamble::Built: return ", preamble built";
    case TuResult::Preamble::Reused: return ", preamble reused";
    case TuResult::Preamble::None: break;
  }
  return "";
}

// -j, or one job per core.
unsigned jobCount(const LintOptions& opts) {
  if (opts.jobs) return opts.jobs;
  return std::max(1u, std::thread::hardware_concurrency());
}

// Lints every job, `jobs` at a time, printing progress when there is more
// than one file. Results come back in input order.
std::vector<TuResult> lintAll(const std::vector<LintJob>& jobs, const LintOptions& opts,
                              const CommandLineOverrides& overrides, ResultCache* cache) {
  std::vector<TuResult> results(jobs.size());
  std::mutex progressMutex;
  unsigned done = 0;
  auto lintOne = [&](size_t i) {
    const LintJob& job = jobs[i];
    TuResult r = lintOrReuse(job, overrides, cache);
    std::lock_guard<std::mutex> lock(progressMutex);
    ++done;
    if (jobs.size() > 1 && !opts.quiet) {
      llvm::errs() << "[" << done << "/" << jobs.size() << "] " << job.file;
      if (!job.includer.empty()) llvm::errs() << " (as included at " << job.includer << ")";
      if (r.fromCache) llvm::errs() << " (cached)\n";
      else llvm::errs() << llvm::formatv(" ({0:f1} s{1})\n", r.seconds, preambleNote(r.preamble));
    }
    results[i] = std::move(r);
  };
  unsigned parallel = jobCount(opts);
  if (parallel <= 1 || jobs.size() <= 1) {
    for (size_t i = 0; i < jobs.size(); ++i) lintOne(i);
  } else {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(parallel));
    for (size_t i = 0; i < jobs.size(); ++i) pool.async([&, i] { lintOne(i); });
    pool.wait();
  }
  return results;
}

// The background run: the preambles the files lacked, one file at a time
// and at low priority (the user is working on this machine).
void buildPreambles(const std::vector<LintJob>& jobs, const CommandLineOverrides& overrides,
                    PreambleCache& preambles) {
  ::setpriority(PRIO_PROCESS, 0, 10);
  for (const LintJob& job : jobs)
    if (job.includer.empty()) buildPreamble(job.file, *job.db, *job.config, overrides, preambles);
}

// Starts this command again, detached and silent, to build the preambles the
// run went without: the same files and flags, so the same keys.
void startPreambleBuild(int argc, const char* const* argv) {
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(argv[0], &anchor);
  std::vector<llvm::StringRef> args{exe};
  int i = 1;
  for (; i < argc && llvm::StringRef(argv[i]) != "--"; ++i) args.push_back(argv[i]);
  args.push_back(kBuildPreamblesOnly);
  for (; i < argc; ++i) args.push_back(argv[i]);
  std::optional<llvm::StringRef> silent[] = {llvm::StringRef(""), llvm::StringRef(""), llvm::StringRef("")};
  llvm::sys::ExecuteNoWait(exe, args, std::nullopt, silent, 0, nullptr, nullptr, nullptr,
                           /*DetachProcess=*/true);
}

// Drops what --min-severity hides and what an earlier translation unit
// already reported (a finding in a shared header shows up once per includer).
void selectShown(std::vector<TuResult>& results, rules::Severity minSeverity, unsigned& hidden) {
  std::set<std::tuple<std::string, std::string, unsigned, std::string>> seen;
  for (TuResult& tu : results) {
    std::vector<clang::tidy::ClangTidyError> shown;
    for (auto& e : tu.errors) {
      if (!isCompilerError(e) && severityOf(e.DiagLevel) < minSeverity) {
        ++hidden;
        continue;
      }
      auto key = std::make_tuple(e.DiagnosticName, absolutePath(e.Message.FilePath, e.BuildDirectory),
                                 e.Message.FileOffset, e.Message.Message);
      if (seen.insert(key).second) shown.push_back(std::move(e));
    }
    tu.errors = std::move(shown);
  }
}

struct Tally {
  unsigned bySeverity[3] = {0, 0, 0};
  unsigned parseFailures = 0;
  unsigned cached = 0;
};

Tally tally(const std::vector<TuResult>& results) {
  Tally t;
  for (const TuResult& tu : results) {
    t.parseFailures += tu.parseFailed();
    t.cached += tu.fromCache;
    for (const auto& e : tu.errors)
      if (!isCompilerError(e)) ++t.bySeverity[static_cast<int>(severityOf(e.DiagLevel))];
  }
  return t;
}

std::string count(unsigned n, llvm::StringRef noun) {
  return std::to_string(n) + " " + noun.str() + (n == 1 ? "" : "s");
}

void printSummary(const Tally& t, unsigned hidden, size_t files, const LintOptions& opts) {
  llvm::errs() << "nosync-lint: " << count(files, "file");
  if (t.cached) llvm::errs() << " (" << t.cached << " from cache)";
  llvm::errs() << ": " << count(t.bySeverity[2], "error") << ", " << count(t.bySeverity[1], "warning") << ", "
               << count(t.bySeverity[0], "note");
  if (hidden && opts.minSeverity > rules::Severity::Note)
    llvm::errs() << "; " << count(hidden, "low-severity finding") << " hidden (--min-severity=note shows them)";
  llvm::errs() << "\n";
}

void writeFindings(const std::vector<TuResult>& results, const LintOptions& opts, const std::string& docsDir,
                   bool parseFailed) {
  if (opts.format == OutputFormat::Text) {
    for (const TuResult& tu : results) writeText(tu, opts.color);
    return;
  }
  LineIndex lines;
  std::vector<Finding> findings;
  for (const TuResult& tu : results)
    for (const auto& e : tu.errors) findings.push_back(toFinding(e, lines));
  if (opts.format == OutputFormat::Json) {
    writeJson(findings, llvm::outs());
    return;
  }
  SarifContext ctx;
  const TuResult& first = results.front();
  ctx.srcRoot = first.config->rootDir.empty() ? projectRootFor(first.file) : first.config->rootDir;
  ctx.docsUri = std::string(NOSYNC_RULE_DOCS_URL).empty() ? (docsDir.empty() ? "" : fileUri(docsDir))
                                                          : NOSYNC_RULE_DOCS_URL;
  ctx.executionSuccessful = !parseFailed;
  writeSarif(findings, ctx, llvm::outs());
}

int handleFixes(const std::vector<TuResult>& results, const LintOptions& opts) {
  std::vector<clang::tidy::ClangTidyError> all;
  for (const TuResult& tu : results)
    for (const auto& e : tu.errors)
      if (!isCompilerError(e)) all.push_back(e);
  if (!opts.exportFixes.empty())
    if (llvm::Error err = exportFixes(opts.exportFixes, results.front().file, all))
      return usageError(llvm::toString(std::move(err)));
  if (opts.fix) {
    auto summary = applyFixes(all);
    if (!summary) return usageError(llvm::toString(summary.takeError()));
    if (!opts.quiet) {
      llvm::errs() << "nosync-lint: applied the fixes of " << summary->applied << " findings to " << summary->files
                   << (summary->files == 1 ? " file" : " files");
      if (summary->conflicts) llvm::errs() << "; " << summary->conflicts << " skipped (overlapping edits)";
      llvm::errs() << "\n";
    }
  }
  return kClean;
}

// The one-shot commands that do not lint: --help, --version, --list-rules, --explain.
std::optional<int> runInfoCommand(const LintOptions& opts, const char* argv0) {
  if (opts.help) {
    llvm::outs() << usageText();
    return kClean;
  }
  if (opts.version) {
    llvm::outs() << "nosync-lint " << NOSYNC_VERSION << " (Clang/LLVM " << NOSYNC_LLVM_VERSION << ")\n";
    return kClean;
  }
  if (opts.listRules) {
    listRules(llvm::outs());
    return kClean;
  }
  if (!opts.explainRule.empty())
    return explainRule(opts.explainRule, findDocsDir(argv0), llvm::outs()) ? kClean : kUsage;
  return std::nullopt;
}

}  // namespace

int lintMain(int argc, const char* const* argv) {
  std::string error;
  auto parsed = parseCommandLine(argc, argv, error);
  if (!parsed) return usageError(error);
  const LintOptions& opts = *parsed;
  if (auto rc = runInfoCommand(opts, argv[0])) return *rc;
  if (opts.files.empty()) return usageError("no input files (see --help)");
  if (!opts.checks.empty())
    if (auto bad = unknownCheckGlob(opts.checks))
      return usageError("--checks: '" + *bad + "' matches no rule (see --list-rules)");

  CompileDatabases dbs(opts.compileArgs, opts.haveCompileArgs, opts.buildPath);
  ConfigDiscovery configs(opts.configFile);
  std::vector<std::string> problems;
  std::vector<LintJob> jobs = planJobs(opts.files, dbs, configs, problems);
  if (!problems.empty()) {
    llvm::StringSet<> printed;
    for (const auto& p : problems)
      if (printed.insert(p).second) llvm::errs() << "nosync-lint: error: " << p << "\n";
    return kUsage;
  }

  CommandLineOverrides overrides{opts.checks, opts.color};
  if (enabledChecks(*jobs.front().config, jobs.front().file, overrides).empty())
    llvm::errs() << "nosync-lint: warning: no checks are enabled (see --checks and the config file); "
                    "only parse errors will be reported\n";

  std::optional<PreambleCache> preambles;
  std::optional<ResultCache> cache;
  if (opts.useCache) {
    llvm::SmallString<256> dir(opts.cacheDir.empty() ? defaultCacheDir(jobs) : opts.cacheDir);
    llvm::sys::fs::make_absolute(dir);
    // Fix-its that add an #include learn a file's includes from preprocessor
    // callbacks, which a preamble's skipped block never reaches: with --fix
    // or --export-fixes every file is parsed whole.
    bool rewrites = opts.fix || !opts.exportFixes.empty();
    if ((opts.preamble != LintOptions::PreambleMode::Off && !rewrites) || opts.buildPreamblesOnly)
      preambles.emplace(std::string(dir), opts.preambleLimitMiB << 20,
                        opts.preamble == LintOptions::PreambleMode::Auto && !opts.buildPreamblesOnly
                            ? PreambleCache::Build::Later
                            : PreambleCache::Build::Wait);
    cache.emplace(std::string(dir), ResultCache::binaryIdentity(argv[0]), preambles ? &*preambles : nullptr);
  }
  if (opts.buildPreamblesOnly) {
    if (preambles) buildPreambles(jobs, overrides, *preambles);
    return kClean;
  }
  std::vector<TuResult> results = lintAll(jobs, opts, overrides, cache ? &*cache : nullptr);
  if (preambles && preambles->pendingBuilds()) startPreambleBuild(argc, argv);

  std::vector<std::string> linted;
  for (const TuResult& tu : results) linted.push_back(tu.file);
  unsigned recontexted = applyProjectContext(results, scanProject(linted));
  unsigned hidden = 0;
  selectShown(results, opts.minSeverity, hidden);
  Tally t = tally(results);
  writeFindings(results, opts, findDocsDir(argv[0]), t.parseFailures > 0);
  llvm::outs().flush();
  if (int rc = handleFixes(results, opts); rc != kClean) return rc;
  if (!opts.quiet) printSummary(t, hidden, results.size(), opts);
  if (!opts.quiet && recontexted)
    llvm::errs() << "nosync-lint: " << count(recontexted, "finding")
                 << " re-decided with callers from other files of this run (JSON: context)\n";
  for (const TuResult& tu : results)
    if (unsigned n = tu.compilerErrors())
      llvm::errs() << "nosync-lint: error: " << tu.file << " parsed with " << count(n, "error")
                   << " (compiler errors above); findings in the parts that parsed are reported\n";

  if (t.parseFailures) return kParseFailure;
  for (int s = static_cast<int>(opts.failOn); s <= static_cast<int>(rules::Severity::Error); ++s)
    if (t.bySeverity[s]) return kFindings;
  return kClean;
}

}  // namespace nosync::lint
