#include "CommandLine.h"

#include <cstdlib>
#include <string_view>

namespace nosync::lint {
namespace {

constexpr const char* kUsage = R"(usage: nosync-lint [options] <file>... [-- <compile args>]

Finds LibTorch code that makes the host wait for the GPU (nosync-* rules).

Compile flags come from, in this order: the arguments after `--`; the
compile_commands.json in the directory given by -p; else the first
compile_commands.json found in each file's directory or a parent of it, or in
a build/ or build/*/ directory beside them; else the CompileFlags of the
nearest .nosync.yaml. Headers (.h, .hpp, .cuh, ...) are C++ however the flags
arrive, and a -std older than C++17 is raised to it (LibTorch 2.x needs C++17;
said once on stderr). A header that cannot be parsed alone (a .tpp, .inl or
.ipp, or one that #errors unless another header included it) is parsed where a
file of its project includes it, with that file's text before the #include. An
#include that cannot be found is reported as an error and skipped: the rest of
the file is still linted.

A changed file is linted without parsing its leading block of #includes
again: that block (torch/torch.h, ...) is compiled once into a preamble, kept
in the cache directory and reused by every file that starts with the same
block and flags, until the block, a flag or a header it pulls in changes
(clangd does the same in memory). The findings are the same either way. The
first run of a block lints the file whole and builds its preamble in a
background process (see --preamble). A block that does not compile cleanly
(an #include not found) is parsed with the file; its preamble is tried again
when a header it pulled in changes, or a day later.

The files of one run are one project: a function called from a loop in any
of them is hot code, one called only once from main() or from setup/test code
is not, whichever file holds it; when none of them names a CUDA device, the
run is a CPU program and its findings are notes. The project's other C/C++
sources (under the enclosing git checkout or build root; vendored, build and
test directories skipped) are read as text for the calls the run cannot show:
a pre-commit run of one changed file still sees the loop in main.cpp that
calls it. In JSON and SARIF output
every finding has a `context`: what decided its severity (the loop, the
caller, the throttle).

options:
  -p <dir>               build directory holding compile_commands.json
  -j <N>                 lint N translation units in parallel (default: one
                         per core)
  --checks=<globs>       enable/disable rules, e.g. '-*,nosync-item' (applied
                         after the config file's Checks)
  --config-file=<file>   use this .nosync.yaml instead of searching for one
  --format=text|json|sarif
                         output format (default text: clang-style diagnostics)
  --min-severity=note|warning
                         lowest severity shown (default warning: low-severity
                         findings -- throttled logging, test and setup code --
                         are hidden; text output prints them as 'remark:')
  --fail-on=note|warning|error
                         lowest severity shown that makes the exit code 1
                         (default warning)
  --fix                  apply the fix-its of the shown findings (fixes that
                         change timing or semantics are on notes, never applied)
  --export-fixes=<file>  write the fixes as clang-apply-replacements YAML
  --no-cache             read and write no cache: every file is parsed whole
                         (no stored results, no preambles)
  --preamble=auto|wait|off
                         the stored preamble of each file's leading #include
                         block: auto (default) uses it and, when it is missing
                         or stale, lints the file whole and builds it in the
                         background for the next run; wait builds it first
                         (a first run then costs ~1.4x); off parses every
                         block with its file (results are still cached).
                         --fix and --export-fixes parse every file whole
  --preamble-cache-limit=<MiB>
                         disk the stored preambles may take before the least
                         recently used are deleted (default 4096)
  --cache-dir=<dir>      where results and preambles are cached (default:
                         .cache/nosync-lint in the directory of the nearest
                         .nosync.yaml, else of the enclosing git checkout)
  --color / --no-color   force colour on or off (default: on for a terminal)
  --quiet                no summary or progress lines on stderr
  --explain <rule>       print what a rule finds, why it costs, how to fix it
  --list-rules           list the rule catalog and exit
  --version              print versions and exit
  --help                 this text

configuration: the nearest .nosync.yaml above each file (keys: Checks,
Severity: {<rule>: note|warning|error}, CheckOptions, HeaderFilterRegex,
CompileFlags: [<arg>, ...]), or a
.clang-tidy whose Checks or CheckOptions mention nosync (a rule's severity is
then CheckOptions '<rule>.Severity'). A configured severity replaces the
rule's warning level; findings a check already lowered for their context
(throttled logging, test or setup code) stay notes. Findings in headers
outside the project (LibTorch, CUDA, system, virtualenvs) are never reported.
Suppress a finding with // NOLINT(nosync-item), // NOLINTNEXTLINE(nosync-*) or
a // NOLINTBEGIN(...) ... // NOLINTEND(...) block.

exit codes: 0 no finding at or above --fail-on, 1 findings, 2 usage or
configuration error, 3 a file could not be parsed (the findings in what did
parse are still reported)
)";

// Matches "--name=value" or "--name value"; advances i for the second form.
bool takeValue(std::string_view arg, std::string_view name, int argc, const char* const* argv, int& i,
               std::string& value, std::string& error) {
  if (arg == name) {
    if (i + 1 >= argc) {
      error = std::string(name) + " needs a value";
      return true;
    }
    value = argv[++i];
    return true;
  }
  if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
    value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  return false;
}

std::optional<OutputFormat> parseFormat(const std::string& s) {
  if (s == "text") return OutputFormat::Text;
  if (s == "json") return OutputFormat::Json;
  if (s == "sarif") return OutputFormat::Sarif;
  return std::nullopt;
}

}  // namespace

const char* usageText() { return kUsage; }

std::optional<Severity> parseSeverity(const std::string& name) {
  if (name == "note") return Severity::Note;
  if (name == "warning") return Severity::Warning;
  if (name == "error") return Severity::Error;
  return std::nullopt;
}

std::optional<LintOptions> parseCommandLine(int argc, const char* const* argv, std::string& error) {
  LintOptions o;
  for (int i = 1; i < argc && error.empty(); ++i) {
    std::string_view a = argv[i];
    std::string v;
    if (a == "--") {
      o.haveCompileArgs = true;
      o.compileArgs.assign(argv + i + 1, argv + argc);
      break;
    }
    if (takeValue(a, "-p", argc, argv, i, v, error)) {
      o.buildPath = v;
    } else if (takeValue(a, "-j", argc, argv, i, v, error)) {
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 256) error = "-j needs a number from 1 to 256, not '" + v + "'";
      o.jobs = static_cast<unsigned>(n);
    } else if (takeValue(a, "--checks", argc, argv, i, v, error)) {
      o.checks = v;
    } else if (takeValue(a, "--config-file", argc, argv, i, v, error)) {
      o.configFile = v;
    } else if (takeValue(a, "--explain", argc, argv, i, v, error)) {
      o.explainRule = v;
    } else if (takeValue(a, "--export-fixes", argc, argv, i, v, error)) {
      o.exportFixes = v;
    } else if (takeValue(a, "--cache-dir", argc, argv, i, v, error)) {
      o.cacheDir = v;
    } else if (takeValue(a, "--format", argc, argv, i, v, error)) {
      auto f = parseFormat(v);
      if (!f) error = "--format must be text, json or sarif, not '" + v + "'";
      else o.format = *f;
    } else if (takeValue(a, "--min-severity", argc, argv, i, v, error)) {
      auto s = parseSeverity(v);
      if (!s || *s == Severity::Error) error = "--min-severity must be note or warning, not '" + v + "'";
      else o.minSeverity = *s;
    } else if (takeValue(a, "--fail-on", argc, argv, i, v, error)) {
      auto s = parseSeverity(v);
      if (!s) error = "--fail-on must be note, warning or error, not '" + v + "'";
      else o.failOn = *s;
    } else if (a == "--fix") {
      o.fix = true;
    } else if (takeValue(a, "--preamble-cache-limit", argc, argv, i, v, error)) {
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 0) error = "--preamble-cache-limit needs a size in MiB, not '" + v + "'";
      o.preambleLimitMiB = static_cast<uint64_t>(n);
    } else if (a == "--no-cache") {
      o.useCache = false;
    } else if (takeValue(a, "--preamble", argc, argv, i, v, error)) {
      if (v == "auto") o.preamble = LintOptions::PreambleMode::Auto;
      else if (v == "wait") o.preamble = LintOptions::PreambleMode::Wait;
      else if (v == "off") o.preamble = LintOptions::PreambleMode::Off;
      else error = "--preamble must be auto, wait or off, not '" + v + "'";
    } else if (a == kBuildPreamblesOnly) {
      o.buildPreamblesOnly = true;
    } else if (a == "--color") {
      o.color = true;
    } else if (a == "--no-color") {
      o.color = false;
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "--list-rules") {
      o.listRules = true;
    } else if (a == "--version") {
      o.version = true;
    } else if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (!a.empty() && a[0] == '-') {
      error = "unknown option '" + std::string(a) + "' (see --help)";
    } else {
      o.files.emplace_back(a);
    }
  }
  if (!error.empty()) return std::nullopt;
  return o;
}

}  // namespace nosync::lint
