// NOSYNC-CONFIG: {CheckOptions: {nosync-item.Severity: note}}
// Fixture for the Severity option, which the check reads itself (so that
// `clang-tidy --load libnosync-tidy.so` honours it, not only nosync-lint):
// hot findings take the configured level (note: a remark); findings lowered
// for their context stay remarks. (`error` is raised by the driver, see
// RuleCheck, and tested in tests/lint/cli_test.sh.)
#include <torch/torch.h>

#include <iostream>

void train(torch::nn::Linear& model, const torch::Tensor& x) {
  for (int step = 0; step < 100; ++step) {
    auto loss = model->forward(x).sum();
    float value = loss.item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:24: remark: 'item()' inside a loop: {{.*}} [nosync-item]
    if (step % 10 == 0) std::cout << loss.item<float>() << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:43: remark: 'item()' in throttled code{{.*}} [nosync-item]
    (void)value;
  }
}

int main() {
  torch::nn::Linear model(3, 1);
  train(model, torch::randn({8, 3}, torch::kCUDA));
  return 0;
}
