// The two back ends behind the public ops: the CUDA engine and the CPU loop.
// Both take an already validated list (tensor_list.h) that is non-empty.
#pragma once

#include <ATen/ATen.h>

#include "tensor_list.h"

namespace nosync::kernels::detail {

enum class Kind { kSum, kMean, kL2 };

namespace cuda_path {
at::Tensor total(const Gathered& g, Kind kind);
at::Tensor per_tensor(const Gathered& g, Kind kind);  // kSum or kL2
void nonfinite_into(const Gathered& g, at::Tensor& flag);
at::Tensor clip(const Gathered& g, double max_norm, double eps);
}  // namespace cuda_path

namespace cpu_path {
at::Tensor total(const Gathered& g, Kind kind);
at::Tensor per_tensor(const Gathered& g, Kind kind);
void nonfinite_into(const Gathered& g, at::Tensor& flag);
at::Tensor clip(const Gathered& g, double max_norm, double eps);
}  // namespace cpu_path

}  // namespace nosync::kernels::detail
