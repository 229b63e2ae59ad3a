// nosync-lint entry point: `nosync-lint [options] <files...> [-- <compile args>]`.
#include "nosync/rules.h"

#include "clang/Frontend/FrontendActions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace {

enum ExitCode { kClean = 0, kFindings = 1, kUsage = 2, kParseFailure = 3 };

constexpr const char* kUsageText =
    "usage: nosync-lint [options] <file>... [-- <compile args>]\n"
    "\n"
    "Finds LibTorch code that makes the host wait for the GPU.\n"
    "\n"
    "options:\n"
    "  -p <dir>       build directory holding compile_commands.json\n"
    "  --list-rules   list the rule catalog and exit\n"
    "  --version      print versions and exit\n"
    "  --help         this text\n"
    "\n"
    "exit codes: 0 clean, 1 findings, 2 usage error, 3 a file could not be parsed\n";

struct Args {
  std::vector<std::string> files;
  std::vector<std::string> compile_args;
  std::string build_path;
  bool have_dashdash = false;
  bool list_rules = false;
  bool version = false;
  bool help = false;
};

// Returns false after printing a one-line error for an unknown option.
bool parse_args(int argc, char** argv, Args& out) {
  bool after_dashdash = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (after_dashdash) {
      out.compile_args.push_back(a);
    } else if (a == "--") {
      after_dashdash = out.have_dashdash = true;
    } else if (a == "-p" || a.rfind("-p=", 0) == 0) {
      if (a == "-p" && i + 1 >= argc) {
        llvm::errs() << "nosync-lint: error: -p needs a build directory\n";
        return false;
      }
      out.build_path = a == "-p" ? argv[++i] : a.substr(3);
    } else if (a == "--list-rules") {
      out.list_rules = true;
    } else if (a == "--version") {
      out.version = true;
    } else if (a == "--help" || a == "-h") {
      out.help = true;
    } else if (!a.empty() && a[0] == '-') {
      llvm::errs() << "nosync-lint: error: unknown option '" << a << "' (see --help)\n";
      return false;
    } else {
      out.files.push_back(a);
    }
  }
  return true;
}

void list_rules() {
  for (const auto& r : nosync::rules::kRules)
    llvm::outs() << r.id << "  [" << nosync::rules::to_string(r.severity) << ", "
                 << nosync::rules::to_string(r.where) << "]  " << r.summary << "\n";
}

int parse_files(const Args& args) {
  for (const auto& f : args.files) {
    if (!llvm::sys::fs::exists(f)) {
      llvm::errs() << "nosync-lint: error: no such file: " << f << "\n";
      return kUsage;
    }
  }
  std::unique_ptr<clang::tooling::CompilationDatabase> db;
  std::string err;
  if (args.have_dashdash) {
    db = std::make_unique<clang::tooling::FixedCompilationDatabase>(".", args.compile_args);
  } else if (!args.build_path.empty()) {
    db = clang::tooling::CompilationDatabase::loadFromDirectory(args.build_path, err);
    if (!db) {
      llvm::errs() << "nosync-lint: error: cannot load a compile database from '" << args.build_path
                   << "': " << err << "\n";
      return kUsage;
    }
  } else {
    db = clang::tooling::CompilationDatabase::autoDetectFromSource(args.files.front(), err);
    if (!db) {
      llvm::errs() << "nosync-lint: error: no compile_commands.json found above " << args.files.front()
                   << "; pass -p <build dir> or compile flags after --\n";
      return kUsage;
    }
  }
  clang::tooling::ClangTool tool(*db, args.files);
  tool.appendArgumentsAdjuster(clang::tooling::getInsertArgumentAdjuster(
      "-resource-dir=" NOSYNC_CLANG_RESOURCE_DIR, clang::tooling::ArgumentInsertPosition::END));
  int rc = tool.run(clang::tooling::newFrontendActionFactory<clang::SyntaxOnlyAction>().get());
  if (rc != 0) {
    llvm::errs() << "nosync-lint: error: could not parse every file (see the compiler errors above)\n";
    return kParseFailure;
  }
  return kClean;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) return kUsage;
  if (args.help) {
    llvm::outs() << kUsageText;
    return kClean;
  }
  if (args.version) {
    llvm::outs() << "nosync-lint " << NOSYNC_VERSION << " (Clang/LLVM " << NOSYNC_LLVM_VERSION << ")\n";
    return kClean;
  }
  if (args.list_rules) {
    list_rules();
    return kClean;
  }
  if (args.files.empty()) {
    llvm::errs() << "nosync-lint: error: no input files (see --help)\n";
    return kUsage;
  }
  return parse_files(args);
}
