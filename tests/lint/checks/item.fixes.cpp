// Fixture for nosync-item's fix-it: a scalar read only to be printed becomes
// a nosync::kernels::MetricAccumulator declared before the loop, fed every
// step and polled at the print; a value used in host arithmetic stays a note.
#include <torch/torch.h>

#include <cmath>
#include <iostream>
// CHECK-FIXES: #include <nosync/kernels.h>

void train(torch::nn::Linear& model, torch::optim::SGD& optimizer, const torch::Tensor& x, torch::Device device) {
  // CHECK-FIXES: nosync::kernels::MetricAccumulator loss_value_metric(device);
  for (int step = 0; step < 100; ++step) {
    auto loss = model->forward(x).sum();
    loss.backward();
    optimizer.step();
    double loss_value = loss.item<double>();
    // CHECK-MESSAGES: :[[@LINE-1]]:30: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    // CHECK-MESSAGES: :[[@LINE-2]]:30: note: fix-it: the value is only printed: a nosync::kernels::MetricAccumulator declared before the loop{{.*}}
    // CHECK-FIXES: loss_value_metric.add("loss_value", loss);
    if (step % 10 == 0) std::cout << "step " << step << " loss " << loss_value << "\n";
    // CHECK-FIXES: if (step % 10 == 0) std::cout << "step " << step << " loss " << loss_value_metric.poll_interval("loss_value") << "\n";
  }
}

void train_norm(torch::nn::Linear& model, const torch::Tensor& x, torch::Device device) {
  // CHECK-FIXES: nosync::kernels::MetricAccumulator norm_metric(device);
  double total = 0;
  for (int step = 0; step < 100; ++step) {
    auto sq = model->forward(x).pow(2).sum();
    double norm = std::sqrt(sq.item<double>());
    // CHECK-MESSAGES: :[[@LINE-1]]:32: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    // CHECK-FIXES: norm_metric.add("norm", sq.sqrt());
    double kept = sq.item<double>();
    // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    // CHECK-FIXES: double kept = sq.item<double>();
    total += kept;
    std::cout << norm << " " << kept << "\n";
    // CHECK-FIXES: std::cout << norm_metric.poll_interval("norm") << " " << kept << "\n";
  }
  std::cout << total << "\n";
}
