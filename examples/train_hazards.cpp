// A LibTorch training program written the way such programs are often
// written, carrying every host-sync pattern nosync-lint knows. Its twin,
// train_fixed.cpp, trains the same model on the same data without them.
//
//   train_hazards [--steps N] [--device cpu|cuda|auto] [--seed S] ...
//
// Prints a line every --log-every steps, then `loss[<step>]=` for every step
// and a final `steps_per_sec=` line (the examples test compares the twins).
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <vector>

#include "common/residual_mlp.h"
#include "common/synthetic_data.h"
#include "common/train_options.h"

using examples::ResidualMlp;

int main(int argc, char** argv) {
  auto opt = examples::parse_train_options(argc, argv);
  torch::Device device = examples::pick_device(opt);
  auto dataset = examples::make_dataset(examples::kDatasetBatches, opt.batch, examples::kFeatures,
                                        examples::kClasses, opt.seed);
  torch::manual_seed(opt.seed);
  ResidualMlp model(examples::kFeatures, opt.width, opt.depth, examples::kClasses);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.02).momentum(0.9));

  std::vector<double> losses;
  double running_loss = 0.0;
  int64_t correct = 0, seen = 0;
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < opt.steps; ++step) {
    const auto& batch = dataset[step % dataset.size()];
    torch::Tensor x = batch.x.to(device);  // pageable host memory, blocking copy
    torch::Tensor y = batch.y.to(device);
    torch::Tensor class_weight = torch::ones({examples::kClasses}).to(device);  // built on the CPU every step

    optimizer.zero_grad();
    torch::Tensor logits = model->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, y, torch::nn::functional::CrossEntropyFuncOptions().weight(class_weight));
    loss.backward();

    if (torch::isnan(loss).item<bool>()) {  // host waits to decide the branch
      std::cerr << "non-finite loss at step " << step << "\n";
      return 1;
    }

    torch::Tensor grad_sq = torch::zeros({}, device);
    for (const auto& p : model->parameters()) grad_sq += p.grad().pow(2).sum();  // one launch per tensor
    double grad_norm = std::sqrt(grad_sq.item<double>());

    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);  // returns a double: syncs inside
    optimizer.step();

    double loss_value = loss.item<double>();  // sync every step
    losses.push_back(loss_value);
    running_loss += loss_value;
    torch::Tensor predictions = logits.argmax(1).cpu();  // copies back every step
    correct += predictions.eq(batch.y).sum().item<int64_t>();
    seen += batch.y.size(0);
    if (device.is_cuda()) torch::cuda::synchronize();  // "accurate" per-step timing

    if (step % opt.log_every == 0) {
      std::cout << "step " << step << " loss " << loss_value << " grad_norm " << grad_norm
                << " acc " << static_cast<double>(correct) / seen << "\n";
    }
  }
  if (device.is_cuda()) torch::cuda::synchronize();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << std::setprecision(9);
  for (size_t i = 0; i < losses.size(); ++i) std::cout << "loss[" << i << "]=" << losses[i] << "\n";
  std::cout << "mean_loss=" << running_loss / opt.steps << " device=" << device
            << " params=" << model->parameters().size() << "\n";
  std::cout << "steps_per_sec=" << opt.steps / seconds << "\n";
  return 0;
}
