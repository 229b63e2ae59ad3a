// nosync::kernels — multi-tensor and fused ops that keep work on the device.
//
// Every op here takes a list of tensors on ONE device and returns device
// tensors: nothing copies to the host and nothing waits for the GPU. On CUDA a
// list of any length costs two or three kernel launches; on the CPU the same
// calls take a plain loop with the same results, so a fix-it that calls them
// also works in CPU builds.
//
// Inputs: fp32, fp64, fp16 or bf16 (one dtype per list), contiguous or at
// least dense and non-overlapping (channels-last is fine), any size including
// empty tensors and tensors over 2^31 elements. fp16/bf16 accumulate in fp32,
// fp64 in fp64. Results have the input dtype, like torch.sum and
// torch._foreach_norm. Reductions are bitwise reproducible from run to run.
//
// CUDA graphs: the ops capture, provided the same list (same tensors) was
// used once outside capture first (the usual warm-up): the list's work plan is
// uploaded to the device then and reused without any host-to-device copy.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nosync::kernels {

// Sum of all elements of all tensors: a 0-d tensor.
at::Tensor sum(at::TensorList tensors);
// One sum per tensor: a 1-d tensor of tensors.size() values.
at::Tensor sum_per_tensor(at::TensorList tensors);
// Mean over all elements of all tensors (NaN for zero elements, like torch).
at::Tensor mean(at::TensorList tensors);
// sqrt of the sum of squares of all elements of all tensors: a 0-d tensor.
at::Tensor l2_norm(at::TensorList tensors);
// One L2 norm per tensor: a 1-d tensor.
at::Tensor l2_norm_per_tensor(at::TensorList tensors);

// A 0-d bool device tensor: true if any element of any tensor is NaN or Inf.
at::Tensor nonfinite_flag(at::TensorList tensors);
// Sets `flag` (a one-element bool, int32 or float tensor on the same device)
// to 1 if any element is NaN or Inf, and leaves it alone otherwise, so one flag
// can collect several calls. Returns `flag`.
at::Tensor& nonfinite_flag(at::TensorList tensors, at::Tensor& flag);

// Sync-free torch::nn::utils::clip_grad_norm_: total L2 norm of the gradients,
// then every gradient scaled in place by min(max_norm / (norm + eps), 1).
// Takes parameters (their .grad() is used; parameters without one are
// skipped) or the gradient tensors themselves. Returns the norm as a 0-d
// device tensor instead of a double, so nothing waits for the GPU.
at::Tensor clip_grad_norm_(at::TensorList params_or_grads, double max_norm, double eps = 1e-6);

