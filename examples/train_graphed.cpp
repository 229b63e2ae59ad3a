// train_fixed.cpp with its sync-free step captured once in a CUDA graph and
// replayed: the same model, data, seed and optimizer, so the three programs
// print the same loss curve. What is left in a sync-free step is launch
// overhead (a few hundred small kernels, each costing more host time to
// enqueue than GPU time to run); a replay enqueues them all with one launch.
// What changed from train_fixed, and why:
//   the step is a function given to nosync::kernels::StepGraph
//       it warms up eagerly, is captured once, then replayed
//   the batch is copied into the graph's static inputs  the graph reads fixed addresses
//   the learning rate is a device tensor (LrOn::Device) a schedule must not need a recapture
//   loss, grad norm and accuracy are the graph's outputs read after each replay, on the device
// On the CPU, StepGraph runs the step eagerly: the program is drop-in there.
//
//   train_graphed [--steps N] [--device cpu|cuda|auto] [--seed S] ... [--assert-sync-free 1] [--plant-sync 1]
//
// --assert-sync-free 1 (CUDA, built with nosync::sanitizer) runs every replay
// inside nosync::sanitizer::SyncFreeScope. --plant-sync 1 puts a loss.item()
// into the step: the capture then fails with nosync's CaptureSyncError naming
// this file's line and nosync-item.
#include <nosync/kernels.h>
#ifdef NOSYNC_HAVE_SANITIZER
#include <nosync/sanitizer.h>
#endif
#include <torch/torch.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>

#include "common/foreach_sgd.h"
#include "common/residual_mlp.h"
#include "common/synthetic_data.h"
#include "common/train_options.h"

using examples::ResidualMlp;
namespace nk = nosync::kernels;

static int train(const examples::TrainOptions& opt) {
  torch::Device device = examples::pick_device(opt);
  auto dataset = examples::make_dataset(examples::kDatasetBatches, opt.batch, examples::kFeatures,
                                        examples::kClasses, opt.seed, /*pinned=*/device.is_cuda());
  torch::manual_seed(opt.seed);
  ResidualMlp model(examples::kFeatures, opt.width, opt.depth, examples::kClasses);
  model->to(device);
  auto params = model->parameters();
  examples::ForeachSgd optimizer(params, /*lr=*/0.02, /*momentum=*/0.9, examples::LrOn::Device);

  auto on_device = torch::TensorOptions().device(device);
  torch::Tensor class_weight = torch::ones({examples::kClasses}, on_device);
  torch::Tensor nonfinite = torch::zeros({1}, on_device.dtype(torch::kInt32));
  torch::Tensor loss_history = torch::empty({opt.steps}, on_device.dtype(torch::kFloat));
  nk::MetricAccumulator metrics(device);
  if (opt.assert_sync_free && !device.is_cuda()) {
    std::cerr << "error: --assert-sync-free needs --device cuda\n";
    return 2;
  }

  // The whole step: forward, backward, NaN flag, clip, optimizer step.
  nk::StepGraphOptions graph_options;
  nk::StepGraph train_step(device, [&](const std::vector<torch::Tensor>& in) {
    const torch::Tensor& x = in[0];
    const torch::Tensor& y = in[1];
    optimizer.zero_grad();
    torch::Tensor logits = model->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, y, torch::nn::functional::CrossEntropyFuncOptions().weight(class_weight));
    if (opt.plant_sync && loss.item<float>() < 0) std::cerr << "negative loss\n";  // planted: a host sync
    loss.backward();
    nk::nonfinite_flag({loss}, nonfinite);
    torch::Tensor grad_norm = nk::clip_grad_norm_(params, 1.0);
    optimizer.step();
    torch::Tensor acc = logits.argmax(1).eq(y).to(torch::kFloat).mean();
    return std::vector<torch::Tensor>{loss.detach(), grad_norm, acc};
  }, graph_options);
#ifdef NOSYNC_HAVE_SANITIZER
  std::optional<nosync::sanitizer::SyncFreeScope> sync_free;
#endif

  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < opt.steps; ++step) {
#ifdef NOSYNC_HAVE_SANITIZER
    sync_free.reset();  // ends (and checks) the previous step
    // Warm-up and capture allocate the graph's memory; replays must not wait.
    if (opt.assert_sync_free && step > graph_options.warmup_steps)
      sync_free.emplace("train_graphed step " + std::to_string(step));
#endif
    const auto& batch = dataset[step % dataset.size()];
    std::vector<torch::Tensor> out = train_step({batch.x, batch.y});  // outputs valid until the next step

    loss_history[step].copy_(out[0]);
    metrics.add("loss", out[0]);
    metrics.add("grad_norm", out[1]);
    metrics.add("acc", out[2]);

    if (step % opt.log_every == 0) {
      if (auto m = metrics.poll())  // values from a few steps ago; never waits
        std::cout << "step " << step << " loss " << m->at("loss") << " grad_norm "
                  << m->at("grad_norm") << " acc " << m->at("acc") << " (running means)\n";
    }
  }
#ifdef NOSYNC_HAVE_SANITIZER
  sync_free.reset();
#endif
  torch::Tensor losses = loss_history.cpu();  // the one sync of the run
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (nonfinite.cpu().item<int>() != 0) {
    std::cerr << "non-finite loss during training\n";
    return 1;
  }

  auto final_metrics = metrics.flush();
  std::cout << std::setprecision(9);
  auto l = losses.accessor<float, 1>();
  for (int i = 0; i < opt.steps; ++i) std::cout << "loss[" << i << "]=" << l[i] << "\n";
  std::cout << "mean_loss=" << final_metrics.at("loss") << " device=" << device
            << " params=" << params.size() << " captures=" << train_step.captures() << "\n";
  std::cout << "steps_per_sec=" << opt.steps / seconds << "\n";
  return 0;
}

int main(int argc, char** argv) {
  auto opt = examples::parse_train_options(argc, argv);
  try {
    return train(opt);
  } catch (const nk::CaptureSyncError& e) {  // a host sync inside the captured step
    std::cerr << "error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {  // e.g. nosync::sanitizer::HostSyncError
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
