// Fixture for nosync-launch-loop's fix-its: loops over a tensor list that
// --fix turns into one multi-tensor call, and loops it leaves as a note.
#include <torch/torch.h>

#include <vector>
// CHECK-FIXES: #include <nosync/kernels.h>

void train(torch::nn::Linear& model, std::vector<torch::Tensor>& params, const torch::Tensor& coef, double lr) {
  for (int step = 0; step < 100; ++step) {
    model->forward(torch::ones({2, 4})).sum().backward();
    auto sq = torch::zeros({});
    for (const auto& p : model->parameters()) sq += p.grad().pow(2).sum();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'model->parameters()' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: note: fix-it: the loop becomes one multi-tensor reduction over the list{{.*}}
    // CHECK-FIXES: sq += nosync::kernels::l2_norm(nosync::kernels::grads_of(model->parameters())).pow(2);
    auto total = torch::zeros({});
    for (size_t i = 0; i < params.size(); ++i) {
      // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
      total += params[i].sum();
    }
    // CHECK-FIXES: total += nosync::kernels::sum(params);
    auto norms = torch::zeros({});
    for (const auto& item : model->named_parameters()) norms += item.value().grad().norm();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'model->named_parameters()' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: norms += nosync::kernels::l2_norm_per_tensor(nosync::kernels::grads_of(model->named_parameters().values())).sum();
    for (auto& p : params) sq += p.norm(2).pow(2);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: sq += nosync::kernels::l2_norm(params).pow(2);
    for (auto& p : params) sq += (p * p).sum();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: sq += nosync::kernels::l2_norm(params).pow(2);
    for (auto& p : params) total += p.abs().sum();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: total += nosync::kernels::sum(at::_foreach_abs(params));

    // Hand-written clipping and SGD: the at::_foreach_* ops.
    for (auto& p : model->parameters()) p.grad().mul_(coef);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'model->parameters()' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: note: fix-it: the per-tensor update becomes one at::_foreach_* call{{.*}}
    // CHECK-FIXES: at::_foreach_mul_(nosync::kernels::grads_of(model->parameters()), coef);
    for (auto& p : params) p.data().add_(p.grad(), -lr);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: { torch::NoGradGuard no_grad; at::_foreach_add_(params, nosync::kernels::grads_of(params), -lr); };
    for (auto& p : params) {
      // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
      if (!p.grad().defined()) continue;
      p.grad().zero_();
    }
    // CHECK-FIXES: at::_foreach_zero_(nosync::kernels::grads_of(params));

    // Left as notes: more than one statement, a per-element factor, a loop
    // that skips the first element.
    for (auto& p : params) {
      // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
      // CHECK-MESSAGES: :[[@LINE-2]]:5: note: compute the norms in one launch{{.*}}
      auto g = p.grad();
      sq += g.norm();
    }
    // CHECK-FIXES: auto g = p.grad();
    for (auto& p : params) p.grad().mul_(p.norm());
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: for (auto& p : params) p.grad().mul_(p.norm());
    for (size_t i = 1; i < params.size(); ++i) total += params[i].sum();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'params' inside a loop: {{.*}} [nosync-launch-loop]
    // CHECK-FIXES: for (size_t i = 1; i < params.size(); ++i) total += params[i].sum();
  }
}
