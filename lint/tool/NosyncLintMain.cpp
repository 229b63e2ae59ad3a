// nosync-lint: `nosync-lint [options] <files...> [-- <compile args>]`.
// The logic lives in LintDriver.cpp; this file only pulls in the checks.
#include "LintDriver.h"

#ifdef NOSYNC_HAVE_CHECKS
// Including the anchor header references the module's anchor variable, which
// makes the linker keep the statically registered nosync module.
#include "NosyncModuleAnchor.h"
#endif

int main(int argc, char** argv) { return nosync::lint::lintMain(argc, argv); }
