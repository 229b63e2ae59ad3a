// Constructor arguments of the stateful helpers, as users write them.
//
// Devices: `torch::kCUDA` has no index, but tensors on it report `cuda:0`.
// Objects that hold a device resolve it once, here.
#pragma once

#include <c10/core/Device.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>

#include <cstddef>

namespace nosync::kernels::detail {

inline c10::Device resolve_device(c10::Device d) {
  if (d.is_cuda() && !d.has_index()) return c10::Device(c10::kCUDA, c10::cuda::current_device());
  return d;
}

// Ring sizes: checked before the ring is built, so a negative count is this
// error and not a std::length_error from the vector.
inline size_t checked_slots(int slots, const char* what) {
  TORCH_CHECK(slots >= 1, what, " must be >= 1, got ", slots);
  return static_cast<size_t>(slots);
}

}  // namespace nosync::kernels::detail
