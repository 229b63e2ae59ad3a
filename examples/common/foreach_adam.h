// Adam (no weight decay, no amsgrad) as torch::optim::Adam computes it, in a
// dozen multi-tensor launches per step, with the learning rate and the step
// count in 0-d device tensors: the bias corrections are computed on the
// device, so nothing in the step reads a host value that changes between
// steps and the whole step can be captured in a CUDA graph and replayed
// (torch's own "capturable" Adam does the same in Python).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace examples {

class ForeachAdam {
 public:
  ForeachAdam(std::vector<torch::Tensor> params, double lr, double beta1 = 0.9, double beta2 = 0.999,
              double eps = 1e-8)
      : params_(std::move(params)), beta1_(beta1), beta2_(beta2), eps_(eps) {
    auto opts = params_.empty() ? torch::TensorOptions() : params_.front().options().requires_grad(false);
    lr_ = torch::full({}, lr, opts);
    step_ = torch::zeros({}, opts);
  }

  void zero_grad() {
    for (auto& p : params_) p.mutable_grad().reset();
  }

  void set_lr(double lr) { lr_.fill_(lr); }  // in place: a captured graph sees it
  const torch::Tensor& step_count() const { return step_; }

  void step() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    grads.reserve(params_.size());
    for (const auto& p : params_) grads.push_back(p.grad());
    if (exp_avg_.empty()) {  // lazy state: made during warm-up, before any capture
      for (const auto& p : params_) {
        exp_avg_.push_back(torch::zeros_like(p));
        exp_avg_sq_.push_back(torch::zeros_like(p));
      }
    }
    step_.add_(1);
    // bias_correction1 = 1 - beta1^t, bias_correction2 = 1 - beta2^t, on the device
    const torch::Tensor step_size = lr_ / (1 - torch::pow(beta1_, step_));
    const torch::Tensor bc2_sqrt = (1 - torch::pow(beta2_, step_)).sqrt();

    at::_foreach_mul_(exp_avg_, beta1_);  // m = beta1 m + (1 - beta1) g
    at::_foreach_add_(exp_avg_, grads, 1 - beta1_);
    at::_foreach_mul_(exp_avg_sq_, beta2_);  // v = beta2 v + (1 - beta2) g^2
    at::_foreach_addcmul_(exp_avg_sq_, grads, grads, 1 - beta2_);
    auto denom = at::_foreach_sqrt(exp_avg_sq_);  // sqrt(v) / sqrt(bc2) + eps
    at::_foreach_div_(denom, bc2_sqrt);
    at::_foreach_add_(denom, eps_);
    auto update = at::_foreach_div(exp_avg_, denom);  // p -= lr / bc1 * m / denom
    at::_foreach_mul_(update, step_size);
    at::_foreach_sub_(params_, update);
  }

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  double beta1_, beta2_, eps_;
  torch::Tensor lr_, step_;
};

}  // namespace examples
