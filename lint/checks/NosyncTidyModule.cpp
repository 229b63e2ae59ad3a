// The nosync clang-tidy module: registers one check per static rule of the
// catalog. Loaded by nosync-lint (linked in, kept alive by the anchor) and by
// `clang-tidy --load libnosync-tidy.so` (registered when the plugin is opened).
#include "NosyncModuleAnchor.h"

#include "BoolConditionCheck.h"
#include "DeviceToHostCheck.h"
#include "ExplicitSyncCheck.h"
#include "HiddenSyncCheck.h"
#include "ItemCheck.h"
#include "LaunchLoopCheck.h"
#include "PageableH2DCheck.h"

#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

namespace clang::tidy {
namespace nosync {

// A check is registered under its catalog id (rules/include/nosync/rules.def).
template <typename Check> void registerRule(ClangTidyCheckFactories &Factories) {
  Factories.registerCheck<Check>(::nosync::rules::get(Check::Id).id);
}

class NosyncModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    registerRule<ItemCheck>(Factories);
    registerRule<BoolConditionCheck>(Factories);
    registerRule<DeviceToHostCheck>(Factories);
    registerRule<PageableH2DCheck>(Factories);
    registerRule<LaunchLoopCheck>(Factories);
    registerRule<HiddenSyncCheck>(Factories);
    registerRule<ExplicitSyncCheck>(Factories);
  }
};

}  // namespace nosync

static ClangTidyModuleRegistry::Add<nosync::NosyncModule>
    X("nosync-module", "Checks for LibTorch code that makes the host wait for the GPU.");

// Referenced through NosyncModuleAnchor.h to force this file into binaries
// that link the static library.
volatile int NosyncModuleAnchorSource = 0;

}  // namespace clang::tidy
