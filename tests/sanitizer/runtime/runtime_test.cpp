// libnosync_sanitizer.so on any machine: option errors, help, and the
// "CUPTI/GPU unavailable" path. Each case runs in a fresh child process
// (death-test style) because the runtime starts once per process.
#include <nosync/sanitizer.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

namespace {
void start_with(const char* options) {
  ::setenv("NOSYNC_OPTIONS", options, 1);
  int active = nosync_sanitizer_start();
  std::fprintf(stderr, "active=%d\n", active);
  std::fflush(stderr);
  std::exit(0);
}
}  // namespace

TEST(RuntimeDeathTest, UnknownOptionIsOneClearErrorAndExit) {
  EXPECT_EXIT(start_with("mode=report:bogus=1"), ::testing::ExitedWithCode(1),
              "ERROR: NOSYNC_OPTIONS: unknown option 'bogus'; valid options: mode, format, log_path");
}

TEST(RuntimeDeathTest, BadValueIsOneClearErrorAndExit) {
  EXPECT_EXIT(start_with("mode=loud"), ::testing::ExitedWithCode(1),
              "bad value 'loud' for option 'mode': expected warn\\|error\\|report");
}

TEST(RuntimeDeathTest, MissingSuppressionsFileIsAnError) {
  EXPECT_EXIT(start_with("suppressions=/nonexistent/nosync.supp"), ::testing::ExitedWithCode(1),
              "cannot open suppressions file '/nonexistent/nosync.supp'");
}

TEST(RuntimeDeathTest, HelpListsTheOptionsAndContinues) {
  EXPECT_EXIT(start_with("help=1"), ::testing::ExitedWithCode(0),
              "min_stall_us \\(Int, default 0\\)(.|\n)*active=[01]");
}

TEST(RuntimeDeathTest, WithoutCuptiOrGpuOneWarningAndTheProgramContinues) {
  // On the GPU machine CUPTI subscribes (active=1); elsewhere the one warning
  // must say so and the process carries on to exit normally.
  EXPECT_EXIT(start_with("mode=report"), ::testing::ExitedWithCode(0),
              "(WARNING: .*host syncs are not checked in this process, the program continues\nactive=0|^active=1)");
}

TEST(Runtime, ExpectNoHostSyncFailsWhenTheSanitizerCannotObserve) {
  if (nosync_sanitizer_start()) GTEST_SKIP() << "sanitizer active here (GPU machine): covered by the gpu suite";
  EXPECT_NONFATAL_FAILURE(EXPECT_NO_HOST_SYNC((void)0), "not active in this process");
}

TEST(RuntimeDeathTest, PauseAndResumeAreHarmlessWhenNothingIsWatched) {
  // Where CUPTI cannot subscribe, pause reports "was not active" and resume
  // tries again, warns, and reports "not active"; the program carries on.
  EXPECT_EXIT(
      {
        ::setenv("NOSYNC_OPTIONS", "mode=report", 1);
        int active = nosync_sanitizer_start();
        int paused = nosync_sanitizer_pause();
        int resumed = nosync_sanitizer_resume();
        std::fprintf(stderr, "active=%d paused=%d resumed=%d\n", active, paused, resumed);
        std::exit(active == paused && active == resumed ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "active=(0 paused=0 resumed=0|1 paused=1 resumed=1)");
}

// A program without Python: gathering Python frames finds no interpreter and
// returns nothing, on the main thread and on another one.
extern "C" size_t nosync_sanitizer_debug_python_stack(char* buf, size_t len, unsigned delay_us, uint64_t* capture_ns);

TEST(Runtime, NoPythonInTheProcessMeansNoPythonFrames) {
  char buf[256] = "x";
  uint64_t ns = 1;
  EXPECT_EQ(nosync_sanitizer_debug_python_stack(buf, sizeof buf, 0, &ns), 0u);
  EXPECT_STREQ(buf, "");
  std::size_t other = 1;
  std::thread t([&other] {
    char b[64];
    other = nosync_sanitizer_debug_python_stack(b, sizeof b, 0, nullptr);
  });
  t.join();
  EXPECT_EQ(other, 0u);
}
