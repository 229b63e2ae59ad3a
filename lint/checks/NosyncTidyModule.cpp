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

class NosyncModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    // Names are the catalog ids (rules/include/nosync/rules.def).
    Factories.registerCheck<ItemCheck>("nosync-item");
    Factories.registerCheck<BoolConditionCheck>("nosync-bool-condition");
    Factories.registerCheck<DeviceToHostCheck>("nosync-device-to-host");
    Factories.registerCheck<PageableH2DCheck>("nosync-pageable-h2d");
    Factories.registerCheck<LaunchLoopCheck>("nosync-launch-loop");
    Factories.registerCheck<HiddenSyncCheck>("nosync-hidden-sync");
    Factories.registerCheck<ExplicitSyncCheck>("nosync-explicit-sync");
  }
};

}  // namespace nosync

static ClangTidyModuleRegistry::Add<nosync::NosyncModule>
    X("nosync-module", "Checks for LibTorch code that makes the host wait for the GPU.");

// Referenced through NosyncModuleAnchor.h to force this file into binaries
// that link the static library.
volatile int NosyncModuleAnchorSource = 0;

}  // namespace clang::tidy
