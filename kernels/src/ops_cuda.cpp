// CUDA back end: look up (or build) the list's plan, allocate the per-call
// partials and the output from the caching allocator, launch. No host sync,
// no host-to-device copy on the steady path, nothing that a CUDA graph cannot
// capture.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "engine/launch.h"
#include "ops_impl.h"
#include "plan_cache.h"

namespace nosync::kernels::detail::cuda_path {
namespace {

using engine::DType;
using engine::OutType;

DType dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return DType::kF32;
    case at::kDouble: return DType::kF64;
    case at::kHalf: return DType::kF16;
    case at::kBFloat16: return DType::kBF16;
    default: TORCH_CHECK(false, "nosync::kernels: unsupported dtype ", t);
  }
}

OutType out_type_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return OutType::kF32;
    case at::kDouble: return OutType::kF64;
    case at::kHalf: return OutType::kF16;
    case at::kBFloat16: return OutType::kBF16;
    case at::kInt: return OutType::kI32;
    case at::kBool: return OutType::kBool;
    default: TORCH_CHECK(false, "nosync::kernels: unsupported output dtype ", t);
  }
}

// Everything one launch sequence needs.
struct Launch {
  c10::cuda::CUDAGuard guard;
  cudaStream_t stream;
  DevicePlan plan;
  at::Tensor workspace;  // partials (+ 8 bytes for the clip coefficient)
  explicit Launch(const Gathered& g, size_t extra_bytes = 0)
      : guard(g.device), stream(at::cuda::getCurrentCUDAStream(g.device.index()).stream()),
        plan(plan_for(g, stream)) {
    const size_t part = engine::accumulator_bytes(dtype_of(g.dtype)) * static_cast<size_t>(plan.view.num_segments);
    const size_t bytes = ((part + 7) & ~size_t{7}) + extra_bytes;
    workspace = at::empty({static_cast<int64_t>(bytes > 0 ? bytes : 8)},
                          at::TensorOptions().dtype(at::kByte).device(g.device));
  }
  void* partials() { return workspace.data_ptr(); }
  double* extra() {
    const size_t part = static_cast<size_t>(workspace.numel()) - 8;
    return reinterpret_cast<double*>(static_cast<char*>(workspace.data_ptr()) + part);
  }
};

void check(cudaError_t e) { C10_CUDA_CHECK(e); }

}  // namespace

at::Tensor total(const Gathered& g, Kind kind) {
  Launch l(g);
  at::Tensor out = at::empty({}, at::TensorOptions().dtype(g.dtype).device(g.device));
  engine::Finish f;
  f.out = out.data_ptr();
  f.out_type = out_type_of(g.dtype);
  engine::ReduceOp op = engine::ReduceOp::kSum;
  switch (kind) {
    case Kind::kSum: f.epilogue = engine::Epilogue::kValue; break;
    case Kind::kMean:
      f.epilogue = engine::Epilogue::kScale;
      // 1/0 = inf, and 0 * inf = NaN: the mean of nothing, as in torch.
      f.scale = 1.0 / static_cast<double>(l.plan.shape.total_numel);
      break;
    case Kind::kL2:
      op = engine::ReduceOp::kSumSquares;
      f.epilogue = engine::Epilogue::kSqrt;
      break;
  }
  check(engine::reduce_total(dtype_of(g.dtype), op, l.plan.view, l.partials(), f, l.stream));
  return out;
}

at::Tensor per_tensor(const Gathered& g, Kind kind) {
  TORCH_INTERNAL_ASSERT(kind != Kind::kMean);
  Launch l(g);
  at::Tensor out = at::empty({g.count}, at::TensorOptions().dtype(g.dtype).device(g.device));
  const bool l2 = kind == Kind::kL2;
  check(engine::reduce_per_tensor(dtype_of(g.dtype), l2 ? engine::ReduceOp::kSumSquares : engine::ReduceOp::kSum,
                                  l.plan.view, l.partials(), out.data_ptr(), out_type_of(g.dtype), l2, l.stream));
  return out;
}

void nonfinite_into(const Gathered& g, at::Tensor& flag) {
  Launch l(g);
  engine::Finish f;
  f.epilogue = engine::Epilogue::kSetFlag;
  f.out = flag.data_ptr();
  f.out_type = out_type_of(flag.scalar_type());
  check(engine::reduce_total(dtype_of(g.dtype), engine::ReduceOp::kNonfinite, l.plan.view, l.partials(), f,
                             l.stream));
}

at::Tensor clip(const Gathered& g, double max_norm, double eps) {
  Launch l(g, /*extra_bytes=*/8);
  at::Tensor norm = at::empty({}, at::TensorOptions().dtype(g.dtype).device(g.device));
  engine::Finish f;
  f.epilogue = engine::Epilogue::kClipCoef;
  f.out = norm.data_ptr();
  f.out_type = out_type_of(g.dtype);
  f.max_norm = max_norm;
  f.eps = eps;
  f.coef = l.extra();
  const DType dt = dtype_of(g.dtype);
  check(engine::reduce_total(dt, engine::ReduceOp::kSumSquares, l.plan.view, l.partials(), f, l.stream));
  check(engine::scale_in_place(dt, l.plan.view, f.coef, l.stream));
  return norm;
}

}  // namespace nosync::kernels::detail::cuda_path
