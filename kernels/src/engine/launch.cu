// Dtype and functor dispatch for the engine: the one place where the runtime
// enums of launch.h become template instantiations. One template per kernel,
// no per-dtype copies.
#include "engine/launch.h"
#include "engine/multi_tensor.cuh"

#include <cstring>

namespace nosync::kernels::engine {
namespace {

template <class F>
cudaError_t with_type(DType d, F&& f) {
  switch (d) {
    case DType::kF32: return f(float{});
    case DType::kF64: return f(double{});
    case DType::kF16: return f(__half{});
    case DType::kBF16: return f(__nv_bfloat16{});
  }
  return cudaErrorInvalidValue;
}

template <class F>
cudaError_t with_fn(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::kSum: return f(SumFn{});
    case ReduceOp::kSumSquares: return f(SumSquaresFn{});
    case ReduceOp::kNonfinite: return f(NonfiniteFn{});
  }
  return cudaErrorInvalidValue;
}

// A kernel's parameters are limited to 4 KB: the chunk, the pointer and the
// count fit below that.
constexpr int kParamChunk = 3968;
struct ParamChunk {
  unsigned char bytes[kParamChunk];
};

__global__ void write_chunk_kernel(unsigned char* dst, ParamChunk chunk, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = chunk.bytes[i];
}

// Enough per-tensor warps for the whole list.
unsigned per_tensor_blocks(int32_t num_tensors) {
  return static_cast<unsigned>((num_tensors + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

cudaError_t write_from_params(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  auto* out = static_cast<unsigned char*>(dst);
  const auto* in = static_cast<const unsigned char*>(src);
  for (size_t at = 0; at < bytes; at += kParamChunk) {
    ParamChunk chunk;
    const int n = static_cast<int>(bytes - at < kParamChunk ? bytes - at : kParamChunk);
    memcpy(chunk.bytes, in + at, static_cast<size_t>(n));
    write_chunk_kernel<<<1, 256, 0, stream>>>(out + at, chunk, n);
    const cudaError_t st = cudaGetLastError();
    if (st != cudaSuccess) return st;
  }
  return cudaSuccess;
}

size_t accumulator_bytes(DType dtype) { return dtype == DType::kF64 ? sizeof(double) : sizeof(float); }

cudaError_t reduce_total(DType dtype, ReduceOp op, const PlanView& plan, void* partials, const Finish& finish,
                         cudaStream_t stream) {
  return with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    return with_fn(op, [&](auto fn) {
      using Fn = decltype(fn);
      auto* part = static_cast<A*>(partials);
      if (plan.num_blocks > 0)
        reduce_segments_kernel<Fn, T><<<plan.num_blocks, kBlockThreads, 0, stream>>>(plan, part);
      finish_total_kernel<Fn, A><<<1, kBlockThreads, 0, stream>>>(part, plan.num_segments, finish);
      return cudaGetLastError();
    });
  });
}

cudaError_t reduce_per_tensor(DType dtype, ReduceOp op, const PlanView& plan, void* partials, void* out,
                              OutType out_type, bool take_sqrt, cudaStream_t stream) {
  if (plan.num_tensors == 0) return cudaSuccess;
  return with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    return with_fn(op, [&](auto fn) {
      using Fn = decltype(fn);
      auto* part = static_cast<A*>(partials);
      reduce_segments_kernel<Fn, T><<<plan.num_blocks, kBlockThreads, 0, stream>>>(plan, part);
      finish_per_tensor_kernel<Fn, A>
          <<<per_tensor_blocks(plan.num_tensors), kBlockThreads, 0, stream>>>(plan, part, out, out_type, take_sqrt);
      return cudaGetLastError();
    });
  });
}

cudaError_t scale_in_place(DType dtype, const PlanView& plan, const double* coef, cudaStream_t stream) {
  if (plan.num_blocks == 0) return cudaSuccess;
  return with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<T><<<plan.num_blocks, kBlockThreads, 0, stream>>>(plan, coef);
    return cudaGetLastError();
  });
}

}  // namespace nosync::kernels::engine
