// Fixture for nosync-bool-condition in code the compiler dropped or kept with
// an error. `action_mask`, `similarity_loss` and `residual` are not declared
// (as when their header was not found): `mask` has no type, so the `if` that
// tests `mask[i].item<float>()` keeps a recovery expression for a condition,
// which the matchers do not look into. The text of such a condition is read
// (utils/DroppedCode.h): an item() written in the condition of an `if` or a
// `while` decides a branch there, as a resolved one would.
#include <torch/torch.h>

#include <vector>

void expand(torch::nn::Linear& model, const torch::Tensor& board, std::vector<int64_t>& legal) {
  auto mask = action_mask(board);
  // CHECK-MESSAGES: :[[@LINE-1]]:15: error: use of undeclared identifier 'action_mask' [clang-diagnostic-error]
  auto policy = model->forward(board);
  for (int64_t i = 0; i < policy.size(0); ++i) {
    if (mask[i].item<float>() == 0) continue;
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-bool-condition]
    legal.push_back(i);
  }
}

void optimize(torch::nn::Linear& model) {
  float total = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    auto loss = model->forward(torch::randn({4, 8})).mean();
    // Read on every iteration the remainder test lets through.
    if (iter % 200 == 0 || similarity_loss(loss).item<float>() > 0.5) {
      // CHECK-MESSAGES: :[[@LINE-1]]:28: error: use of undeclared identifier 'similarity_loss' [clang-diagnostic-error]
      // CHECK-MESSAGES: :[[@LINE-2]]:50: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-bool-condition]
      total = 0;
    }
    while (residual(loss).item<float>() > 1e-3f)
      // CHECK-MESSAGES: :[[@LINE-1]]:12: error: use of undeclared identifier 'residual' [clang-diagnostic-error]
      // CHECK-MESSAGES: :[[@LINE-2]]:27: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-bool-condition]
      loss = loss / 2;
    // The body of a branch is not its condition: this read is nosync-item's.
    if (iter > 10) total += residual(loss).item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:29: error: use of undeclared identifier 'residual' [clang-diagnostic-error]
  }
  (void)total;
}
