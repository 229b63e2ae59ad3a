// The calls nosync-lint reads from the text of sources outside the run
// (lint/tool/TextCalls.h): who calls which name, and how the call runs.
#include "TextCalls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nosync::lint {
namespace {

std::vector<TextCallEdge> callsOf(const std::string& code) {
  std::vector<TextCallEdge> out;
  collectTextCalls(code, "app/main.cpp", out);
  return out;
}

const TextCallEdge* find(const std::vector<TextCallEdge>& calls, const std::string& callee) {
  for (const TextCallEdge& c : calls)
    if (c.callee == callee) return &c;
  return nullptr;
}

TEST(TextCalls, LoopsThrottlesAndMain) {
  auto calls = callsOf(R"(
#include <torch/torch.h>
#define LOG(x) log_value(x)
int main(int argc, char** argv) {
  setup(argc);
  for (int step = 0; step < 10; ++step) {
    train_step(step);
    if (step % 100 == 0) { log_loss(step); }
    if (step > 5) warm(step);
  }
  while (running()) poll();
  finish();
})");
  const TextCallEdge* setup = find(calls, "setup");
  ASSERT_NE(setup, nullptr);
  EXPECT_EQ(setup->caller, "main");
  EXPECT_TRUE(setup->callerIsMain);
  EXPECT_FALSE(setup->inLoop);
  EXPECT_EQ(setup->at, "app/main.cpp:5");
  ASSERT_NE(find(calls, "train_step"), nullptr);
  EXPECT_TRUE(find(calls, "train_step")->inLoop);
  EXPECT_FALSE(find(calls, "train_step")->throttled);
  ASSERT_NE(find(calls, "log_loss"), nullptr);
  EXPECT_TRUE(find(calls, "log_loss")->throttled);
  EXPECT_FALSE(find(calls, "warm")->throttled);  // no remainder in its condition
  EXPECT_TRUE(find(calls, "warm")->inLoop);
  EXPECT_TRUE(find(calls, "poll")->inLoop);     // a braceless while body
  EXPECT_FALSE(find(calls, "finish")->inLoop);  // after the loop
  EXPECT_EQ(find(calls, "log_value"), nullptr);  // in a #define, not a body
  EXPECT_EQ(find(calls, "main"), nullptr);       // a definition, not a call
}

// A loop that interprets an input script's commands: each branch of a chain
// of three or more string comparisons runs once per command, not per turn.
TEST(TextCalls, CommandBranchesAreNotRepeatedByTheScriptLoop) {
  auto calls = callsOf(R"(
int main() {
  for (auto& cmd : script) {
    if (cmd.name == "NVE") md.NVE(cmd);
    else if (cmd.name == "NVT") { md.NVT(cmd); }
    else if ("ANNEAL" == cmd.name) {
      for (int i = 0; i < n; ++i) md.anneal_step(i);
    }
    else { unknown(cmd); }
    count(cmd);
  }
  for (auto& x : xs) {
    if (x == "a") fa();
    else if (x == "b") fb();
  }
})");
  for (const char* once : {"NVE", "NVT"}) {
    const TextCallEdge* c = find(calls, once);
    ASSERT_NE(c, nullptr) << once;
    EXPECT_FALSE(c->inLoop) << once;
    EXPECT_TRUE(c->callerIsMain) << once;
  }
  for (const char* looped : {"anneal_step", "unknown", "count", "fa", "fb"}) {
    const TextCallEdge* c = find(calls, looped);
    ASSERT_NE(c, nullptr) << looped;
    EXPECT_TRUE(c->inLoop) << looped;  // an inner loop, the default branch, after the chain, a chain of two
  }
}

TEST(TextCalls, MethodsConstructorsAndTests) {
  auto calls = callsOf(R"(
struct Engine : Base {
  Engine(int n) : Base(n), workers_{n}, queue_(make_queue(n)) { start(); }
  float execute(const Batch& b) const override {
    float total = 0;
    for (auto& item : b) total += run_one(item);
    return total;
  }
  int workers_;
};
void Engine::serve() {
  do { execute(next()); } while (alive());
}
TEST(EngineTest, Runs) { Engine e(2); e.execute(batch()); }
)");
  ASSERT_NE(find(calls, "start"), nullptr);
  EXPECT_EQ(find(calls, "start")->caller, "Engine");  // the constructor's body, past its initializer list
  ASSERT_NE(find(calls, "run_one"), nullptr);
  EXPECT_EQ(find(calls, "run_one")->caller, "execute");
  EXPECT_TRUE(find(calls, "run_one")->inLoop);
  const TextCallEdge* fromServe = nullptr;
  const TextCallEdge* fromTest = nullptr;
  for (const TextCallEdge& c : calls)
    if (c.callee == "execute") (c.caller == "serve" ? fromServe : fromTest) = &c;
  ASSERT_NE(fromServe, nullptr);
  EXPECT_TRUE(fromServe->inLoop);  // a do-while body
  ASSERT_NE(fromTest, nullptr);
  EXPECT_EQ(fromTest->caller, "TEST");
  EXPECT_TRUE(fromTest->callerIsTest);
  EXPECT_FALSE(fromTest->inLoop);
}

TEST(TextCalls, DeclarationsAndKeywordsAreNoCalls) {
  auto calls = callsOf(R"(
float read_loss(const torch::Tensor& t);
TORCH_MODULE(Net);
void f() {
  if (ok()) { return; }
  auto n = sizeof(int) + static_cast<int>(g());
}
)");
  EXPECT_EQ(find(calls, "read_loss"), nullptr);
  EXPECT_EQ(find(calls, "TORCH_MODULE"), nullptr);
  EXPECT_EQ(find(calls, "sizeof"), nullptr);
  EXPECT_EQ(find(calls, "static_cast"), nullptr);
  ASSERT_NE(find(calls, "ok"), nullptr);
  EXPECT_EQ(find(calls, "ok")->caller, "f");
  ASSERT_NE(find(calls, "g"), nullptr);
}

// A multi-line #define still counts its lines: the calls after it are named
// by the line they are on.
TEST(TextCalls, LinesAfterAContinuedDirectiveAndArgumentCounts) {
  auto calls = callsOf(R"(#define OP(fast, slow) \
  if (ready()) return fast; \
  return slow;
void step(Opt& o) {
  clip(resolve(), 1.0, pick(a, b));
  norm();
  take({1, 2}, std::vector<int>{3, 4}[0]);
}
)");
  ASSERT_NE(find(calls, "clip"), nullptr);
  EXPECT_EQ(find(calls, "clip")->at, "app/main.cpp:5");
  EXPECT_EQ(find(calls, "clip")->args, 3u);  // pick(a, b) is one of them
  EXPECT_EQ(find(calls, "resolve")->args, 0u);
  EXPECT_EQ(find(calls, "norm")->args, 0u);
  EXPECT_EQ(find(calls, "take")->args, 2u);
  EXPECT_EQ(find(calls, "ready"), nullptr);  // in the #define
}

// A constructor runs once per object: its calls say so, whether it is
// defined in its class or outside it; a method of the class is no constructor.
TEST(TextCalls, ConstructorsAreKnown) {
  auto calls = callsOf(R"(
struct NetImpl : torch::nn::Module {
  NetImpl(std::string dir) : dir_(dir) { load(); }
  ~NetImpl() { release(); }
  void step() { update(); }
};
Agent::Agent(int n) { reset(); }
)");
  ASSERT_NE(find(calls, "load"), nullptr);
  EXPECT_EQ(find(calls, "load")->caller, "NetImpl");
  EXPECT_TRUE(find(calls, "load")->callerIsConstructor);
  ASSERT_NE(find(calls, "release"), nullptr);
  EXPECT_TRUE(find(calls, "release")->callerIsConstructor);
  ASSERT_NE(find(calls, "update"), nullptr);
  EXPECT_FALSE(find(calls, "update")->callerIsConstructor);
  ASSERT_NE(find(calls, "reset"), nullptr);
  EXPECT_TRUE(find(calls, "reset")->callerIsConstructor);
}

// `Test<DataLoader, Net>(loader, model)`: explicit template arguments do not
// hide the call; a comparison followed by a parenthesis is no call.
TEST(TextCalls, ExplicitTemplateArguments) {
  auto calls = callsOf(R"(
int main() {
  Test<DataLoader, std::shared_ptr<Net>>(loader, model);
  if (i < n && ready > (limit)) return 0;
}
)");
  const TextCallEdge* test = find(calls, "Test");
  ASSERT_NE(test, nullptr);
  EXPECT_EQ(test->caller, "main");
  EXPECT_TRUE(test->callerIsMain);
  EXPECT_FALSE(test->inLoop);
  EXPECT_EQ(test->args, 2u);
  EXPECT_EQ(find(calls, "i"), nullptr);
  EXPECT_EQ(find(calls, "n"), nullptr);
}

// What decides which class a call may reach (TextTypes.h): the object, the
// written scope and the calling method's class.
TEST(TextCalls, ReceiversQualifiersAndCallerClasses) {
  auto calls = callsOf(R"(
struct Module {
  void tick() { update(); }
};
void Runner::run(std::vector<std::shared_ptr<Backend>>& dps) {
  segmentor_.Predict(frame);
  dps[0]->compute(x);
  std::invoke(f, x);
  this->step();
  make().Reset();
  matcher->operator()(ids);
})");
  ASSERT_NE(find(calls, "update"), nullptr);
  EXPECT_EQ(find(calls, "update")->callerClass, "Module");  // an in-class body
  EXPECT_EQ(find(calls, "update")->receiver, "");
  ASSERT_NE(find(calls, "Predict"), nullptr);
  EXPECT_EQ(find(calls, "Predict")->receiver, "segmentor_");
  EXPECT_EQ(find(calls, "Predict")->callerClass, "Runner");  // Runner::run
  EXPECT_EQ(find(calls, "compute")->receiver, "dps");       // through a subscript
  EXPECT_EQ(find(calls, "invoke")->qualifier, "std");
  EXPECT_EQ(find(calls, "invoke")->receiver, "");
  EXPECT_EQ(find(calls, "step")->receiver, "this");
  EXPECT_EQ(find(calls, "Reset")->receiver, "");  // on a temporary
  EXPECT_EQ(find(calls, "operator"), nullptr);    // any class's operator: no edge
}

}  // namespace
}  // namespace nosync::lint
