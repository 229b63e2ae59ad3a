// NOSYNC-CONFIG: {CheckOptions: {nosync-item.LowSeverity: silent}}
// Fixture for the LowSeverity option: `silent` drops throttled, test and
// one-off findings; hot ones stay warnings.
#include <torch/torch.h>

#include <iostream>

void train(torch::nn::Linear& model, const torch::Tensor& x) {
  for (int step = 0; step < 100; ++step) {
    auto loss = model->forward(x).sum();
    float value = loss.item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    if (step % 10 == 0) std::cout << loss.item<float>() << "\n";
    (void)value;
  }
}

int main() {
  torch::nn::Linear model(3, 1);
  auto x = torch::randn({8, 3}, torch::kCUDA);
  std::cout << x.norm().item<float>() << "\n";
  train(model, x);
  return 0;
}
