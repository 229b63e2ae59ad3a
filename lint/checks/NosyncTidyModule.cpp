// The nosync clang-tidy module: registers one check per static rule of the
// catalog. Loaded by nosync-lint (linked in, kept alive by the anchor) and by
// `clang-tidy --load libnosync-tidy.so` (registered when the plugin is opened).
#include "NosyncModuleAnchor.h"

#include "ItemCheck.h"

#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

namespace clang::tidy {
namespace nosync {

class NosyncModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<ItemCheck>("nosync-item");
  }
};

}  // namespace nosync

static ClangTidyModuleRegistry::Add<nosync::NosyncModule>
    X("nosync-module", "Checks for LibTorch code that makes the host wait for the GPU.");

// Referenced through NosyncModuleAnchor.h to force this file into binaries
// that link the static library.
volatile int NosyncModuleAnchorSource = 0;

}  // namespace clang::tidy
