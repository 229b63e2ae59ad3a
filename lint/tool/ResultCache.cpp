#include "ResultCache.h"

#include "CompileDatabase.h"

#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/YAMLTraits.h"

#include <atomic>
#include <set>

namespace nosync::lint {
namespace {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

// Bump when the entry format or the meaning of a key changes.
// 2: with the call graph; 3: a training driver in the facts; 4: evaluation loops; 5: debug-only asserts;
// 6: constructions as call edges, dead branches and tiny loops left out of the call graph, no debug-only context
// 7: cold paths; 8: dead branches in the statement facts, thread entries; 9: lazy one-time initialization
constexpr const char* kEntryFormat = "nosync-lint-cache-9";

std::optional<std::string> fileDigest(llvm::StringRef file) {
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf) return std::nullopt;
  return llvm::toHex(llvm::SHA1::hash(llvm::arrayRefFromStringRef((*buf)->getBuffer())));
}

// Headers listed in a make-style dependency file, minus the main file.
std::vector<std::string> parseDepFile(llvm::StringRef text, llvm::StringRef mainFile) {
  std::vector<std::string> deps;
  text = text.split(':').second;  // drop the target
  std::string current;
  auto flush = [&] {
    if (!current.empty() && current != mainFile) deps.push_back(current);
    current.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      flush();  // line continuation
    } else if (c == '\\' && i + 1 < text.size()) {
      current += text[++i];  // escaped space or '#'
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      flush();
    } else {
      current += c;
    }
  }
  flush();
  return deps;
}

// Forwards to the real database and asks the compiler for a dependency file
// (-Wp,-MMD survives ClangTool's stripping of -M* options).
class DepFileCompilations : public clang::tooling::CompilationDatabase {
 public:
  DepFileCompilations(const CompilationDatabase& base, std::string depFile)
      : base_(base), depFile_(std::move(depFile)) {}
  std::vector<clang::tooling::CompileCommand> getCompileCommands(llvm::StringRef file) const override {
    auto cmds = base_.getCompileCommands(file);
    for (auto& c : cmds) c.CommandLine.push_back("-Wp,-MMD," + depFile_);
    return cmds;
  }
  std::vector<std::string> getAllFiles() const override { return base_.getAllFiles(); }

 private:
  const CompilationDatabase& base_;
  std::string depFile_;
};

// Creates the directory with a .gitignore of "*" in it (as pytest does for
// .pytest_cache), so the cache never shows up in `git status`.
void createCacheDir(llvm::StringRef dir) {
  if (fs::exists(dir)) return;
  if (fs::create_directories(dir)) return;
  llvm::SmallString<256> ignore(dir);
  path::append(ignore, ".gitignore");
  std::error_code ec;
  llvm::raw_fd_ostream out(ignore, ec);
  if (!ec) out << "# created by nosync-lint\n*\n";
}

std::string serializeErrors(const std::string& file, const std::vector<clang::tidy::ClangTidyError>& errors) {
  clang::tooling::TranslationUnitDiagnostics tu;
  tu.MainSourceFile = file;
  tu.Diagnostics.assign(errors.begin(), errors.end());
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::yaml::Output yaml(os);
  yaml << tu;
  return out;
}

std::optional<std::vector<clang::tidy::ClangTidyError>> parseErrors(llvm::StringRef text) {
  clang::tooling::TranslationUnitDiagnostics tu;
  llvm::yaml::Input yaml(text);
  yaml >> tu;
  if (yaml.error()) return std::nullopt;
  std::vector<clang::tidy::ClangTidyError> errors;
  for (auto& d : tu.Diagnostics) {
    clang::tidy::ClangTidyError e(d.DiagnosticName, d.DiagLevel, d.BuildDirectory, /*IsWarningAsError=*/false);
    e.Message = d.Message;
    e.Notes = d.Notes;
    errors.push_back(std::move(e));
  }
  return errors;
}

// A call as [caller, callee, "<in loop><throttled><caller cold><caller main><evaluation loop>", site,
// argument places].
llvm::json::Array serializeCalls(const std::vector<ExportedCall>& calls) {
  llvm::json::Array out;
  for (const ExportedCall& c : calls) {
    std::string flags;
    for (bool b : {c.InLoop, c.Throttled, c.CallerIsCold, c.CallerRunsOnce, c.InEvalLoop})
      flags.push_back(b ? '1' : '0');
    out.push_back(llvm::json::Array{c.Caller, c.Callee, flags, c.At, c.ArgPlaces});
  }
  return out;
}

std::optional<std::vector<ExportedCall>> parseCalls(const llvm::json::Array& calls) {
  std::vector<ExportedCall> out;
  for (const llvm::json::Value& v : calls) {
    const llvm::json::Array* a = v.getAsArray();
    if (!a || a->size() != 5) return std::nullopt;
    auto caller = (*a)[0].getAsString(), callee = (*a)[1].getAsString(), flags = (*a)[2].getAsString(),
         site = (*a)[3].getAsString(), args = (*a)[4].getAsString();
    if (!caller || !callee || !flags || !site || !args || flags->size() != 5) return std::nullopt;
    out.push_back({caller->str(), callee->str(), (*flags)[0] == '1', (*flags)[1] == '1', (*flags)[2] == '1',
                   (*flags)[3] == '1', site->str(), args->str(), (*flags)[4] == '1'});
  }
  return out;
}

}  // namespace

std::string ResultCache::binaryIdentity(const char* argv0) {
  static int anchor;
  std::string exe = fs::getMainExecutable(argv0, &anchor);
  fs::file_status st;
  if (fs::status(exe, st)) return exe;
  return exe + "|" + std::to_string(st.getSize()) + "|" +
         std::to_string(st.getLastModificationTime().time_since_epoch().count());
}

