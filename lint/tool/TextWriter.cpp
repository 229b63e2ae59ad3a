#include "TranslationUnit.h"
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
  // Physical FS: the printer switches to each diagnostic's build directory.
  clang::tidy::handleErrors(tu.errors, context, clang::tidy::FB_NoFix, warningsAsErrors,
                            llvm::vfs::createPhysicalFileSystem());
}

}  // namespace nosync::lint
