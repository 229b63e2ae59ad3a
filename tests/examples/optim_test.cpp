// The examples' multi-tensor optimizers against torch::optim on the CPU:
// ForeachSgd (learning rate on the host or in a device tensor) against
// torch::optim::SGD with momentum, ForeachAdam (learning rate and step count
// in tensors, bias corrections computed as tensors) against torch::optim::Adam,
// through a learning-rate change. The GPU side, captured in a CUDA graph, is
// tests/kernels/step_graph_gpu_test.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "common/foreach_adam.h"
#include "common/foreach_sgd.h"

namespace {

std::vector<torch::Tensor> make_params(int seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps;
  for (int64_t n : {7, 1, 33, 128}) ps.push_back(torch::randn({n}).requires_grad_(true));
  return ps;
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

void set_grads(std::vector<torch::Tensor>& ps, int step) {
  torch::manual_seed(100 + step);
  for (auto& p : ps) p.mutable_grad() = torch::randn_like(p);
}

double max_rel_gap(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, ((a[i] - b[i]).abs() / (b[i].abs() + 1e-3)).max().item<double>());
  return worst;
}

template <class Mine, class Theirs>
void follow(Mine& mine, std::vector<torch::Tensor>& mp, Theirs& theirs, std::vector<torch::Tensor>& tp,
            double tolerance) {
  for (int s = 0; s < 12; ++s) {
    if (s == 6) {  // a schedule step
      mine.set_lr(0.004);
      for (auto& g : theirs.param_groups()) g.options().set_lr(0.004);
    }
    set_grads(mp, s);
    set_grads(tp, s);
    mine.step();
    theirs.step();
    ASSERT_LT(max_rel_gap(mp, tp), tolerance) << "after step " << s;
  }
  // It moved: a step that did nothing on both sides would also agree.
  EXPECT_GT(max_rel_gap(mp, make_params(1)), 1e-3);
}

}  // namespace

TEST(ExamplesOptim, ForeachSgdFollowsTorchSgd) {
  for (examples::LrOn where : {examples::LrOn::Host, examples::LrOn::Device}) {
    auto mp = make_params(1), tp = clones(mp);
    examples::ForeachSgd mine(mp, 0.05, 0.9, where);
    torch::optim::SGD theirs(tp, torch::optim::SGDOptions(0.05).momentum(0.9));
    follow(mine, mp, theirs, tp, 1e-5);
  }
}

TEST(ExamplesOptim, ForeachAdamFollowsTorchAdam) {
  auto mp = make_params(1), tp = clones(mp);
  examples::ForeachAdam mine(mp, 0.01);
  torch::optim::Adam theirs(tp, torch::optim::AdamOptions(0.01));
  follow(mine, mp, theirs, tp, 1e-4);
  EXPECT_EQ(mine.step_count().item<float>(), 12.0f);
}
