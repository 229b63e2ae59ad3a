// The model both training programs use: a deep residual MLP with a few
// hundred parameter tensors, so per-tensor loops cost what they cost in
// real models.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace examples {

struct ResidualBlockImpl : torch::nn::Module {
  explicit ResidualBlockImpl(int64_t width)
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        fc(register_module("fc", torch::nn::Linear(width, width))) {}
  torch::Tensor forward(const torch::Tensor& x) { return x + torch::gelu(fc->forward(norm->forward(x))); }
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc;
};
TORCH_MODULE(ResidualBlock);

struct ResidualMlpImpl : torch::nn::Module {
  ResidualMlpImpl(int64_t features, int64_t width, int64_t depth, int64_t classes) {
    stem = register_module("stem", torch::nn::Linear(features, width));
    for (int64_t i = 0; i < depth; ++i)
      blocks.push_back(register_module("block" + std::to_string(i), ResidualBlock(width)));
    head = register_module("head", torch::nn::Linear(width, classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = stem->forward(x);
    for (auto& b : blocks) x = b->forward(x);
    return head->forward(x);
  }
  torch::nn::Linear stem{nullptr}, head{nullptr};
  std::vector<ResidualBlock> blocks;
};
TORCH_MODULE(ResidualMlp);

}  // namespace examples
