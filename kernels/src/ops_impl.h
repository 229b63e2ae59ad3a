// The two back ends behind the public ops: the CUDA engine and the CPU loop.
// Both take an already validated list (tensor_list.h) that is non-empty.
#pragma once

#include <ATen/ATen.h>

#include <cuda_runtime_api.h>

#include "plan_cache.h"
#include "tensor_list.h"

namespace nosync::kernels::detail {

enum class Kind { kSum, kMean, kL2 };

// A CUDA list ready to launch on: its device plan and the stream to use.
struct Resolved {
  c10::Device device{c10::kCUDA};
  at::ScalarType dtype = at::kFloat;
  int64_t count = 0;
  cudaStream_t stream = nullptr;
  DevicePlan plan;
};

// For a gathered CUDA list: the cached plan (plan_cache.h) on the current stream.
Resolved resolve(const Gathered& g);

namespace cuda_path {
at::Tensor total(const Resolved& r, Kind kind);
at::Tensor per_tensor(const Resolved& r, Kind kind);  // kSum or kL2
void nonfinite_into(const Resolved& r, at::Tensor& flag);
at::Tensor clip(const Resolved& r, double max_norm, double eps);
}  // namespace cuda_path

namespace cpu_path {
at::Tensor total(const Gathered& g, Kind kind);
at::Tensor per_tensor(const Gathered& g, Kind kind);
void nonfinite_into(const Gathered& g, at::Tensor& flag);
at::Tensor clip(const Gathered& g, double max_norm, double eps);
}  // namespace cpu_path

}  // namespace nosync::kernels::detail
