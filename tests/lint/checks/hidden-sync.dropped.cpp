// Fixture for nosync-hidden-sync in code the compiler dropped: `make_loader`
// is not declared, so the range-for over `loader` is left out of the AST with
// its body, and the check reads the calls of its text (utils/DroppedCode.h).
#include <torch/torch.h>

void track() {
  auto loader = make_loader("frames/");
  // CHECK-MESSAGES: :[[@LINE-1]]:17: error: use of undeclared identifier 'make_loader' [clang-diagnostic-error]
  for (auto& frame : *loader) {
    auto kept = frame.data.masked_select(frame.data > 0);
    // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'masked_select()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-hidden-sync]
    auto world = torch::linalg_inv(frame.pose);
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'linalg_inv()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-hidden-sync]
    // A method named like Tensor::inverse is as often Eigen's or Sophus's:
    // from text, with no type for the receiver, it is not read as one.
    auto camera = frame.pose.inverse();
  }
}
