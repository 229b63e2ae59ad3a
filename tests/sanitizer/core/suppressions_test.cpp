#include "suppressions.h"
#include "fake_stack.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

using namespace nosync::san;
using namespace nosync::san::testing;

TEST(Suppressions, GlobMatching) {
  EXPECT_TRUE(Suppressions::glob("nosync-item", "nosync-item"));
  EXPECT_FALSE(Suppressions::glob("nosync-item", "nosync-items"));
  EXPECT_TRUE(Suppressions::glob("*clip_grad_norm*", "torch::nn::utils::clip_grad_norm_(x)"));
  EXPECT_TRUE(Suppressions::glob("nosync-?tem", "nosync-item"));
  EXPECT_TRUE(Suppressions::glob("*/data/*.cpp", "/work/app/data/loader.cpp"));
  EXPECT_FALSE(Suppressions::glob("*/data/*.cpp", "/work/app/data/loader.h"));
  EXPECT_TRUE(Suppressions::glob("*", ""));
  EXPECT_TRUE(Suppressions::glob("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(Suppressions::glob("a*b*c", "aXXbYY"));
}

TEST(Suppressions, MatchesRuleFunctionSourceAndApi) {
  Suppressions s;
  ASSERT_EQ(s.parse("# comment\n\nrule:nosync-explicit-*\nfun:*log_metrics*\n  src:*/eval/*  \napi:cudaFree\n"), "");
  ASSERT_EQ(s.size(), 4u);
  std::vector<Frame> train = {user("train_step()", "/work/app/train.cpp", 3)};
  std::vector<Frame> logging = {user("log_metrics(int)", "/work/app/train.cpp", 9)};
  std::vector<Frame> eval = {user("evaluate()", "/work/app/eval/eval.cpp", 5)};
  EXPECT_EQ(s.match("nosync-explicit-sync", "cudaDeviceSynchronize", train), 0);
  EXPECT_EQ(s.match("nosync-item", "cudaStreamSynchronize", logging), 1);
  EXPECT_EQ(s.match("nosync-item", "cudaStreamSynchronize", eval), 2);
  EXPECT_EQ(s.match("nosync-allocator-sync", "cudaFree", train), 3);
  EXPECT_EQ(s.match("nosync-item", "cudaStreamSynchronize", train), -1);
  EXPECT_EQ(s.describe(1), "fun:*log_metrics*");
}

TEST(Suppressions, UnknownTypeIsAnErrorListingTheSupportedTypes) {
  Suppressions s;
  std::string err = s.parse("rule:nosync-item\ninterceptor_via_fun:foo\n", "my.supp");
  EXPECT_NE(err.find("my.supp:2"), std::string::npos) << err;
  EXPECT_NE(err.find("Supported suppression types are: rule, fun, src, api"), std::string::npos) << err;
  Suppressions t;
  EXPECT_NE(t.parse("fun:\n").find("empty pattern"), std::string::npos);
}

TEST(Suppressions, LoadsFromAFileAndReportsMissingFiles) {
  const std::string path = ::testing::TempDir() + "/nosync_supp_test.supp";
  {
    std::ofstream out(path);
    out << "rule:nosync-item\n";
  }
  Suppressions s;
  EXPECT_EQ(s.load_file(path), "");
  EXPECT_EQ(s.size(), 1u);
  std::remove(path.c_str());
  Suppressions missing;
  EXPECT_NE(missing.load_file(path).find("cannot open"), std::string::npos);
}
