// Fixture for branches the build leaves dead (utils/SyncContext, ColdPath),
// exercised through nosync-item: `const bool IS_TRAIN = false;` switches the
// training loop off, so the prediction loop after it is the program's
// workload, not a final evaluation after training; what the dead branch holds
// is reported as one-off. A macro that expands to false, `&&` with a false
// constant and a local flag nothing changes are dead the same way.
#include <torch/torch.h>

#include <iostream>

#define DEBUG false
constexpr bool kHalfPrecision = false;

int main() {
  const bool IS_TRAIN = false;
  torch::Device device(torch::kCUDA);
  torch::nn::Linear model(4, 2);
  model->to(device);
  if (IS_TRAIN) {
    torch::optim::SGD opt(model->parameters(), 0.1);
    for (int epoch = 0; epoch < 10; ++epoch) {
      auto loss = model->forward(torch::randn({8, 4}, device)).sum();
      opt.zero_grad();
      loss.backward();
      opt.step();
      std::cout << loss.item<float>() << "\n";
      // CHECK-MESSAGES: :[[@LINE-1]]:25: remark: 'item()' in a branch this build never takes: {{.*}} [nosync-item]
    }
  }
  for (int i = 0; i < 1000; ++i) {
    auto output = model->forward(torch::randn({1, 4}, device));
    int label = output.argmax(1).item<int>();
    // CHECK-MESSAGES: :[[@LINE-1]]:34: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    std::cout << label << "\n";
    if (DEBUG)
      std::cout << output.max().item<float>() << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:33: remark: 'item()' in a branch this build never takes: {{.*}} [nosync-item]
    if (kHalfPrecision && i > 10)
      std::cout << output.min().item<float>() << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:33: remark: 'item()' in a branch this build never takes: {{.*}} [nosync-item]
    bool mult_error = false;
    if (mult_error)
      std::cout << output.mean().item<float>() << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:34: remark: 'item()' in a branch this build never takes: {{.*}} [nosync-item]
    bool verbose = false;
    verbose = i % 2 == 1;
    if (verbose)
      std::cout << output.sum().item<float>() << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:33: warning: 'item()' inside a loop: {{.*}} [nosync-item]
  }
  return 0;
}
