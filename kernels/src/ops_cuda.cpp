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

// The per-call scratch of one launch sequence: partials (+ 8 bytes for the
// clip coefficient), from the caching allocator on the current stream.
struct Workspace {
  at::Tensor bytes;
  Workspace(const Resolved& r, size_t extra_bytes = 0) {
    const size_t part = engine::accumulator_bytes(dtype_of(r.dtype)) * static_cast<size_t>(r.plan.view.num_segments);
    const size_t n = ((part + 7) & ~size_t{7}) + extra_bytes;
    bytes = at::empty({static_cast<int64_t>(n > 0 ? n : 8)}, at::TensorOptions().dtype(at::kByte).device(r.device));
  }
  void* partials() { return bytes.data_ptr(); }
  double* extra() {  // the last 8 bytes
    return reinterpret_cast<double*>(static_cast<char*>(bytes.data_ptr()) + bytes.numel() - 8);
  }
};

void check(cudaError_t e) { C10_CUDA_CHECK(e); }

}  // namespace

at::Tensor total(const Resolved& r, Kind kind) {
  c10::cuda::CUDAGuard guard(r.device);
  Workspace w(r);
  at::Tensor out = at::empty({}, at::TensorOptions().dtype(r.dtype).device(r.device));
  engine::Finish f;
  f.out = out.data_ptr();
  f.out_type = out_type_of(r.dtype);
  engine::ReduceOp op = engine::ReduceOp::kSum;
  switch (kind) {
    case Kind::kSum: f.epilogue = engine::Epilogue::kValue; break;
    case Kind::kMean:
      f.epilogue = engine::Epilogue::kScale;
      // 1/0 = inf, and 0 * inf = NaN: the mean of nothing, as in torch.
      f.scale = 1.0 / static_cast<double>(r.plan.shape.total_numel);
      break;
    case Kind::kL2:
      op = engine::ReduceOp::kSumSquares;
      f.epilogue = engine::Epilogue::kSqrt;
      break;
  }
  check(engine::reduce_total(dtype_of(r.dtype), op, r.plan.view, w.partials(), f, r.stream));
  return out;
}

at::Tensor per_tensor(const Resolved& r, Kind kind) {
  TORCH_INTERNAL_ASSERT(kind != Kind::kMean);
  c10::cuda::CUDAGuard guard(r.device);
  Workspace w(r);
  at::Tensor out = at::empty({r.count}, at::TensorOptions().dtype(r.dtype).device(r.device));
  const bool l2 = kind == Kind::kL2;
  check(engine::reduce_per_tensor(dtype_of(r.dtype), l2 ? engine::ReduceOp::kSumSquares : engine::ReduceOp::kSum,
                                  r.plan.view, w.partials(), out.data_ptr(), out_type_of(r.dtype), l2, r.stream));
  return out;
}

void nonfinite_into(const Resolved& r, at::Tensor& flag) {
  c10::cuda::CUDAGuard guard(r.device);
  Workspace w(r);
  engine::Finish f;
  f.epilogue = engine::Epilogue::kSetFlag;
  f.out = flag.data_ptr();
  f.out_type = out_type_of(flag.scalar_type());
  check(engine::reduce_total(dtype_of(r.dtype), engine::ReduceOp::kNonfinite, r.plan.view, w.partials(), f,
                             r.stream));
}

at::Tensor clip(const Resolved& r, double max_norm, double eps) {
  c10::cuda::CUDAGuard guard(r.device);
  Workspace w(r, /*extra_bytes=*/8);
  at::Tensor norm = at::empty({}, at::TensorOptions().dtype(r.dtype).device(r.device));
  engine::Finish f;
  f.epilogue = engine::Epilogue::kClipCoef;
  f.out = norm.data_ptr();
  f.out_type = out_type_of(r.dtype);
  f.max_norm = max_norm;
  f.eps = eps;
  f.coef = w.extra();
  const DType dt = dtype_of(r.dtype);
  check(engine::reduce_total(dt, engine::ReduceOp::kSumSquares, r.plan.view, w.partials(), f, r.stream));
  check(engine::scale_in_place(dt, r.plan.view, f.coef, r.stream));
  return norm;
}

}  // namespace nosync::kernels::detail::cuda_path

namespace nosync::kernels::detail {

Resolved resolve(const Gathered& g) {
  Resolved r;
  r.device = g.device;
  r.dtype = g.dtype;
  r.count = g.count;
  r.stream = at::cuda::getCurrentCUDAStream(g.device.index()).stream();
  c10::cuda::CUDAGuard guard(g.device);
  r.plan = plan_for(g, r.stream);
  return r;
}

}  // namespace nosync::kernels::detail
