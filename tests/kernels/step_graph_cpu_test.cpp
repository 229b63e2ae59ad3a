// nosync::kernels::StepGraph on the CPU: the step runs eagerly on every call
// (code written around StepGraph is drop-in on CPU builds), its options are
// checked, and a capture-time sync is named by the same rule lookup the
// sanitizer's op table gives.
#include <gtest/gtest.h>
#include <nosync/kernels.h>
#include <torch/torch.h>

#include <string>

#include "capture_sync.h"

namespace nk = nosync::kernels;

TEST(StepGraphCpu, RunsTheStepEagerlyEveryCall) {
  int calls = 0;
  torch::Tensor w = torch::zeros({3});
  nk::StepGraph step(torch::kCPU, [&](const std::vector<torch::Tensor>& in) {
    ++calls;
    w.add_(in[0]);
    (void)w.sum().item<float>();  // a host read: harmless on the CPU, no capture to break
    return std::vector<torch::Tensor>{w.sum()};
  });
  for (int i = 1; i <= 5; ++i) {
    auto out = step({torch::full({3}, 1.0f)});
    EXPECT_EQ(calls, i);
    EXPECT_FALSE(step.replayed());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FLOAT_EQ(out[0].item<float>(), 3.0f * i);
  }
  EXPECT_EQ(step.captures(), 0);
  EXPECT_EQ(step.graphs(), 0);
  // Shapes may change freely: nothing was captured.
  auto out = step({torch::full({3}, 2.0f)});
  EXPECT_FLOAT_EQ(out[0].item<float>(), 21.0f);
}

TEST(StepGraphCpu, RejectsBadOptionsAndInputs) {
  auto noop = [](const std::vector<torch::Tensor>& in) { return in; };
  nk::StepGraphOptions no_warmup;
  no_warmup.warmup_steps = 0;
  EXPECT_THROW(nk::StepGraph(torch::kCPU, noop, no_warmup), c10::Error);
  nk::StepGraphOptions no_graphs;
  no_graphs.max_graphs = 0;
  EXPECT_THROW(nk::StepGraph(torch::kCPU, noop, no_graphs), c10::Error);
  EXPECT_THROW(nk::StepGraph(torch::kCPU, nk::StepGraph::Step{}), c10::Error);
  nk::StepGraph step(torch::kCPU, noop);
  EXPECT_THROW(step({torch::Tensor()}), c10::Error);
}

// The frames of a real .item() inside capture, innermost first (as c10 and
// libbacktrace name them): the op table picks the call the user wrote.
TEST(StepGraphCpu, RuleFromTorchFrames) {
  using nosync::kernels::detail::rule_from_frames;
  auto item = rule_from_frames({"c10::warn(c10::Warning const&)", "c10::cuda::warn_or_error_on_sync()",
                                "c10::cuda::memcpy_and_sync(void*, void const*, long, cudaMemcpyKind, CUstream_st*)",
                                "at::native::_local_scalar_dense_cuda(at::Tensor const&)",
                                "at::_ops::_local_scalar_dense::call(at::Tensor const&)",
                                "at::native::item(at::Tensor const&)", "at::_ops::item::call(at::Tensor const&)",
                                "float at::Tensor::item<float>() const"});
  EXPECT_EQ(item.rule, "nosync-item");
  EXPECT_EQ(item.op, "at::Tensor::item");
  auto cpu = rule_from_frames({"c10::cuda::memcpy_and_sync(void*, void const*, long, cudaMemcpyKind, CUstream_st*)",
                               "at::native::copy_(at::Tensor&, at::Tensor const&, bool)",
                               "at::native::_to_copy(at::Tensor const&, ...)", "at::Tensor::to(...) const",
                               "at::Tensor::cpu() const"});
  EXPECT_EQ(cpu.rule, "nosync-device-to-host");
  EXPECT_EQ(cpu.op, "at::Tensor::cpu");
  auto flag = rule_from_frames({"at::native::_local_scalar_dense_cuda(at::Tensor const&)",
                                "bool at::Tensor::item<bool>() const"});
  EXPECT_EQ(flag.rule, "nosync-bool-condition");
  auto none = rule_from_frames({"main"});
  EXPECT_EQ(none.rule, "");
  // CUDA's own error text, with c10's backtrace: the rule, no site.
  auto e = nosync::kernels::detail::capture_error_from(
      "CUDA error: operation not permitted when stream is capturing\nException raised from ...\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9d (0x7f in libc10.so)\n"
      "frame #4: at::native::nonzero_cuda(at::Tensor const&) + 0x1d (0x7f in libtorch_cuda.so)\n");
  EXPECT_EQ(e.rule(), "nosync-hidden-sync");
  EXPECT_EQ(e.op(), "nonzero");
  EXPECT_EQ(e.line(), 0);
  EXPECT_NE(std::string(e.what()).find("operation not permitted when stream is capturing"), std::string::npos);
}
