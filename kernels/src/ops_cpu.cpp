// CPU back end: the same ops as a plain loop, so fix-its that call
// nosync::kernels work unchanged in CPU builds. Accumulates in double (more
// accurate than the GPU's fp32 tree, well inside every dtype's tolerance), in
// list order, so it is deterministic too.
#include <ATen/Dispatch.h>

#include <cmath>

#include "ops_impl.h"

namespace nosync::kernels::detail::cpu_path {
namespace {

enum class Fn { kSum, kSumSquares, kNonfinite };

// Reduction of one tensor in double. Dense tensors are read in place; others
// (strided views, which the CPU path accepts) through a contiguous copy.
double reduce_one(const at::Tensor& t, Fn fn) {
  const at::Tensor c = (t.is_contiguous() || t.is_non_overlapping_and_dense()) ? t : t.contiguous();
  const int64_t n = c.numel();
  if (n == 0) return 0.0;
  double acc = 0.0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, c.scalar_type(), "nosync_cpu_reduce", [&] {
    const auto* p = static_cast<const scalar_t*>(c.const_data_ptr());
    switch (fn) {
      case Fn::kSum:
        for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]);
        break;
      case Fn::kSumSquares:
        for (int64_t i = 0; i < n; ++i) {
          const double x = static_cast<double>(p[i]);
          acc += x * x;
        }
        break;
      case Fn::kNonfinite:  // 1 if any element is NaN or Inf
        for (int64_t i = 0; i < n && acc == 0.0; ++i)
          if (!std::isfinite(static_cast<double>(p[i]))) acc = 1.0;
        break;
    }
  });
  return acc;
}

}  // namespace

at::Tensor total(const Gathered& g, Kind kind) {
  const Fn fn = kind == Kind::kL2 ? Fn::kSumSquares : Fn::kSum;
  double acc = 0.0;
  int64_t numel = 0;
  for (const at::Tensor* t : *g.tensors) {
    acc += reduce_one(*t, fn);
    numel += t->numel();
  }
  double v = acc;
  if (kind == Kind::kMean) v = acc / static_cast<double>(numel);  // 0/0 = NaN, as torch.mean
  if (kind == Kind::kL2) v = std::sqrt(acc);
  return at::scalar_tensor(v, at::TensorOptions().dtype(at::kDouble)).to(g.dtype);
}

at::Tensor per_tensor(const Gathered& g, Kind kind) {
  const Fn fn = kind == Kind::kL2 ? Fn::kSumSquares : Fn::kSum;
  at::Tensor out = at::empty({g.count}, at::TensorOptions().dtype(at::kDouble));
  auto* o = out.data_ptr<double>();
  for (int64_t i = 0; i < g.count; ++i) {
    const double v = reduce_one(*(*g.tensors)[static_cast<size_t>(i)], fn);
    o[i] = kind == Kind::kL2 ? std::sqrt(v) : v;
  }
  return out.to(g.dtype);
}

void nonfinite_into(const Gathered& g, at::Tensor& flag) {
  for (const at::Tensor* t : *g.tensors) {
    if (reduce_one(*t, Fn::kNonfinite) != 0.0) {
      flag.fill_(1);
      return;
    }
  }
}

at::Tensor clip(const Gathered& g, double max_norm, double eps) {
  double acc = 0.0;
  for (const at::Tensor* t : *g.tensors) acc += reduce_one(*t, Fn::kSumSquares);
  // The norm rounded to the gradients' dtype, then the coefficient in that
  // dtype's compute type, clamped at 1 with NaN kept: torch's arithmetic.
  at::Tensor norm = at::scalar_tensor(std::sqrt(acc), at::TensorOptions().dtype(at::kDouble)).to(g.dtype);
  double coef;
  if (g.dtype == at::kDouble) {
    coef = max_norm / (std::sqrt(acc) + eps);
  } else {
    const float n32 = static_cast<float>(std::sqrt(acc));
    coef = static_cast<double>(static_cast<float>(max_norm) / (n32 + static_cast<float>(eps)));
  }
  if (std::isnan(coef) || coef < 1.0) {
    for (const at::Tensor* t : *g.tensors) const_cast<at::Tensor*>(t)->mul_(coef);
  }
  return norm;
}

}  // namespace nosync::kernels::detail::cpu_path
