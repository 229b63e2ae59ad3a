// Per-op element functors and type helpers for the multi-tensor engine.
// A functor says what one element contributes (map) and how two contributions
// combine (combine); the engine does everything else, for every dtype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "engine/launch.h"

namespace nosync::kernels::engine {

// Accumulator type: fp32 for fp32/fp16/bf16 (PyTorch's "opmath"), fp64 for fp64.
template <class T> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };
template <class T> using acc_t = typename AccOf<T>::type;

__device__ __forceinline__ float load_acc(float x) { return x; }
__device__ __forceinline__ double load_acc(double x) { return x; }
__device__ __forceinline__ float load_acc(__half x) { return __half2float(x); }
__device__ __forceinline__ float load_acc(__nv_bfloat16 x) { return __bfloat162float(x); }

// Accumulator back to storage type, round to nearest even.
template <class T> __device__ __forceinline__ T from_acc_any(acc_t<T> x);
template <> __device__ __forceinline__ float from_acc_any<float>(float x) { return x; }
template <> __device__ __forceinline__ double from_acc_any<double>(double x) { return x; }
template <> __device__ __forceinline__ __half from_acc_any<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc_any<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

struct SumFn {
  template <class A> __device__ __forceinline__ static A identity() { return A(0); }
  template <class A> __device__ __forceinline__ static A map(A x) { return x; }
  template <class A> __device__ __forceinline__ static A combine(A a, A b) { return a + b; }
};

struct SumSquaresFn {
  template <class A> __device__ __forceinline__ static A identity() { return A(0); }
  template <class A> __device__ __forceinline__ static A map(A x) { return x * x; }
  template <class A> __device__ __forceinline__ static A combine(A a, A b) { return a + b; }
};

// 1 for NaN/Inf, else 0; max keeps "any". No early exit: a reduction over
// everything costs the same as a scan that stops, on a GPU that reads it all.
struct NonfiniteFn {
  template <class A> __device__ __forceinline__ static A identity() { return A(0); }
  template <class A> __device__ __forceinline__ static A map(A x) { return isfinite(x) ? A(0) : A(1); }
  template <class A> __device__ __forceinline__ static A combine(A a, A b) { return a > b ? a : b; }
};

// Writes `v` as element `i` of an output of runtime type `t`.
__device__ __forceinline__ void store_as(void* out, OutType t, int64_t i, double v) {
  switch (t) {
    case OutType::kF32: static_cast<float*>(out)[i] = static_cast<float>(v); break;
    case OutType::kF64: static_cast<double*>(out)[i] = v; break;
    case OutType::kF16: static_cast<__half*>(out)[i] = __double2half(v); break;
    case OutType::kBF16: static_cast<__nv_bfloat16*>(out)[i] = __double2bfloat16(v); break;
    case OutType::kI32: static_cast<int32_t*>(out)[i] = static_cast<int32_t>(v); break;
    case OutType::kBool: static_cast<bool*>(out)[i] = v != 0.0; break;
  }
}

}  // namespace nosync::kernels::engine
