// Fixture for nosync-item in functions the compiler left out whole. `Tracker`
// is declared in a header that was not found, so every out-of-line member of
// it has no declaration in the AST, not even an invalid one: Clang skips the
// body unread. The check reads those bodies from the text of the file
// (utils/DroppedCode.h, droppedFunctions); no caller of them is known, so
// their own loops and their names decide the context.
#include <torch/torch.h>

#include <iostream>

float Tracker::update(const torch::Tensor& scores) {
// CHECK-MESSAGES: :[[@LINE-1]]:7: error: use of undeclared identifier 'Tracker' [clang-diagnostic-error]
  float best = scores.max().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:29: warning: 'item()' (in a function the compiler could not read, read from its text): {{.*}} [nosync-item]
  for (int i = 0; i < steps_; ++i) {
    total_ += scores[i].item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' (in a function the compiler could not read, read from its text) inside a loop: {{.*}} [nosync-item]
    if (i % 100 == 0)
      std::cout << scores.mean().item<float>() << "\n";
      // CHECK-MESSAGES: :[[@LINE-1]]:34: remark: 'item()' (in a function the compiler could not read, read from its text) in throttled code{{.*}} [nosync-item]
  }
  return best;
}

// Constructors, destructors and functions named for setup run once.
Tracker::Tracker(const torch::Tensor& init, int steps) : steps_(steps), total_{0.0f} {
// CHECK-MESSAGES: :[[@LINE-1]]:1: error: use of undeclared identifier 'Tracker' [clang-diagnostic-error]
  scale_ = init.abs().max().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:29: remark: 'item()' (in a function the compiler could not read, read from its text) in one-off setup/export code: {{.*}} [nosync-item]
}

Tracker::~Tracker() {
// CHECK-MESSAGES: :[[@LINE-1]]:1: error: use of undeclared identifier 'Tracker' [clang-diagnostic-error]
  std::cout << last_.item<float>() << "\n";
  // CHECK-MESSAGES: :[[@LINE-1]]:22: remark: 'item()' (in a function the compiler could not read, read from its text) in one-off setup/export code: {{.*}} [nosync-item]
}

void Tracker::setup(const torch::Tensor& t) {
// CHECK-MESSAGES: :[[@LINE-1]]:6: error: use of undeclared identifier 'Tracker' [clang-diagnostic-error]
  scale_ = t.item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:14: remark: 'item()' (in a function the compiler could not read, read from its text) in one-off setup/export code: {{.*}} [nosync-item]
}

// A branch the preprocessor skipped is no code of this build.
#if 0
float Tracker::legacy(const torch::Tensor& t) { return t.item<float>(); }
#endif

// A function the compiler did read is the matchers' (once, not twice), and a
// lambda or a brace initializer at namespace scope is no function.
namespace scoring {
auto rescale = [](const torch::Tensor& t) { return t * 2; };
const int kSizes[] = {1, 2, 3};

float peak(const torch::Tensor& t) {
  return t.max().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: 'item()': {{.*}} [nosync-item]
}
}  // namespace scoring
