// --fix's bookkeeping (lint/tool/Fixes.cpp) on hand-made findings: one
// finding's edits go in all together or not at all, the `#include` edit every
// kernel fix of a file carries goes in once, and two findings that declare
// something before the same loop both go in.
#include "Fixes.h"

#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using clang::tooling::Replacement;

struct Edit {
  unsigned offset, length;
  std::string text;
};

class FixesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("nosync-fixes-test", dir));
    path_ = (dir + "/a.cpp").str();
  }
  void write(const std::string& text) { std::ofstream(path_) << text; }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  clang::tidy::ClangTidyError finding(const std::vector<Edit>& edits) const {
    clang::tidy::ClangTidyError e("nosync-item", clang::tidy::ClangTidyError::Warning, "/", false);
    e.Message = clang::tooling::DiagnosticMessage("m");
    e.Message.FilePath = path_;
    for (const Edit& x : edits) llvm::cantFail(e.Message.Fix[path_].add(Replacement(path_, x.offset, x.length, x.text)));
    return e;
  }
  std::string path_;
};

const Edit kInclude{0, 0, "#include <nosync/kernels.h>\n"};

TEST_F(FixesTest, TheKernelsIncludeGoesInOnceWhateverFindingCarriesIt) {
  write("aaaa bbbb\n");
  // clang-tidy's include inserter puts it on the first finding only; an
  // identical copy on another finding must not add a second line.
  auto summary = nosync::lint::applyFixes({finding({kInclude, {0, 4, "nosync::kernels::a"}}),
                                           finding({kInclude, {5, 4, "nosync::kernels::b"}})});
  ASSERT_TRUE(static_cast<bool>(summary));
  EXPECT_EQ(summary->applied, 2u);
  EXPECT_EQ(read(), "#include <nosync/kernels.h>\nnosync::kernels::a nosync::kernels::b\n");
}

TEST_F(FixesTest, AConflictingFindingIsLeftOutWhole) {
  write("aaaa bbbb cccc\n");
  auto summary = nosync::lint::applyFixes({finding({{0, 4, "AAAA"}}),
                                           finding({{5, 4, "BBBB"}, {1, 2, "overlaps the first"}})});
  ASSERT_TRUE(static_cast<bool>(summary));
  EXPECT_EQ(summary->applied, 1u);
  EXPECT_EQ(summary->conflicts, 1u);
  EXPECT_EQ(read(), "AAAA bbbb cccc\n");  // not BBBB: all of the second finding or none
}

TEST_F(FixesTest, TheIncludeOfALeftOutFindingServesTheNextKernelFix) {
  write("aaaa bbbb cccc\n");
  auto summary = nosync::lint::applyFixes({finding({{0, 4, "AAAA"}}), finding({kInclude, {1, 2, "conflict"}}),
                                           finding({{10, 4, "nosync::kernels::c"}})});
  ASSERT_TRUE(static_cast<bool>(summary));
  EXPECT_EQ(summary->applied, 2u);
  EXPECT_EQ(read(), "#include <nosync/kernels.h>\nAAAA bbbb nosync::kernels::c\n");
}

TEST_F(FixesTest, NoIncludeWithoutAnAppliedKernelFix) {
  write("aaaa bbbb cccc\n");
  auto summary = nosync::lint::applyFixes({finding({{0, 4, "AAAA"}}),
                                           finding({kInclude, {1, 2, "nosync::kernels::conflict"}})});
  ASSERT_TRUE(static_cast<bool>(summary));
  EXPECT_EQ(summary->applied, 1u);
  EXPECT_EQ(read(), "AAAA bbbb cccc\n");
}

TEST_F(FixesTest, TwoDeclarationsBeforeOneLoopBothGoIn) {
  write("for (;;) {}\n");
  auto summary = nosync::lint::applyFixes({finding({{0, 0, "Stager a;\n"}}), finding({{0, 0, "Stager b;\n"}})});
  ASSERT_TRUE(static_cast<bool>(summary));
  EXPECT_EQ(summary->applied, 2u);
  EXPECT_EQ(read(), "Stager a;\nStager b;\nfor (;;) {}\n");
}

}  // namespace
