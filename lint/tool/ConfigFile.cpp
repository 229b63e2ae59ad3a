#include "ConfigFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

namespace nosync::lint {
namespace {

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;
namespace yaml = llvm::yaml;

constexpr const char* kNosyncFile = ".nosync.yaml";
constexpr const char* kClangTidyFile = ".clang-tidy";
constexpr llvm::StringLiteral kSeveritySuffix = ".Severity";

llvm::Error configError(llvm::StringRef file, const llvm::Twine& what) {
  return llvm::createStringError("invalid config " + file + ": " + what);
}

std::string contentDigest(llvm::StringRef text) {
  return llvm::toHex(llvm::SHA1::hash(llvm::arrayRefFromStringRef(text)));
}

// YAML scalar text, or an error naming the key that should have held one.
llvm::Expected<std::string> scalarOf(yaml::Node* node, llvm::StringRef file, llvm::StringRef key) {
  auto* s = llvm::dyn_cast_or_null<yaml::ScalarNode>(node);
  if (!s) return configError(file, "'" + key + "' must be a string");
  llvm::SmallString<64> storage;
  return s->getValue(storage).str();
}

llvm::Error setSeverity(LintConfig& cfg, llvm::StringRef file, llvm::StringRef rule, llvm::StringRef value) {
  if (!rules::find(std::string_view(rule.data(), rule.size())))
    return configError(file, "unknown rule '" + rule + "' (see nosync-lint --list-rules)");
  if (value != "note" && value != "warning" && value != "error")
    return configError(file, "severity of " + rule + " must be note, warning or error, not '" + value + "'");
  // The check reads its own Severity option (so clang-tidy --load honours it
  // too); here it is only validated, with an error that names the file.
  cfg.tidy.CheckOptions[(rule + kSeveritySuffix).str()] = clang::tidy::ClangTidyOptions::ClangTidyValue(value);
  return llvm::Error::success();
}

// Iterates a YAML mapping, calling fn(key, valueNode); stops at the first error.
template <typename Fn>
llvm::Error forEachKey(yaml::Node* node, llvm::StringRef file, llvm::StringRef what, Fn fn) {
  auto* map = llvm::dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map) return configError(file, what + " must be a mapping");
  for (auto& kv : *map) {
    auto key = scalarOf(kv.getKey(), file, "key");
    if (!key) return key.takeError();
    if (auto err = fn(*key, kv.getValue())) return err;
  }
  return llvm::Error::success();
}

// CompileFlags: a list of arguments, or one string split like a shell would.
llvm::Error parseCompileFlags(yaml::Node* node, llvm::StringRef file, std::vector<std::string>& out) {
  if (auto* seq = llvm::dyn_cast_or_null<yaml::SequenceNode>(node)) {
    for (yaml::Node& item : *seq) {
      auto v = scalarOf(&item, file, "CompileFlags entries");
      if (!v) return v.takeError();
      out.push_back(*v);
    }
    return llvm::Error::success();
  }
  auto v = scalarOf(node, file, "CompileFlags");
  if (!v) return configError(file, "'CompileFlags' must be a list of arguments or a string");
  llvm::BumpPtrAllocator alloc;
  llvm::StringSaver saver(alloc);
  llvm::SmallVector<const char*> argv;
  llvm::cl::TokenizeGNUCommandLine(*v, saver, argv);
  out.assign(argv.begin(), argv.end());
  return llvm::Error::success();
}

// .nosync.yaml: Checks, Severity, CheckOptions, HeaderFilterRegex, CompileFlags. Unknown
// keys are errors: a typo in a linter config should not silently do nothing.
llvm::Error parseNosyncYaml(llvm::StringRef text, llvm::StringRef file, LintConfig& cfg) {
  llvm::SourceMgr sm;
  std::string diag;
  llvm::raw_string_ostream diagOS(diag);
  sm.setDiagHandler([](const llvm::SMDiagnostic& d, void* out) {
    auto& os = *static_cast<llvm::raw_string_ostream*>(out);
    if (os.str().empty()) os << "line " << d.getLineNo() << ": " << d.getMessage();
  }, &diagOS);
  yaml::Stream stream(text, sm);
  auto doc = stream.begin();
  if (doc == stream.end() || !doc->getRoot() || llvm::isa<yaml::NullNode>(doc->getRoot()))
    return llvm::Error::success();  // an empty file means defaults
  yaml::Node* root = doc->getRoot();
  if (stream.failed() || !diag.empty()) return configError(file, diagOS.str());
  auto err = forEachKey(root, file, "the top level", [&](llvm::StringRef key, yaml::Node* value) -> llvm::Error {
    if (key == "Checks" || key == "HeaderFilterRegex") {
      auto v = scalarOf(value, file, key);
      if (!v) return v.takeError();
      (key == "Checks" ? cfg.tidy.Checks : cfg.tidy.HeaderFilterRegex) = *v;
      return llvm::Error::success();
    }
    if (key == "CompileFlags") return parseCompileFlags(value, file, cfg.compileFlags);
    if (key == "Severity")
      return forEachKey(value, file, "Severity", [&](llvm::StringRef rule, yaml::Node* v) -> llvm::Error {
        auto s = scalarOf(v, file, rule);
        if (!s) return s.takeError();
        return setSeverity(cfg, file, rule, *s);
      });
    if (key == "CheckOptions")
      return forEachKey(value, file, "CheckOptions", [&](llvm::StringRef name, yaml::Node* v) -> llvm::Error {
        auto s = scalarOf(v, file, name);
        if (!s) return s.takeError();
        cfg.tidy.CheckOptions[name] = clang::tidy::ClangTidyOptions::ClangTidyValue(*s);
        return llvm::Error::success();
      });
    return configError(file, "unknown key '" + key +
                                 "' (expected Checks, Severity, CheckOptions, HeaderFilterRegex or CompileFlags)");
  });
  // The scanner reports syntax errors lazily, while the nodes are walked; a
  // syntax error explains a "must be a string" better than that message does.
  if (stream.failed() || !diagOS.str().empty()) {
    llvm::consumeError(std::move(err));
    return configError(file, diagOS.str().empty() ? "not valid YAML" : diagOS.str());
  }
  return err;
}

// `text` without the top-level key on 1-based `line` and its indented value.
std::string withoutTopLevelKey(llvm::StringRef text, unsigned line) {
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n');
  std::string out;
  bool inValue = false;
  for (unsigned i = 0; i < lines.size(); ++i) {
    if (i + 1 == line) {
      inValue = true;
      continue;
    }
    if (inValue && !lines[i].empty() && (lines[i].front() == ' ' || lines[i].front() == '\t')) continue;
    inValue = false;
    out += lines[i].str() + "\n";
  }
  return out;
}

// A .clang-tidy contributes its Checks and its nosync-* CheckOptions;
// '<rule>.Severity' options are validated like .nosync.yaml's Severity. It is
// the project's file, written for some clang-tidy: a top-level key this
// clang-tidy does not know (AnalyzeTemporaryDtors, gone in LLVM 18) is
// skipped with a warning, as clang-tidy skips such a file, not a fatal error.
llvm::Error parseClangTidyFile(llvm::StringRef text, llvm::StringRef file, LintConfig& cfg) {
  std::string current = text.str();
  for (int attempt = 0;; ++attempt) {
    std::string firstDiag;
    unsigned diagLine = 0;
    auto parsed = clang::tidy::parseConfigurationWithDiags(
        llvm::MemoryBufferRef(current, file), [&](const llvm::SMDiagnostic& d) {
          if (!firstDiag.empty()) return;
          firstDiag = "line " + std::to_string(d.getLineNo()) + ": " + d.getMessage().str();
          if (d.getMessage().starts_with("unknown key") && d.getColumnNo() == 0) diagLine = d.getLineNo();
        });
    if (parsed) break;
    if (!diagLine || attempt >= 8)
      return configError(file, firstDiag.empty() ? parsed.getError().message() : firstDiag);
    llvm::errs() << "nosync-lint: warning: " << file << ": " << firstDiag << "; ignored\n";
    current = withoutTopLevelKey(current, diagLine);
  }
  auto parsed = clang::tidy::parseConfigurationWithDiags(llvm::MemoryBufferRef(current, file),
                                                         [](const llvm::SMDiagnostic&) {});
  if (!parsed) return configError(file, parsed.getError().message());
  cfg.tidy.Checks = parsed->Checks;
  for (const auto& opt : parsed->CheckOptions) {
    llvm::StringRef key = opt.getKey();
    if (!key.starts_with("nosync-")) continue;
    if (key.ends_with(kSeveritySuffix)) {
      if (auto err = setSeverity(cfg, file, key.drop_back(kSeveritySuffix.size()), opt.getValue().Value))
        return err;
    } else {
      cfg.tidy.CheckOptions[key] = opt.getValue();
    }
  }
  return llvm::Error::success();
}

// Whether a config file's text says "nosync" anywhere (read for a file that
// did not parse; an unreadable one counts as saying it).
bool namesNosync(llvm::StringRef file) {
  auto buf = llvm::MemoryBuffer::getFile(file);
  return !buf || (*buf)->getBuffer().contains("nosync");
}

}  // namespace

