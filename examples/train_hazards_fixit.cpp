// A LibTorch training program written the way such programs are often
// written, carrying every host-sync pattern nosync-lint knows. Its twin,
// train_fixed.cpp, trains the same model on the same data without them.
//
//   train_hazards [--steps N] [--device cpu|cuda|auto] [--seed S] ...
//
// Prints a line every --log-every steps, then `loss[<step>]=` for every step
// and a final `steps_per_sec=` line (the examples test compares the twins).
#include <nosync/kernels.h>
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
  nosync::kernels::PinnedStager x_stager(device);
  nosync::kernels::PinnedStager y_stager(device);
  nosync::kernels::MetricAccumulator grad_norm_metric(device);
  for (int step = 0; step < opt.steps; ++step) {
    const auto& batch = dataset[step % dataset.size()];
    torch::Tensor x = x_stager.stage(batch.x);  // pageable host memory, blocking copy
    torch::Tensor y = y_stager.stage(batch.y);
    torch::Tensor class_weight = torch::ones({examples::kClasses}, device);  // built on the CPU every step

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
    grad_sq += nosync::kernels::l2_norm(nosync::kernels::grads_of(model->parameters())).pow(2);  // one launch per tensor
    grad_norm_metric.add("grad_norm", grad_sq.sqrt());

    nosync::kernels::clip_grad_norm_(model->parameters(), 1.0);  // returns a double: syncs inside
    optimizer.step();

    double loss_value = loss.item<double>();  // sync every step
    losses.push_back(loss_value);
    running_loss += loss_value;
    torch::Tensor predictions = logits.argmax(1).cpu();  // copies back every step
    correct += predictions.eq(batch.y).sum().item<int64_t>();
    seen += batch.y.size(0);
    if (device.is_cuda()) torch::cuda::synchronize();  // "accurate" per-step timing

    if (step % opt.log_every == 0) {
      std::cout << "step " << step << " loss " << loss_value << " grad_norm " << grad_norm_metric.poll_interval("grad_norm")
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
