// Headers that cannot be parsed alone and the includer text they are parsed
// after (lint/tool/HeaderContext.h).
#include "HeaderContext.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>

namespace nosync::lint {
namespace {

TEST(HeaderContext, WhichHeadersNeedAnIncluder) {
  EXPECT_TRUE(needsIncluder("include/Trainer.tpp", "template <typename T> void f() {}\n"));
  EXPECT_TRUE(needsIncluder("src/impl.inl", ""));
  EXPECT_TRUE(needsIncluder("include/detail.hpp",
                            "// note\n#ifndef TRAINER_HPP\n#error \"include Trainer.hpp instead\"\n#endif\n"));
  // A guard that asks for a compiler, not for an includer.
  EXPECT_FALSE(needsIncluder("include/model.h", "#if __cplusplus < 201703L\n#error \"C++17 needed\"\n#endif\n"));
  EXPECT_FALSE(needsIncluder("include/model.h", "#pragma once\n#include <torch/torch.h>\n"));
  // An #error outside any conditional, or in a comment, is no guard.
  EXPECT_FALSE(needsIncluder("include/model.h", "/*\n#ifndef X\n#error no\n#endif\n*/\nint x;\n"));
  // Sources are never parsed through another file.
  EXPECT_FALSE(needsIncluder("src/train.cpp", "#ifndef X\n#error no\n#endif\n"));
}

class HeaderContextFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("nosync-header-context", root_));
    write("CMakeLists.txt", "project(p CXX)\n");
    write("include/Trainer.hpp",
          "#ifndef TRAINER_HPP\n#define TRAINER_HPP\n#include <vector>\n#if 1\n"
          "template <typename T> struct Trainer { void fit(); };\n#include \"Trainer.tpp\"\n#endif\n#endif\n");
    write("include/Trainer.tpp", "template <typename T> void Trainer<T>::fit() {}\n");
    write("src/other.cpp", "#include \"Trainer.tpp\"\n");
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root_); }

  void write(const std::string& rel, const std::string& text) {
    llvm::SmallString<256> p(root_);
    llvm::sys::path::append(p, rel);
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(p));
    std::error_code ec;
    llvm::raw_fd_ostream out(p, ec);
    out << text;
  }
  std::string path(const std::string& rel) const {
    llvm::SmallString<256> p(root_);
    llvm::sys::path::append(p, rel);
    llvm::SmallString<256> real;
    return llvm::sys::fs::real_path(p, real) ? std::string(p) : std::string(real);
  }

  llvm::SmallString<256> root_;
};

// A header that writes torch:: without including LibTorch leans on its
// includer (cpp_torch.h: <torch/torch.h>, then "libtorch_utils.h"); one that
// reaches LibTorch through a header of its own beside it does not.
TEST_F(HeaderContextFiles, AHeaderUsingTorchItDoesNotIncludeNeedsItsIncluder) {
  write("include/api.h", "#include <torch/torch.h>\n#include \"utils.h\"\n");
  write("include/utils.h", "#include <vector>\n#include \"display.h\"\ninline torch::Tensor f();\n");
  write("include/display.h", "#include <string>\n");
  write("include/model.h", "#pragma once\n#include \"common.h\"\ntorch::Tensor g();\n");
  write("include/common.h", "#include <torch/torch.h>\n");
  auto text = [&](const std::string& rel) {
    auto buf = llvm::MemoryBuffer::getFile(path(rel));
    return buf ? (*buf)->getBuffer().str() : std::string();
  };
  EXPECT_TRUE(needsIncluder(path("include/utils.h"), text("include/utils.h")));
  EXPECT_FALSE(needsIncluder(path("include/model.h"), text("include/model.h")));
  EXPECT_FALSE(needsIncluder(path("include/display.h"), text("include/display.h")));  // no torch
  // A project header found through an include path (not beside it) may bring LibTorch.
  write("include/net.h", "#include \"model/layers.h\"\ntorch::Tensor h();\n");
  EXPECT_FALSE(needsIncluder(path("include/net.h"), text("include/net.h")));
  auto includer = findIncluder(path("include/utils.h"), path(""));
  ASSERT_TRUE(includer.has_value());
  EXPECT_EQ(includer->file, path("include/api.h"));
}

TEST_F(HeaderContextFiles, FindsTheIncluderBesideTheHeaderFirst) {
  auto includer = findIncluder(path("include/Trainer.tpp"), path(""));
  ASSERT_TRUE(includer.has_value());
  EXPECT_EQ(includer->file, path("include/Trainer.hpp"));
  EXPECT_EQ(includer->line, 6u);
}

TEST_F(HeaderContextFiles, PrefixStopsBeforeTheIncludeAndClosesItsConditionals) {
  auto includer = findIncluder(path("include/Trainer.tpp"), path(""));
  ASSERT_TRUE(includer.has_value());
  auto prefix = writeIncluderPrefix(*includer, path("include/Trainer.tpp"));
  ASSERT_TRUE(static_cast<bool>(prefix)) << llvm::toString(prefix.takeError());
  auto text = llvm::MemoryBuffer::getFile(*prefix);
  ASSERT_TRUE(static_cast<bool>(text));
  std::string t = (*text)->getBuffer().str();
  EXPECT_EQ(t.find("#line 1 \"" + path("include/Trainer.hpp") + "\"\n"), 0u) << t;
  EXPECT_NE(t.find("struct Trainer"), std::string::npos) << t;
  EXPECT_EQ(t.find("Trainer.tpp"), std::string::npos) << t;
  // #ifndef TRAINER_HPP and #if 1 were open at the #include.
  EXPECT_NE(t.find("#endif\n#endif\n"), std::string::npos) << t;
  EXPECT_EQ(t.substr(t.size() - 14), "#endif\n#endif\n") << t;
}

TEST_F(HeaderContextFiles, NoIncluderForAnUnincludedHeader) {
  write("include/Lonely.tpp", "int lonely();\n");
  EXPECT_FALSE(findIncluder(path("include/Lonely.tpp"), path("")).has_value());
}

}  // namespace
}  // namespace nosync::lint
