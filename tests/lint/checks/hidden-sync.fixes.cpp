// Fixture for nosync-hidden-sync's fix-it: clip_grad_norm_ whose double is
// thrown away becomes nosync::kernels::clip_grad_norm_; a used double is a
// note.
#include <torch/torch.h>
// CHECK-FIXES: #include <nosync/kernels.h>

void train(torch::nn::Linear& model, torch::optim::SGD& optimizer, const torch::Tensor& x) {
  for (int step = 0; step < 100; ++step) {
    model->forward(x).sum().backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'clip_grad_norm_()' inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: note: fix-it: nosync::kernels::clip_grad_norm_ clips the same gradients by the same factor without a sync{{.*}}
    // CHECK-FIXES: nosync::kernels::clip_grad_norm_(model->parameters(), 1.0);
    (void)torch::nn::utils::clip_grad_norm_(model->parameters(), 2.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:11: warning: 'clip_grad_norm_()' inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-FIXES: (void)nosync::kernels::clip_grad_norm_(model->parameters(), 2.0);
    double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'clip_grad_norm_()' inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:19: note: the double returned by clip_grad_norm_ is used in host arithmetic{{.*}}
    // CHECK-FIXES: double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);
    if (norm > 10.0) optimizer.zero_grad();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, /*norm_type=*/1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'clip_grad_norm_()' inside a loop: {{.*}} [nosync-hidden-sync]
    // CHECK-FIXES: torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, /*norm_type=*/1.0);
    optimizer.step();
  }
}