bool mentionsNosync(const clang::tidy::ClangTidyOptions& opts) {
  if (opts.Checks && llvm::StringRef(*opts.Checks).contains("nosync")) return true;
  for (const auto& opt : opts.CheckOptions)
    if (opt.getKey().starts_with("nosync-")) return true;
  return false;
}

llvm::Expected<LintConfig> readConfigFile(llvm::StringRef file) {
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf) return configError(file, buf.getError().message());
  LintConfig cfg;
  cfg.source = file.str();
  cfg.rootDir = path::parent_path(file).str();
  llvm::StringRef text = (*buf)->getBuffer();
  cfg.digest = contentDigest(text);
  llvm::Error err = path::filename(file) == kClangTidyFile ? parseClangTidyFile(text, file, cfg)
                                                           : parseNosyncYaml(text, file, cfg);
  if (err) return std::move(err);
  return cfg;
}

std::string projectRootFor(llvm::StringRef absFile) {
  for (llvm::StringRef dir = path::parent_path(absFile); !dir.empty(); dir = path::parent_path(dir)) {
    llvm::SmallString<256> git(dir);
    path::append(git, ".git");
    if (fs::exists(git)) return dir.str();
  }
  return path::parent_path(absFile).str();
}

ConfigDiscovery::ConfigDiscovery(std::string explicitFile) : explicitFile_(std::move(explicitFile)) {}

