// train_hazards.cpp with every host sync removed: the same model, data, seed
// and optimizer, so the two print the same loss curve. What changed, and the
// rule each change answers:
//   dataset pinned once, non_blocking copies  nosync-pageable-h2d
//   constants built once on the device        nosync-pageable-h2d
//   NaN check into a device flag, read late   nosync-bool-condition
//   one multi-tensor norm + sync-free clip    nosync-launch-loop, nosync-hidden-sync
//   multi-tensor SGD step (at::_foreach_*)    nosync-launch-loop
//   metrics accumulated on the device         nosync-item, nosync-device-to-host
//   no per-step synchronize                   nosync-explicit-sync
//
//   train_fixed [--steps N] [--device cpu|cuda|auto] [--seed S] ... [--assert-sync-free 1]
//
// --assert-sync-free 1 (CUDA, built with nosync::sanitizer) wraps every step
// after the first, warm-up one in nosync::sanitizer::SyncFreeScope: the run
// fails with a HostSyncError naming the site if any step blocks the host.
// Batches from a loader that makes new pageable tensors every step would go
// through nosync::kernels::PinnedStager instead of the pinned dataset.
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
  examples::ForeachSgd optimizer(params, /*lr=*/0.02, /*momentum=*/0.9);

  auto on_device = torch::TensorOptions().device(device);
  torch::Tensor class_weight = torch::ones({examples::kClasses}, on_device);
  torch::Tensor nonfinite = torch::zeros({1}, on_device.dtype(torch::kInt32));
  torch::Tensor loss_history = torch::empty({opt.steps}, on_device.dtype(torch::kFloat));
  nk::MetricAccumulator metrics(device);
#ifdef NOSYNC_HAVE_SANITIZER
  std::optional<nosync::sanitizer::SyncFreeScope> sync_free;
#endif
  if (opt.assert_sync_free && !device.is_cuda()) {
    std::cerr << "error: --assert-sync-free needs --device cuda\n";
    return 2;
  }

  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < opt.steps; ++step) {
#ifdef NOSYNC_HAVE_SANITIZER
    sync_free.reset();  // ends (and checks) the previous step
    if (opt.assert_sync_free && step > 0) sync_free.emplace("train_fixed step " + std::to_string(step));
#endif
    const auto& batch = dataset[step % dataset.size()];
    torch::Tensor x = batch.x.to(device, /*non_blocking=*/true);
    torch::Tensor y = batch.y.to(device, /*non_blocking=*/true);

    optimizer.zero_grad();
    torch::Tensor logits = model->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, y, torch::nn::functional::CrossEntropyFuncOptions().weight(class_weight));
    loss.backward();
    nk::nonfinite_flag({loss}, nonfinite);

    torch::Tensor grad_norm = nk::clip_grad_norm_(params, 1.0);
    optimizer.step();

    loss_history[step].copy_(loss.detach());
    metrics.add("loss", loss.detach());
    metrics.add("grad_norm", grad_norm);
    metrics.add("acc", logits.argmax(1).eq(y).to(torch::kFloat).mean());

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
            << " params=" << params.size() << "\n";
  std::cout << "steps_per_sec=" << opt.steps / seconds << "\n";
  return 0;
}

int main(int argc, char** argv) {
  auto opt = examples::parse_train_options(argc, argv);
  try {
    return train(opt);
  } catch (const std::exception& e) {  // e.g. nosync::sanitizer::HostSyncError
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
