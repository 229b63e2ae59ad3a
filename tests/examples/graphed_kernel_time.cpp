// How close the graphed step comes to the GPU's own time: train_graphed's
// step (same model, data and optimizer) captured with StepGraph, then
//   wall:    host time per step over 200 steps (inputs copied, graph replayed,
//            one sync at the end), as train_graphed measures it;
//   kernels: the sum of the durations of every kernel of a step, from CUPTI
//            activity records over 50 further steps.
// A step time near the kernel sum means the host no longer limits the step:
// what remains is GPU work and the gaps between kernels inside the graph.
// Prints one summary line last (tests/examples/train_gpu.sh quotes it).
#include <cupti.h>
#include <nosync/kernels.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common/foreach_sgd.h"
#include "common/residual_mlp.h"
#include "common/synthetic_data.h"
#include "common/train_options.h"

namespace nk = nosync::kernels;

namespace {

struct Totals {
  uint64_t from = 0;  // CUPTI timestamp: records that start earlier are not counted
  double kernel_ns = 0;
  long kernels = 0;
  double copy_ns = 0;  // memcpy / memset records, reported apart
} g_totals;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = 8 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = *buffer ? kBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (k->start < g_totals.from) continue;
      g_totals.kernel_ns += static_cast<double>(k->end - k->start);
      ++g_totals.kernels;
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (m->start < g_totals.from) continue;
      g_totals.copy_ns += static_cast<double>(m->end - m->start);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (m->start < g_totals.from) continue;
      g_totals.copy_ns += static_cast<double>(m->end - m->start);
    }
  }
  std::free(buffer);
}

bool ok(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::cerr << what << ": " << (s ? s : "CUPTI error") << "\n";
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA GPU on this machine\n";
    return 77;
  }
  auto opt = examples::parse_train_options(argc, argv);
  const torch::Device device(torch::kCUDA);
  auto dataset = examples::make_dataset(examples::kDatasetBatches, opt.batch, examples::kFeatures,
                                        examples::kClasses, opt.seed, /*pinned=*/true);
  torch::manual_seed(opt.seed);
  examples::ResidualMlp model(examples::kFeatures, opt.width, opt.depth, examples::kClasses);
  model->to(device);
  auto params = model->parameters();
  examples::ForeachSgd optimizer(params, 0.02, 0.9, examples::LrOn::Device);
  torch::Tensor class_weight = torch::ones({examples::kClasses}, torch::TensorOptions().device(device));
  torch::Tensor nonfinite = torch::zeros({1}, torch::TensorOptions().device(device).dtype(torch::kInt32));
  auto step_fn = [&](const std::vector<torch::Tensor>& in) {
    optimizer.zero_grad();
    torch::Tensor logits = model->forward(in[0]);
    torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, in[1], torch::nn::functional::CrossEntropyFuncOptions().weight(class_weight));
    loss.backward();
    nk::nonfinite_flag({loss}, nonfinite);
    torch::Tensor grad_norm = nk::clip_grad_norm_(params, 1.0);
    optimizer.step();
    torch::Tensor acc = logits.argmax(1).eq(in[1]).to(torch::kFloat).mean();
    return std::vector<torch::Tensor>{loss.detach(), grad_norm, acc};
  };
  nk::StepGraph train_step(device, step_fn);
  int step = 0;
  auto run = [&](nk::StepGraph& graph, int n) {
    for (int i = 0; i < n; ++i, ++step) {
      const auto& b = dataset[step % dataset.size()];
      (void)graph({b.x, b.y});
    }
  };
  run(train_step, 10);  // warm-up, capture, first replays
  torch::cuda::synchronize();

  constexpr int kWall = 200, kTraced = 50;
  const auto t0 = std::chrono::steady_clock::now();
  run(train_step, kWall);
  torch::cuda::synchronize();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / kWall;

  if (!ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks") ||
      !ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(kernel)"))
    return 1;
  ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(memcpy)");
  ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityEnable(memset)");
  // A second graph of the same step, captured with tracing on (a graph
  // instantiated before may not be traced), and the wall time above taken
  // without CUPTI in the process.
  nk::StepGraph traced_step(device, step_fn);
  run(traced_step, 10);
  torch::cuda::synchronize();
  cuptiGetTimestamp(&g_totals.from);
  run(traced_step, kTraced);
  torch::cuda::synchronize();
  cuptiActivityFlushAll(1);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);

  const double kernel_ms = g_totals.kernel_ns / kTraced / 1e6;
  const double copy_ms = g_totals.copy_ns / kTraced / 1e6;
  char line[400];
  std::snprintf(line, sizeof line,
                "step %.3f ms wall (%d steps), kernels %.3f ms summed (%.0f kernels per step; copies/memsets "
                "%.3f ms), wall / kernels %.3f (goal <= 1.10), replayed=%d",
                wall_ms, kWall, kernel_ms, static_cast<double>(g_totals.kernels) / kTraced, copy_ms,
                wall_ms / kernel_ms, train_step.replayed() && traced_step.replayed() ? 1 : 0);
  std::cout << line << "\n";
  return 0;
}
