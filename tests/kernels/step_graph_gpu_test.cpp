// nosync::kernels::StepGraph on the GPU: a replayed step gives the same bits
// as the same step run eagerly on the same inputs (SGD and Adam, with a
// learning-rate change under the graph), shape changes recapture or are
// refused, a sync planted in the step is named by file:line and rule, and
// the state a failed capture leaves behind still lets the next one work.
// Every test skips visibly where no GPU exists.
#include <c10/cuda/CUDAFunctions.h>
#include <gtest/gtest.h>
#include <nosync/kernels.h>
#include <torch/torch.h>

#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <string>

#include "common/foreach_adam.h"
#include "common/foreach_sgd.h"
#include "common/residual_mlp.h"

namespace nk = nosync::kernels;

#define SKIP_WITHOUT_GPU()                                                                 \
  if (!torch::cuda::is_available())                                                        \
  GTEST_SKIP() << "no CUDA GPU on this machine; this test runs on the GPU machine "        \
                  "(tests/gpu/run)"

namespace {

const torch::Device kCuda(torch::kCUDA, 0);
constexpr int64_t kFeatures = 32, kClasses = 10;

// A model, its optimizer and the step StepGraph runs: forward, loss,
// backward, nosync clip, optimizer step, as the examples do.
template <class Optimizer>
struct Trainer {
  examples::ResidualMlp model{kFeatures, 64, 4, kClasses};
  std::vector<torch::Tensor> params;
  std::unique_ptr<Optimizer> optimizer;

  explicit Trainer(std::function<std::unique_ptr<Optimizer>(std::vector<torch::Tensor>)> make) {
    torch::manual_seed(7);
    model = examples::ResidualMlp(kFeatures, 64, 4, kClasses);
    model->to(kCuda);
    params = model->parameters();
    optimizer = make(params);
  }
  std::vector<torch::Tensor> step(const std::vector<torch::Tensor>& in) {
    optimizer->zero_grad();
    torch::Tensor logits = model->forward(in[0]);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, in[1]);
    loss.backward();
    torch::Tensor norm = nk::clip_grad_norm_(params, 0.5);
    optimizer->step();
    return {loss.detach(), norm};
  }
};

std::vector<torch::Tensor> batch(int64_t rows, int seed) {
  torch::manual_seed(1000 + seed);
  torch::Tensor x = torch::randn({rows, kFeatures});
  return {x.pin_memory(), x.narrow(1, 0, kClasses).argmax(1).pin_memory()};
}

bool same_bits(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i].cpu(), b[i].cpu())) return false;
  return true;
}

// The replayed trainer and an eager twin (warm-up never ends: the same
// copies, the same side stream, only no graph) see the same batches.
template <class Optimizer>
void expect_replay_equals_eager(std::function<std::unique_ptr<Optimizer>(std::vector<torch::Tensor>)> make) {
  Trainer<Optimizer> graphed(make), eager(make);
  ASSERT_TRUE(same_bits(graphed.params, eager.params));
  nk::StepGraphOptions graph_opts;
  graph_opts.warmup_steps = 2;
  nk::StepGraphOptions eager_opts;
  eager_opts.warmup_steps = std::numeric_limits<int>::max();
  nk::StepGraph g(kCuda, [&](const std::vector<torch::Tensor>& in) { return graphed.step(in); }, graph_opts);
  nk::StepGraph e(kCuda, [&](const std::vector<torch::Tensor>& in) { return eager.step(in); }, eager_opts);
  for (int s = 0; s < 8; ++s) {
    if (s == 5) {  // a schedule: the graph must read the new value from the device
      graphed.optimizer->set_lr(0.003);
      eager.optimizer->set_lr(0.003);
    }
    auto in = batch(24, s);
    auto out_g = g(in);
    EXPECT_EQ(g.replayed(), s >= 2) << "step " << s;
    auto out_e = e(in);
    EXPECT_FALSE(e.replayed());
    EXPECT_TRUE(same_bits(out_g, out_e)) << std::setprecision(9) << "step " << s << ": loss "
                                         << out_g[0].item<float>() << " vs " << out_e[0].item<float>();
    EXPECT_TRUE(same_bits(graphed.params, eager.params)) << "parameters differ after step " << s;
  }
  EXPECT_EQ(g.captures(), 1);
  EXPECT_EQ(e.captures(), 0);
  // Something was learned: a replayed step that did nothing would also match
  // an eager twin that did nothing.
  Trainer<Optimizer> untouched(make);
  EXPECT_FALSE(same_bits(graphed.params, untouched.params));
}

}  // namespace

