// NOSYNC-CONFIG: {CheckOptions: {LowSeverity: warning}}
// Fixture for the global LowSeverity option: `warning` reports throttled and
// one-off findings as warnings, still saying where they are.
#include <torch/torch.h>

#include <iostream>

void train(torch::nn::Linear& model, const torch::Tensor& x) {
  for (int step = 0; step < 100; ++step) {
    auto loss = model->forward(x).sum();
    if (step % 10 == 0) std::cout << loss.item<float>() << "\n";
    // CHECK-MESSAGES: :[[@LINE-1]]:43: warning: 'item()' in throttled code (runs every N-th iteration): {{.*}} [nosync-item]
  }
}

int main() {
  torch::nn::Linear model(3, 1);
  auto x = torch::randn({8, 3}, torch::kCUDA);
  std::cout << x.norm().item<float>() << "\n";
  // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  train(model, x);
  return 0;
}
