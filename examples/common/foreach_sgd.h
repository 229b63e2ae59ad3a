// SGD with momentum as torch::optim::SGD computes it (no dampening, weight
// decay or Nesterov), in three multi-tensor launches per step instead of
// three launches per parameter: an optimizer step over a few hundred
// parameters is itself a launch loop (nosync-launch-loop).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace examples {

class ForeachSgd {
 public:
  ForeachSgd(std::vector<torch::Tensor> params, double lr, double momentum)
      : params_(std::move(params)), lr_(lr), momentum_(momentum) {}

  // Like torch::optim's default (set_to_none): metadata only, no launch.
  void zero_grad() {
    for (auto& p : params_) p.mutable_grad().reset();
  }

  void step() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    grads.reserve(params_.size());
    for (const auto& p : params_) grads.push_back(p.grad());
    if (buffers_.empty()) {
      buffers_ = at::_foreach_mul(grads, 1.0);  // buf = clone(grad), as torch's first step
    } else {
      at::_foreach_mul_(buffers_, momentum_);  // buf = momentum * buf + grad
      at::_foreach_add_(buffers_, grads);
    }
    at::_foreach_add_(params_, buffers_, -lr_);  // p -= lr * buf
  }

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  double lr_, momentum_;
};

}  // namespace examples