TEST(StepGraphGpu, ReplayEqualsEagerBitwiseSgd) {
  SKIP_WITHOUT_GPU();
  expect_replay_equals_eager<examples::ForeachSgd>([](std::vector<torch::Tensor> p) {
    return std::make_unique<examples::ForeachSgd>(std::move(p), 0.05, 0.9, examples::LrOn::Device);
  });
}

TEST(StepGraphGpu, ReplayEqualsEagerBitwiseAdam) {
  SKIP_WITHOUT_GPU();
  expect_replay_equals_eager<examples::ForeachAdam>(
      [](std::vector<torch::Tensor> p) { return std::make_unique<examples::ForeachAdam>(std::move(p), 0.01); });
}

TEST(StepGraphGpu, ShapeChangeRecaptures) {
  SKIP_WITHOUT_GPU();
  auto make = [](std::vector<torch::Tensor> p) {
    return std::make_unique<examples::ForeachSgd>(std::move(p), 0.05, 0.9, examples::LrOn::Device);
  };
  Trainer<examples::ForeachSgd> graphed(make), eager(make);
  nk::StepGraphOptions opts;
  opts.warmup_steps = 1;
  nk::StepGraphOptions never;
  never.warmup_steps = std::numeric_limits<int>::max();
  nk::StepGraph g(kCuda, [&](const std::vector<torch::Tensor>& in) { return graphed.step(in); }, opts);
  nk::StepGraph e(kCuda, [&](const std::vector<torch::Tensor>& in) { return eager.step(in); }, never);
  // 16 16 | 8 8 8 | 16 | 8: each shape warms up once, is captured once, and
  // is replayed when it comes back.
  const int64_t rows[] = {16, 16, 8, 8, 8, 16, 8};
  const bool replayed[] = {false, true, false, true, true, true, true};
  for (int s = 0; s < 7; ++s) {
    auto in = batch(rows[s], s);
    auto out_g = g(in);
    EXPECT_EQ(g.replayed(), replayed[s]) << "step " << s << " rows " << rows[s];
    EXPECT_TRUE(same_bits(out_g, e(in))) << "step " << s;
  }
  EXPECT_EQ(g.captures(), 2);
  EXPECT_EQ(g.graphs(), 2);
  EXPECT_TRUE(same_bits(graphed.params, eager.params));
}

TEST(StepGraphGpu, ShapeChangeRefusedWhenRecaptureIsOff) {
  SKIP_WITHOUT_GPU();
  auto make = [](std::vector<torch::Tensor> p) { return std::make_unique<examples::ForeachSgd>(std::move(p), 0.05, 0.9); };
  Trainer<examples::ForeachSgd> t(make);
  nk::StepGraphOptions opts;
  opts.warmup_steps = 1;
  opts.recapture_on_shape_change = false;
  nk::StepGraph g(kCuda, [&](const std::vector<torch::Tensor>& in) { return t.step(in); }, opts);
  g(batch(16, 0));
  g(batch(16, 1));
  EXPECT_TRUE(g.replayed());
  try {
    g(batch(12, 2));
    ADD_FAILURE() << "a new input shape was accepted with recapture_on_shape_change off";
  } catch (const c10::Error& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("changed from (Float[16, 32], Long[16]) to (Float[12, 32], Long[12])"), std::string::npos)
        << what;
    EXPECT_NE(what.find("recapture_on_shape_change"), std::string::npos) << what;
  }
  g(batch(16, 3));  // the captured shape still replays
  EXPECT_TRUE(g.replayed());
}

// Written after each planted call, so that the call is not the lambda's tail
// call: a tail call leaves no frame of the lambda on the stack, and the site
// is then (rightly, for the stack there is) its caller's line.
volatile float g_after_call = 0;

// One planted sync per rule; `line` is the line of the call, set on the same
// line. torch checks item() before it syncs (sync debug mode: the handler sees
// the live stack); a copy to pageable memory it refuses in capture with its
// own error, and a device synchronize it does not check (2.11), so CUDA fails
// it: for those two the site comes from the c10 backtrace of the error.
struct Planted {
  const char* rule;
  const char* op;
  bool checked_by_torch;
  std::function<void(const torch::Tensor& loss, int& line)> plant;
};

