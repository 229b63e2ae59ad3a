// Fixture for nosync-item in code the compiler dropped. `make_loader` is not
// declared (as when its header was not found), so `loader` has no type and
// Clang leaves every range-for over it out of the AST, body and all. The
// check reads the calls of the dropped text (utils/DroppedCode.h); the
// context comes from the AST around it and from the dropped loops.
#include <torch/torch.h>

#include <iostream>

void train(torch::nn::Linear& model, torch::optim::SGD& optimizer) {
  float total_seen = 0;
  auto loader = make_loader("data/");
  // CHECK-MESSAGES: :[[@LINE-1]]:17: error: use of undeclared identifier 'make_loader' [clang-diagnostic-error]
  for (int epoch = 0; epoch < 10; ++epoch) {
    double total = 0;
    for (torch::data::Example<>& batch : *loader) {
      auto loss = model->forward(batch.data).mean();
      total += loss.item<double>();
      // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    }
    if (epoch % 5 == 0) {
      for (auto& batch : *loader) {
        std::cout << model->forward(batch.data).mean().item<float>() << "\n";
        // CHECK-MESSAGES: :[[@LINE-1]]:56: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
      }
    }
  }
  // An `if (i % n == 0)` inside the dropped text throttles like one in the
  // AST; its `else`, and the statement after a braceless one, do not.
  for (auto& batch : *loader) {
    int step = batch.data.size(0);
    if (step % 50 == 0) std::cout << model->forward(batch.data).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:71: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
    if (step % 10 == 0) {
      std::cout << model->forward(batch.data).max().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:53: remark: 'item()' (in a statement that did not compile, read from its text) in throttled code{{.*}} [nosync-item]
    } else {
      total_seen += model->forward(batch.data).min().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:54: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
    }
  }
  // A dropped loop is a loop: its calls run once per batch.
  for (auto& batch : *loader) std::cout << model->forward(batch.data).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:77: warning: 'item()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-item]
#if 0
  for (auto& batch : *loader) std::cout << batch.data.sum().item<float>();
#endif
  // Not an op of this rule, and a user's own function named like one.
  for (auto& batch : *loader) {
    auto n = batch.data.numel();
    item(batch);
  }
}
