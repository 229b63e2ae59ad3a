// nosync-lint's program logic, shared by the real binary and the test binary
// that links a fake check module instead of the real checks.
#pragma once

namespace nosync::lint {

enum ExitCode { kClean = 0, kFindings = 1, kUsage = 2, kParseFailure = 3 };

// Runs nosync-lint with this command line and returns the exit code.
int lintMain(int argc, const char* const* argv);

}  // namespace nosync::lint