std::string ResultCache::keyFor(const LintJob& job, const CommandLineOverrides& overrides) const {
  llvm::SHA1 h;
  auto add = [&](llvm::StringRef s) {
    h.update(s);
    h.update(llvm::StringRef("\0", 1));
  };
  add(kEntryFormat);
  add(NOSYNC_VERSION);
  add(NOSYNC_LLVM_VERSION);
  add(toolIdentity_);
  add(job.file);
  add(fileDigest(job.file).value_or("unreadable"));
  for (const auto& arg : CompileDatabases::commandFor(*job.db, job.file)) add(arg);
  add(job.config->source);
  add(job.config->digest);
  add(overrides.checks);
  return llvm::toHex(h.final());
}

std::string ResultCache::entryPath(const std::string& key) const {
  llvm::SmallString<256> p(dir_);
  path::append(p, key + ".json");
  return std::string(p);
}

std::optional<ResultCache::Entry> ResultCache::lookup(const LintJob& job, const CommandLineOverrides& overrides) {
  auto buf = llvm::MemoryBuffer::getFile(entryPath(keyFor(job, overrides)));
  if (!buf) return std::nullopt;
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return std::nullopt;  // a damaged entry is a miss, and is overwritten
  }
  const llvm::json::Object* entry = json->getAsObject();
  const llvm::json::Array* deps = entry ? entry->getArray("deps") : nullptr;
  auto diags = entry ? entry->getString("diagnostics") : std::nullopt;
  const llvm::json::Array* calls = entry ? entry->getArray("calls") : nullptr;
  std::optional<bool> namesCuda = entry ? entry->getBoolean("names_cuda") : std::nullopt;
  std::optional<bool> hasMain = entry ? entry->getBoolean("has_main") : std::nullopt;
  std::optional<bool> trains = entry ? entry->getBoolean("trains") : std::nullopt;
  if (!deps || !diags || !calls || !namesCuda || !hasMain || !trains) return std::nullopt;  // damaged, or from an older nosync-lint
  for (const llvm::json::Value& d : *deps) {
    const llvm::json::Object* dep = d.getAsObject();
    auto file = dep ? dep->getString("file") : std::nullopt;
    auto sha1 = dep ? dep->getString("sha1") : std::nullopt;
    if (!file || !sha1 || fileDigest(*file) != sha1->str()) return std::nullopt;
  }
  auto errors = parseErrors(*diags);
  auto edges = parseCalls(*calls);
  if (!errors || !edges) return std::nullopt;
  return Entry{std::move(*errors), std::move(*edges), *namesCuda, *hasMain, *trains};
}

TuResult ResultCache::lintAndStore(const LintJob& job, const CommandLineOverrides& overrides) {
  std::string key = keyFor(job, overrides);  // before parsing: the file may change meanwhile
  static std::atomic<unsigned> counter{0};
  createCacheDir(dir_);
  llvm::SmallString<256> depFile(dir_);
  path::append(depFile, "deps-" + std::to_string(llvm::sys::Process::getProcessId()) + "-" +
                            std::to_string(counter++) + ".d");
  DepFileCompilations db(*job.db, std::string(depFile));
  // A header parsed through its includer starts with the includer's text, not
  // with its own leading block: no preamble stands for that.
  TuResult result =
      lintTranslationUnit(job.file, db, *job.config, overrides, job.includer.empty() ? preambles_ : nullptr);

  auto depText = llvm::MemoryBuffer::getFile(depFile);
  fs::remove(depFile);
  // Results of a failed parse are not kept: the next run should retry.
  if (!depText || result.parseFailed()) return result;
  // Dependency paths are as the compiler opened them: relative to the compile
  // command's directory.
  auto cmds = job.db->getCompileCommands(job.file);
  std::string cmdDir = cmds.empty() ? std::string() : cmds.front().Directory;
  std::vector<std::string> depFiles = parseDepFile((*depText)->getBuffer(), job.file);
  depFiles.insert(depFiles.end(), result.preambleHeaders.begin(), result.preambleHeaders.end());
  llvm::json::Array deps;
  std::set<std::string> listed;
  for (const std::string& dep : depFiles) {
    llvm::SmallString<256> abs(dep);
    if (!path::is_absolute(abs)) {
      if (!cmdDir.empty()) fs::make_absolute(cmdDir, abs);
      fs::make_absolute(abs);
    }
    path::remove_dots(abs, /*remove_dot_dot=*/true);
    // The preamble's own files are the cache's business, not the result's.
    if (abs == job.file || abs.starts_with(dir_ + "/") || !listed.insert(std::string(abs)).second) continue;
    auto sha1 = fileDigest(abs);
    if (!sha1) return result;  // a header vanished mid-run: do not cache
    deps.push_back(llvm::json::Object{{"file", std::string(abs)}, {"sha1", *sha1}});
  }
  llvm::json::Object entry{{"file", job.file},
                           {"deps", std::move(deps)},
                           {"diagnostics", serializeErrors(job.file, result.errors)},
                           {"calls", serializeCalls(result.calls)},
                           {"names_cuda", result.namesCuda},
                           {"has_main", result.hasMain},
                           {"trains", result.trains}};
  // Write then rename, so that a concurrent run never reads half an entry.
  std::string finalPath = entryPath(key);
  std::string tmpPath = finalPath + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(tmpPath, ec);
    if (ec) return result;  // an unwritable cache only costs speed
    out << llvm::json::Value(std::move(entry));
  }
  if (fs::rename(tmpPath, finalPath)) fs::remove(tmpPath);
  return result;
}

}  // namespace nosync::lint