llvm::Expected<const LintConfig*> ConfigDiscovery::forDirectory(llvm::StringRef dir) {
  auto it = byDir_.find(dir);
  if (it != byDir_.end()) return it->second.get();
  std::unique_ptr<LintConfig> found;
  for (const char* name : {kNosyncFile, kClangTidyFile}) {
    llvm::SmallString<256> candidate(dir);
    path::append(candidate, name);
    if (!fs::exists(candidate)) continue;
    auto cfg = readConfigFile(candidate);
    if (!cfg && name == kClangTidyFile && !namesNosync(candidate)) {
      // The project's own clang-tidy settings, broken for this clang-tidy
      // (an empty `CheckOptions:`) and about no nosync check: not ours to
      // reject, as clang-tidy would skip the file and go on.
      llvm::errs() << "nosync-lint: warning: " << llvm::toString(cfg.takeError())
                   << "; ignored (it configures no nosync check)\n";
      continue;
    }
    if (!cfg) return cfg.takeError();
    if (name == kClangTidyFile && !mentionsNosync(cfg->tidy)) continue;
    found = std::make_unique<LintConfig>(std::move(*cfg));
    break;
  }
  if (!found) {
    llvm::StringRef parent = path::parent_path(dir);
    if (parent.empty() || parent == dir) {
      found = std::make_unique<LintConfig>();  // built-in defaults
    } else {
      auto inherited = forDirectory(parent);
      if (!inherited) return inherited.takeError();
      found = std::make_unique<LintConfig>(**inherited);
    }
  }
  const LintConfig* raw = found.get();
  byDir_[dir] = std::move(found);
  return raw;
}

llvm::Expected<const LintConfig*> ConfigDiscovery::forFile(llvm::StringRef absFile) {
  if (!explicitFile_.empty()) {
    if (!explicitConfig_) {
      auto cfg = readConfigFile(explicitFile_);
      if (!cfg) return cfg.takeError();
      explicitConfig_ = std::make_unique<LintConfig>(std::move(*cfg));
    }
    return explicitConfig_.get();
  }
  return forDirectory(path::parent_path(absFile));
}

}  // namespace nosync::lint
