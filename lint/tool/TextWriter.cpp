#include "TranslationUnit.h"
#include "Finding.h"
#include "Writers.h"

#include "clang-tidy/ClangTidy.h"
#include "llvm/Support/VirtualFileSystem.h"

namespace nosync::lint {

void writeText(const TuResult& tu, std::optional<bool> color) {
  if (tu.errors.empty()) return;
  CommandLineOverrides overrides = tu.overrides;
  overrides.color = color;
  clang::tidy::ClangTidyContext context(std::make_unique<NosyncOptionsProvider>(*tu.config, overrides));
  // handleErrors reads UseColor and FormatStyle from the current file's options.
  context.setCurrentFile(tu.file);
  unsigned warningsAsErrors = 0;
  // The context notes are for JSON and SARIF (`context`); text keeps the
  // one-line context in the message itself.
  std::vector<clang::tidy::ClangTidyError> shown = tu.errors;
  for (auto& e : shown) llvm::erase_if(e.Notes, isContextNote);
  // Physical FS: the printer switches to each diagnostic's build directory.
  clang::tidy::handleErrors(shown, context, clang::tidy::FB_NoFix, warningsAsErrors,
                            llvm::vfs::createPhysicalFileSystem());
}

}  // namespace nosync::lint
