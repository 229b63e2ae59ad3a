// SGD with momentum as torch::optim::SGD computes it (no dampening, weight
// decay or Nesterov), in three multi-tensor launches per step instead of
// three launches per parameter: an optimizer step over a few hundred
// parameters is itself a launch loop (nosync-launch-loop).
//
// CUDA-graph capturable: the step reads nothing from the host that changes
// between steps. With LrOn::Device the learning rate is a 0-d tensor on the
// parameters' device that set_lr() rewrites in place (one tiny kernel, no
// sync), so a schedule changes it under a captured graph; with LrOn::Host it
// is a constant baked into each launch (a graph replays the value it saw).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace examples {

enum class LrOn { Host, Device };

class ForeachSgd {
 public:
  ForeachSgd(std::vector<torch::Tensor> params, double lr, double momentum, LrOn where = LrOn::Host)
      : params_(std::move(params)), lr_(lr), momentum_(momentum) {
    if (where == LrOn::Device && !params_.empty())
      lr_device_ = torch::full({}, lr, params_.front().options().requires_grad(false));
  }

  // Like torch::optim's default (set_to_none): metadata only, no launch.
  void zero_grad() {
    for (auto& p : params_) p.mutable_grad().reset();
  }

  void set_lr(double lr) {
    lr_ = lr;
    if (lr_device_.defined()) lr_device_.fill_(lr);
  }

  void step() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    grads.reserve(params_.size());
    for (const auto& p : params_) grads.push_back(p.grad());
    // The first step's branch is host state, not a tensor value: by the time
    // a graph is captured (after warm-up steps) it is always the second.
    if (buffers_.empty()) {
      buffers_ = at::_foreach_mul(grads, 1.0);  // buf = clone(grad), as torch's first step
    } else {
      at::_foreach_mul_(buffers_, momentum_);  // buf = momentum * buf + grad
      at::_foreach_add_(buffers_, grads);
    }
    if (lr_device_.defined()) {
      at::_foreach_sub_(params_, at::_foreach_mul(buffers_, lr_device_));  // p -= lr * buf, lr read on the device
    } else {
      at::_foreach_add_(params_, buffers_, -lr_);  // p -= lr * buf
    }
  }

 private:
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  double lr_, momentum_;
  torch::Tensor lr_device_;  // LrOn::Device
};

}  // namespace examples