// The gradients of `params` (parameters without one skipped, like
// clip_grad_norm_), as a list for the ops above: how nosync-lint's fix-its
// spell "each parameter's .grad()" when they replace a per-parameter loop.
// Handles only, no copy: in-place ops on the result change the gradients.
inline std::vector<at::Tensor> grads_of(at::TensorList params) {
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const at::Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

namespace detail {
struct PreparedState;
}

// A tensor list validated and planned once, for hot loops.
//
// The list ops above validate every tensor on every call (device, dtype,
// layout, data pointer) and look their plan up by content: cheap per tensor,
// but at thousands of tensors that pass is most of the host time of a call.
// A PreparedList does it once; its ops then cost a few microseconds of host
// time regardless of the list's length.
//
//   auto grads = nosync::kernels::PreparedList::grads_of(model->parameters());
//   for (...) {
//     optimizer.zero_grad(/*set_to_none=*/false);   // in place: same tensors
//     loss.backward();
//     auto norm = grads.clip_grad_norm_(1.0);
//   }
//
// Valid while every tensor keeps its memory: parameters, and gradients that
// are zeroed in place. The list holds references, so the tensors cannot be
// freed. A parameter given a new gradient tensor (zero_grad() with its
// default set_to_none, then backward) is noticed and the op throws, unless
// something else still holds the old gradient; a tensor re-pointed to new
// memory in place (set_, a resize_ that reallocates) is not noticed: prepare
// again after that. CUDA-graph capturable with no warm-up needed.
class PreparedList {
 public:
  explicit PreparedList(at::TensorList tensors);
  // clip_grad_norm_'s selection: each parameter's .grad(), parameters without
  // one skipped, plain tensors taken as gradients.
  static PreparedList grads_of(at::TensorList params_or_grads);

  int64_t size() const;
  at::Tensor sum() const;
  at::Tensor sum_per_tensor() const;
  at::Tensor mean() const;
  at::Tensor l2_norm() const;
  at::Tensor l2_norm_per_tensor() const;
  at::Tensor& nonfinite_flag(at::Tensor& flag) const;
  at::Tensor clip_grad_norm_(double max_norm, double eps = 1e-6) const;

 private:
  explicit PreparedList(std::shared_ptr<const detail::PreparedState> s);
  std::shared_ptr<const detail::PreparedState> state_;
};

// Named scalars accumulated on the device, read back late.
//
//   MetricAccumulator metrics(device);
//   metrics.add("loss", loss.detach());          // one small kernel, no sync
//   if (auto m = metrics.poll()) log(m->at("loss"));  // values from a few steps ago, never waits
//   auto m = metrics.read();                      // now: one sync, e.g. at a log interval
//
// Values are means over the add() calls since the last reset(): sum / count.
class MetricAccumulator {
 public:
  using Values = std::map<std::string, double>;

  explicit MetricAccumulator(c10::Device device, int readback_slots = 3);
  ~MetricAccumulator();
  MetricAccumulator(const MetricAccumulator&) = delete;
  MetricAccumulator& operator=(const MetricAccumulator&) = delete;

  // Adds a one-element tensor (any real, integer or bool dtype, on this
  // accumulator's device) to the running sum of `name`. The value is detached:
  // the sums never join an autograd graph.
  void add(const std::string& name, const at::Tensor& value);
  // Non-blocking: starts a readback of the current sums if a slot is free, and
  // returns the newest readback that has already completed (nullopt if none
  // has yet). Never waits for the GPU.
  std::optional<Values> poll();
  // Blocking: the current means, after exactly one wait on one event.
  Values read();
  // read() then reset(): the end-of-epoch call.
  Values flush();
  // Zeroes every sum and count (on the device; no sync).
  void reset();
  // For a value that is printed every N steps (nosync-lint's fix-it for a
  // logged item()): poll(), then reset(), so each readback covers the steps
  // since the previous print. Returns the newest completed mean of `name`
  // (on a GPU the previous interval's, on the CPU the current one), or NaN
  // before the first readback has landed. Never waits.
  double poll_interval(const std::string& name) {
    std::optional<Values> v = poll();
    reset();
    if (!v) return std::numeric_limits<double>::quiet_NaN();
    auto it = v->find(name);
    return it == v->end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Host-to-device staging through a small ring of pinned buffers.
// A drop-in for `t.to(device)`: a tensor already on `device` is returned as
// is, and on a CPU device stage() is t.to(device), so a fix-it that stages a
// copy also runs in CPU builds.
//
//   PinnedStager stager(device);
//   auto x = stager.stage(batch.data);   // pinned copy, then non_blocking H2D
//
// stage() copies the CPU tensor into the next pinned buffer (host memcpy),
// enqueues a non_blocking copy to a new device tensor on the current stream,
// and records an event; a buffer is reused only after its event completes
// (the host waits only if it runs `slots` stagings ahead of the GPU).
class PinnedStager {
 public:
  explicit PinnedStager(c10::Device device, int slots = 4);
  ~PinnedStager();
  PinnedStager(const PinnedStager&) = delete;
  PinnedStager& operator=(const PinnedStager&) = delete;

  at::Tensor stage(const at::Tensor& cpu_tensor);
  // The same into an existing device tensor of the same shape and dtype (a
  // CUDA graph's static input), instead of a new one.
  void stage_into(const at::Tensor& cpu_tensor, at::Tensor& dst);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nosync::kernels

#include <nosync/step_graph.h>  // StepGraph: a sync-free step captured in a CUDA graph