TEST(StepGraphGpu, SyncDuringCaptureNamedByFileLineAndRule) {
  SKIP_WITHOUT_GPU();
  const Planted cases[] = {
      {"nosync-item", "at::Tensor::item", true,
       [](const torch::Tensor& loss, int& line) { line = __LINE__; g_after_call = loss.item<float>(); }},
      {"nosync-device-to-host", "at::Tensor::cpu", true,
       [](const torch::Tensor& loss, int& line) { line = __LINE__; g_after_call = loss.cpu().numel(); }},
      {"nosync-explicit-sync", "torch::cuda::synchronize", false,
       [](const torch::Tensor&, int& line) { line = __LINE__; torch::cuda::synchronize(); g_after_call = 1; }},
  };
  for (const Planted& c : cases) {
    SCOPED_TRACE(c.rule);
    auto make = [](std::vector<torch::Tensor> p) { return std::make_unique<examples::ForeachSgd>(std::move(p), 0.05, 0.9); };
    Trainer<examples::ForeachSgd> t(make);
    int line = 0;
    nk::StepGraphOptions opts;
    opts.warmup_steps = 1;
    nk::StepGraph g(kCuda, [&](const std::vector<torch::Tensor>& in) {
      auto out = t.step(in);
      c.plant(out[0], line);
      return out;
    }, opts);
    g(batch(16, 0));  // eager: the sync is allowed (and made) outside capture
    const auto mode_before = c10::cuda::warning_state().get_sync_debug_mode();
    try {
      g(batch(16, 1));
      ADD_FAILURE() << "the planted sync was captured";
    } catch (const nk::CaptureSyncError& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.rule(), c.rule) << what;
      EXPECT_EQ(e.op(), c.op) << what;
      EXPECT_EQ(e.line(), line) << what;
      EXPECT_NE(e.file().find("step_graph_gpu_test.cpp"), std::string::npos) << what;
      EXPECT_NE(what.find("step_graph_gpu_test.cpp:" + std::to_string(line)), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("[") + c.rule + "]"), std::string::npos) << what;
      EXPECT_EQ(what.rfind("nosync: host sync during CUDA graph capture at ", 0), 0u) << what;
      // A sync torch checks is named before it reaches CUDA: no CUDA error in it.
      if (c.checked_by_torch) EXPECT_EQ(what.find("operation not permitted"), std::string::npos) << what;
      std::cout << "[ reported ] " << what.substr(0, what.find('\n')) << "\n";
    }
    EXPECT_EQ(c10::cuda::warning_state().get_sync_debug_mode(), mode_before) << "sync debug mode not restored";
    EXPECT_FALSE(g.replayed());
    EXPECT_EQ(g.captures(), 0);
  }
  // After three abandoned captures, a clean step still captures and replays.
  auto make = [](std::vector<torch::Tensor> p) { return std::make_unique<examples::ForeachSgd>(std::move(p), 0.05, 0.9); };
  Trainer<examples::ForeachSgd> t(make);
  nk::StepGraphOptions opts;
  opts.warmup_steps = 1;
  nk::StepGraph g(kCuda, [&](const std::vector<torch::Tensor>& in) { return t.step(in); }, opts);
  g(batch(16, 0));
  auto out = g(batch(16, 1));
  EXPECT_TRUE(g.replayed());
  EXPECT_TRUE(std::isfinite(out[0].item<float>()));
  // Outside capture the sync check is off again: item() works and does not throw.
  EXPECT_NO_THROW((void)out[1].item<float>());
}

TEST(StepGraphGpu, PageableAndDeviceInputs) {
  SKIP_WITHOUT_GPU();
  nk::StepGraphOptions opts;
  opts.warmup_steps = 1;
  nk::StepGraph g(kCuda, [](const std::vector<torch::Tensor>& in) {
    return std::vector<torch::Tensor>{(in[0] * 2 + in[1]).sum()};
  }, opts);
  for (int s = 0; s < 4; ++s) {
    torch::Tensor a = torch::randn({100});                 // pageable: through the PinnedStager
    torch::Tensor b = torch::randn({100}).to(kCuda);       // already on the device
    const float want = (a * 2 + b.cpu()).sum().item<float>();
    auto out = g({a, b});
    EXPECT_NEAR(out[0].item<float>(), want, 1e-4) << "step " << s;
    EXPECT_EQ(g.replayed(), s >= 1);
  }
}
