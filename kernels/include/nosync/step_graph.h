// nosync::kernels::StepGraph — a sync-free training step captured once in a
// CUDA graph and replayed, the cure for launch overhead.
//
// A step of a few hundred small kernels costs more host time to enqueue than
// GPU time to run (≈ 8 µs of host per op). A CUDA graph replays all of them
// with one launch, but only a step that never waits for the GPU can be
// captured: the rest of nosync is how a step gets there.
//
//   nosync::kernels::StepGraph step(device, [&](const std::vector<at::Tensor>& in) {
//     optimizer.zero_grad();                              // set_to_none: no launch
//     auto loss = loss_fn(model->forward(in[0]), in[1]);
//     loss.backward();
//     nosync::kernels::clip_grad_norm_(params, 1.0);
//     optimizer.step();                                   // lr, step count: device tensors
//     return std::vector<at::Tensor>{loss.detach()};
//   });
//   for (auto& batch : loader) {
//     auto out = step({batch.x, batch.y});   // out[0]: this step's loss, on the device
//   }
//
// What a call does on CUDA:
//   * copies the inputs into static device buffers (one set per input shape):
//     pinned CPU tensors and device tensors directly, pageable CPU tensors
//     through a PinnedStager; all non_blocking, on the current stream;
//   * the first `warmup_steps` calls for a shape run the step eagerly on a
//     side stream (lazy state such as optimizer buffers, cuBLAS handles and
//     the nosync plans is created there, outside the graph);
//   * the next call captures the step on that side stream into a private
//     memory pool, then replays it; every later call only replays it.
// Every call performs exactly one training step. The returned tensors are the
// graph's static outputs: valid until the next call (clone what you keep).
//
// Rules for the step function, as for any CUDA graph: no host sync (it is
// reported below, by site and rule), no host-side decisions on values that
// change between steps, no CPU tensors created inside and copied in (build
// constants once, outside), values that change per step (learning rate, step
// count) in device tensors updated in place. Tensors the step keeps from one
// call to the next (parameters, optimizer state) must exist before capture:
// the warm-up calls create them.
//
// A host sync inside the step during capture throws CaptureSyncError naming
// the user's file:line and the nosync rule (nosync-item, ...) before CUDA
// fails the capture with its own "operation not permitted when stream is
// capturing". Works with or without libnosync_sanitizer.so loaded.
//
// CPU inputs on a CPU StepGraph: the step runs eagerly on every call, so code
// written around StepGraph stays drop-in on CPU builds.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nosync::kernels {

// A host sync attempted while a step was being captured.
class CaptureSyncError : public std::runtime_error {
 public:
  CaptureSyncError(const std::string& message, std::string file, int line, std::string rule, std::string op)
      : std::runtime_error(message), file_(std::move(file)), line_(line), rule_(std::move(rule)),
        op_(std::move(op)) {}
  // The user's source line that synced; empty / 0 when it could not be found
  // (no debug info, or the sync ran on another thread, e.g. in autograd). A
  // sync that is the tail call of a function leaves no frame of that function
  // on the stack: the line is then its caller's.
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  // The nosync rule id ("nosync-item", ...) and the LibTorch op that synced.
  const std::string& rule() const { return rule_; }
  const std::string& op() const { return op_; }

 private:
  std::string file_;
  int line_;
  std::string rule_, op_;
};

struct StepGraphOptions {
  // Eager calls per input shape before the capture.
  int warmup_steps = 3;
  // On inputs of a new shape (sizes or dtypes): capture another graph for it
  // (after its own warm-up calls), or throw.
  bool recapture_on_shape_change = true;
  // Graphs kept at once, one per input shape; the least recently used one
  // beyond this is dropped.
  int max_graphs = 4;
};

class StepGraph {
 public:
  // The step: reads its inputs from the tensors it is given (device tensors
  // with the caller's shapes) and returns the tensors the caller wants back.
  using Step = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>& inputs)>;

  StepGraph(c10::Device device, Step step, StepGraphOptions options = {});
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // One training step on `inputs` (CPU tensors, pinned or not, or tensors on
  // this device). See the header comment for what happens on CUDA.
  std::vector<at::Tensor> operator()(at::TensorList inputs);

  // Whether the last call replayed a graph (false: it ran eagerly).
  bool replayed() const;
  // Captures made so far (one per input shape seen past its warm-up).
  int captures() const;
  // Graphs currently held.
  int graphs() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nosync::kernels
