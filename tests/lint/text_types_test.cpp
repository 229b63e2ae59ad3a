// The classes, bases and declared types nosync-lint reads from a project's
// text (lint/tool/TextTypes.h), to tell which class a text call reaches.
#include "TextTypes.h"

#include <gtest/gtest.h>

#include <string>

namespace nosync::lint {
namespace {

TextTypes typesOf(const std::string& code) {
  TextTypes out;
  collectTextTypes(code, "src/a.h", out);
  return out;
}

TEST(TextTypes, ClassesAndTheirBases) {
  TextTypes types = typesOf(R"(
class Backend;
class DeepPotBackend { public: virtual void compute(int) = 0; };
class DeepPotPT : public deepmd::DeepPotBackend, private Logging<int> { void compute(int) override; };
struct NetImpl : torch::nn::Module {};
enum class Mode { Train, Eval };
template <typename M, class Net> struct Trainer { Net net_; };
)");
  EXPECT_TRUE(types.isClass("DeepPotBackend"));
  EXPECT_TRUE(types.isClass("DeepPotPT"));
  EXPECT_TRUE(types.isClass("NetImpl"));
  EXPECT_FALSE(types.isClass("Backend"));  // declared, not defined here
  EXPECT_FALSE(types.isClass("Mode"));     // an enum
  EXPECT_FALSE(types.isClass("Net"));      // a template parameter
  EXPECT_TRUE(types.isClass("Trainer"));
  EXPECT_EQ(types.bases.at("DeepPotPT"), (std::set<std::string>{"DeepPotBackend", "Logging"}));
  EXPECT_TRUE(types.related("DeepPotPT", "DeepPotBackend"));
  EXPECT_TRUE(types.related("DeepPotBackend", "DeepPotPT"));
  EXPECT_FALSE(types.related("NetImpl", "DeepPotPT"));
  EXPECT_TRUE(types.related("NetImpl", "NetImpl"));
}

TEST(TextTypes, DeclaredTypesOfNames) {
  TextTypes types = typesOf(R"(
struct Stereo {
  Segmentor segmentor_;
  std::vector<std::shared_ptr<DeepPotBackend>> dps;
  const Detector& detector;
};
void run(Trainer* trainer, int steps) {
  auto problem = make_problem();
  Agent agent(3);
  return helper(steps);
}
)");
  EXPECT_EQ(types.declared.at("segmentor_"), (std::set<std::string>{"Segmentor"}));
  EXPECT_EQ(types.declared.at("dps"), (std::set<std::string>{"DeepPotBackend"}));
  EXPECT_EQ(types.declared.at("detector"), (std::set<std::string>{"Detector"}));
  EXPECT_EQ(types.declared.at("trainer"), (std::set<std::string>{"Trainer"}));
  EXPECT_EQ(types.declared.at("agent"), (std::set<std::string>{"Agent"}));
  EXPECT_EQ(types.declared.count("problem"), 0u);  // auto says nothing
  EXPECT_EQ(types.declared.count("helper"), 0u);   // `return helper(` is no declaration
}

// A name declared in the file that uses it means that declaration; elsewhere
// every declaration of the project counts.
TEST(TextTypes, TheUsingFileDeclarationComesFirst) {
  TextTypes types;
  collectTextTypes("class GymEnv { py::object env_; };", "rlop/gym_envs.h", types);
  collectTextTypes("class Ppo { GymEnv env_; void reset() { env_.Reset(); } };", "examples/ppo.h", types);
  ASSERT_NE(types.typesOf("env_", "examples/ppo.h"), nullptr);
  EXPECT_EQ(*types.typesOf("env_", "examples/ppo.h"), (std::set<std::string>{"GymEnv"}));
  EXPECT_EQ(*types.typesOf("env_", "examples/main.cpp"), (std::set<std::string>{"GymEnv", "object"}));
  EXPECT_EQ(types.typesOf("agent_", "examples/ppo.h"), nullptr);
}

}  // namespace
}  // namespace nosync::lint
