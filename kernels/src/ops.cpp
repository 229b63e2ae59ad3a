// The public reductions: validate the list once, handle the empty list, and
// route to the CUDA engine or the CPU loop.
#include <nosync/kernels.h>

#include <limits>

#include "ops_impl.h"

namespace nosync::kernels {
namespace {

using detail::Gathered;
using detail::Kind;

// Results for an empty list: there is no device to put them on, so they are
// CPU tensors; a 0-d CPU tensor combines with device tensors in arithmetic.
at::Tensor empty_total(Kind kind) {
  const double v = kind == Kind::kMean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  return at::scalar_tensor(v, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor total(const char* op, at::TensorList tensors, Kind kind) {
  const Gathered g = detail::gather(op, tensors);
  if (g.empty()) return empty_total(kind);
  return g.is_cuda() ? detail::cuda_path::total(detail::resolve(g), kind) : detail::cpu_path::total(g, kind);
}

at::Tensor per_tensor(const char* op, at::TensorList tensors, Kind kind) {
  const Gathered g = detail::gather(op, tensors);
  if (g.empty()) return at::empty({0}, at::TensorOptions().dtype(at::kFloat));
  return g.is_cuda() ? detail::cuda_path::per_tensor(detail::resolve(g), kind) : detail::cpu_path::per_tensor(g, kind);
}

}  // namespace

at::Tensor sum(at::TensorList tensors) { return total("nosync::kernels::sum", tensors, Kind::kSum); }
at::Tensor mean(at::TensorList tensors) { return total("nosync::kernels::mean", tensors, Kind::kMean); }
at::Tensor l2_norm(at::TensorList tensors) { return total("nosync::kernels::l2_norm", tensors, Kind::kL2); }

at::Tensor sum_per_tensor(at::TensorList tensors) {
  return per_tensor("nosync::kernels::sum_per_tensor", tensors, Kind::kSum);
}
at::Tensor l2_norm_per_tensor(at::TensorList tensors) {
  return per_tensor("nosync::kernels::l2_norm_per_tensor", tensors, Kind::kL2);
}

at::Tensor& nonfinite_flag(at::TensorList tensors, at::Tensor& flag) {
  constexpr const char* op = "nosync::kernels::nonfinite_flag";
  const Gathered g = detail::gather(op, tensors);
  TORCH_CHECK(flag.defined() && flag.numel() == 1, op, ": flag must be a one-element tensor");
  TORCH_CHECK(flag.scalar_type() == at::kBool || flag.scalar_type() == at::kInt || flag.scalar_type() == at::kFloat,
              op, ": flag must be Bool, Int or Float, got ", flag.scalar_type());
  TORCH_CHECK(flag.is_contiguous(), op, ": flag must be contiguous");
  if (g.empty()) return flag;
  TORCH_CHECK(flag.device() == g.device, op, ": flag is on ", flag.device(), " but the tensors are on ", g.device);
  if (g.is_cuda()) detail::cuda_path::nonfinite_into(detail::resolve(g), flag);
  else detail::cpu_path::nonfinite_into(g, flag);
  return flag;
}

at::Tensor nonfinite_flag(at::TensorList tensors) {
  const c10::Device device =
      tensors.empty() || !tensors[0].defined() ? c10::Device(c10::kCPU) : tensors[0].device();
  at::Tensor flag = at::zeros({}, at::TensorOptions().dtype(at::kBool).device(device));
  nonfinite_flag(tensors, flag);
  return flag;
}

at::Tensor clip_grad_norm_(at::TensorList params_or_grads, double max_norm, double eps) {
  constexpr const char* op = "nosync::kernels::clip_grad_norm_";
  const Gathered g = detail::gather(op, params_or_grads, detail::Select::kGradsOrTensors);
  if (g.empty()) return at::scalar_tensor(0.0, at::TensorOptions().dtype(at::kFloat));
  return g.is_cuda() ? detail::cuda_path::clip(detail::resolve(g), max_norm, eps)
                     : detail::cpu_path::clip(g, max_norm, eps);
}

}  // namespace nosync::kernels
