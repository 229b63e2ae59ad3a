// Validation and gathering of an input list: one pass over the tensors that
// checks device, dtype and layout (naming the offending index in any error)
// and collects each tensor's (pointer, numel) for the engine. No heap
// allocation per tensor: the output vectors are thread-local and reused.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "engine/plan.h"

namespace nosync::kernels::detail {

enum class Select {
  kTensors,          // the list's tensors themselves
  kGradsOrTensors,   // t.grad() when defined; skip tensors that require grad
                     // but have none; otherwise t itself (clip_grad_norm_)
};

struct Gathered {
  const char* op = "";
  int64_t count = 0;                      // tensors selected
  c10::Device device{c10::kCPU};
  at::ScalarType dtype = at::kFloat;
  uint64_t hash = 0;                      // of (ptr, numel) pairs, for the plan cache
  const std::vector<engine::TensorSlot>* slots = nullptr;  // CUDA lists
  const std::vector<const at::Tensor*>* tensors = nullptr; // CPU lists (in order)
  int64_t elem_size() const { return static_cast<int64_t>(c10::elementSize(dtype)); }  // plans count bytes
  bool empty() const { return count == 0; }
  bool is_cuda() const { return device.is_cuda(); }
};

// Throws c10::Error (TORCH_CHECK) naming `op` and the index on any problem.
Gathered gather(const char* op, at::TensorList list, Select select = Select::kTensors);

}  // namespace nosync::kernels::detail
