// Devices as users write them: `torch::kCUDA` has no index, but tensors on it
// report `cuda:0`. Objects that hold a device resolve it once, here.
#pragma once

#include <c10/core/Device.h>
#include <c10/cuda/CUDAFunctions.h>

namespace nosync::kernels::detail {

inline c10::Device resolve_device(c10::Device d) {
  if (d.is_cuda() && !d.has_index()) return c10::Device(c10::kCUDA, c10::cuda::current_device());
  return d;
}

}  // namespace nosync::kernels::detail
