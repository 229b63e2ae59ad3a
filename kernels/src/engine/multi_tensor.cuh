// The multi-tensor engine: kernels that walk a plan (plan.h) and apply a
// functor (functors.cuh) to every element of every tensor in one launch.
//
// Memory access: each thread reads 16-byte vectors (4 fp32, 8 fp16/bf16,
// 2 fp64), kUnroll of them issued before any is used so that enough bytes are
// in flight to keep HBM busy. A segment that does not start 16-byte aligned
// gets a scalar head up to the first aligned address and a scalar tail; the
// vector body still runs (PyTorch's MTA drops the whole chunk to scalar code).
//
// Determinism: every reduction below has a fixed shape (per-thread strided
// order, then a fixed shuffle tree, then a fixed cross-warp order), and the
// plan depends only on tensor sizes, so results are bitwise identical run to
// run. No floating-point atomics anywhere.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/functors.cuh"
#include "engine/plan.h"

namespace nosync::kernels::engine {

// 16-byte loads issued per thread before the first is used. Two-byte types
// get twice as many: their segments are half the bytes of fp32 ones, so each
// thread's share is short and more loads in flight make up for it (bf16 sum
// went from 85 % to 90 % of the read ceiling on the H200).
template <class T>
constexpr int unroll_of() {
  return sizeof(T) == 2 ? 8 : 4;
}

template <class T>
struct alignas(16) Vec {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};

// The elements of segment `s`: pointer and length. int64 until the length,
// which is at most plan.chunk_elems.
template <class T>
__device__ __forceinline__ void segment_span(const PlanView& plan, int32_t s, T*& p, int32_t& n) {
  const int32_t t = plan.seg_tensor[s];
  const TensorSlot slot = plan.slots[t];
  const int64_t begin = static_cast<int64_t>(s - plan.seg_first[t]) * plan.chunk_elems;
  const int64_t left = slot.numel - begin;
  n = static_cast<int32_t>(left < plan.chunk_elems ? left : plan.chunk_elems);
  p = static_cast<T*>(const_cast<void*>(slot.ptr)) + (n > 0 ? begin : 0);
}

// Elements before the first 16-byte boundary (all of them if n is short).
template <class T>
__device__ __forceinline__ int32_t head_elems(const T* p, int32_t n) {
  const auto mis = static_cast<int32_t>(reinterpret_cast<uintptr_t>(p) & 15);
  const int32_t h = mis == 0 ? 0 : (16 - mis) / static_cast<int32_t>(sizeof(T));
  return h < n ? h : n;
}

// One thread's share of a reduction over p[0, n): thread `rank` of `width`.
template <class Fn, class T>
__device__ __forceinline__ acc_t<T> thread_reduce(const T* p, int32_t n, int rank, int width) {
  using A = acc_t<T>;
  using V = Vec<T>;
  A acc[V::kN];
#pragma unroll
  for (int k = 0; k < V::kN; ++k) acc[k] = Fn::template identity<A>();

  const int32_t head = head_elems(p, n);
  if (rank < head) acc[0] = Fn::combine(acc[0], Fn::map(static_cast<A>(load_acc(p[rank]))));
  const int32_t nvec = (n - head) / V::kN;
  const V* vp = reinterpret_cast<const V*>(p + head);
  constexpr int kUnroll = unroll_of<T>();
  for (int32_t base = rank; base < nvec; base += width * kUnroll) {
    V buf[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t i = base + u * width;
      if (i < nvec) {
        // Read-only, read-once data: the non-coherent path, 16 bytes.
        const int4 raw = __ldg(reinterpret_cast<const int4*>(vp + i));
        buf[u] = *reinterpret_cast<const V*>(&raw);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * width < nvec) {
#pragma unroll
        for (int k = 0; k < V::kN; ++k)
          acc[k] = Fn::combine(acc[k], Fn::map(static_cast<A>(load_acc(buf[u].v[k]))));
      }
    }
  }
  for (int32_t i = head + nvec * V::kN + rank; i < n; i += width)
    acc[0] = Fn::combine(acc[0], Fn::map(static_cast<A>(load_acc(p[i]))));

  A r = acc[0];
#pragma unroll
  for (int k = 1; k < V::kN; ++k) r = Fn::combine(r, acc[k]);
  return r;
}

template <class Fn, class A>
__device__ __forceinline__ A warp_reduce(A v) {
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off /= 2) v = Fn::combine(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Block-wide reduction; the result is valid in thread 0.
template <class Fn, class A>
__device__ __forceinline__ A block_reduce(A v) {
  __shared__ A warp_vals[kWarpsPerBlock];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warp_reduce<Fn>(v);
  if (lane == 0) warp_vals[warp] = v;
  __syncthreads();
  A r = Fn::template identity<A>();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int w = 0; w < kWarpsPerBlock; ++w) r = Fn::combine(r, warp_vals[w]);
  }
  __syncthreads();  // warp_vals may be reused by a later call in this block
  return r;
}

// Stage 1: one partial per segment. A block holding one segment reduces it
// with all its threads; a packed block gives each small tensor one warp.
template <class Fn, class T>
__global__ void __launch_bounds__(kBlockThreads) reduce_segments_kernel(PlanView plan, acc_t<T>* partials) {
  using A = acc_t<T>;
  const int32_t s0 = plan.block_first_seg[blockIdx.x];
  const int32_t s1 = plan.block_first_seg[blockIdx.x + 1];
  if (s1 - s0 == 1) {
    const T* p;
    int32_t n;
    segment_span(plan, s0, p, n);
    const A v = block_reduce<Fn>(thread_reduce<Fn>(p, n, threadIdx.x, kBlockThreads));
    if (threadIdx.x == 0) partials[s0] = v;
  } else {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    for (int32_t s = s0 + warp; s < s1; s += kWarpsPerBlock) {
      const T* p;
      int32_t n;
      segment_span(plan, s, p, n);
      const A v = warp_reduce<Fn>(thread_reduce<Fn>(p, n, lane, kWarpSize));
      if (lane == 0) partials[s] = v;
    }
  }
}

// p[rank], p[rank + width], ... folded in that order. The loads are issued
// kFoldUnroll at a time before any is combined: a plain loop waits out one
// L2 round trip per partial, because each combine needs its load and the next
// load is issued after it. The combine order, and so every bit of the result,
// is that of the plain loop. Measured on the H200 (two machines, so roughly):
// 5000 x 1k sum 8.0 -> 7.6 us of GPU time; at 148 x 800k, where the fold is a
// small part of 110 us, no difference showed.
constexpr int kFoldUnroll = 8;
template <class Fn, class A>
__device__ __forceinline__ A fold_strided(const A* p, int32_t n, int rank, int width) {
  A v = Fn::template identity<A>();
  for (int32_t base = rank; base < n; base += width * kFoldUnroll) {
    A buf[kFoldUnroll];
#pragma unroll
    for (int u = 0; u < kFoldUnroll; ++u) {
      const int32_t s = base + u * width;
      if (s < n) buf[u] = p[s];
    }
#pragma unroll
    for (int u = 0; u < kFoldUnroll; ++u)
      if (base + u * width < n) v = Fn::combine(v, buf[u]);
  }
  return v;
}

// Stage 2, total: one block folds all partials in a fixed order.
template <class Fn, class A>
__global__ void __launch_bounds__(kBlockThreads) finish_total_kernel(const A* partials, int32_t num_segments,
                                                                      Finish f) {
  const A v = block_reduce<Fn>(fold_strided<Fn>(partials, num_segments, threadIdx.x, kBlockThreads));
  if (threadIdx.x != 0) return;
  const double total = static_cast<double>(v);
  switch (f.epilogue) {
    case Epilogue::kValue: store_as(f.out, f.out_type, 0, total); break;
    case Epilogue::kScale: store_as(f.out, f.out_type, 0, total * f.scale); break;
    case Epilogue::kSqrt: store_as(f.out, f.out_type, 0, static_cast<double>(sqrt(v))); break;
    case Epilogue::kSetFlag:
      if (total != 0.0) store_as(f.out, f.out_type, 0, 1.0);
      break;
    case Epilogue::kClipCoef: {
      // Same arithmetic as torch.nn.utils.clip_grad_norm_: the coefficient in
      // the accumulator type, clamped at 1, NaN propagating (a NaN norm makes
      // NaN gradients, as in torch).
      const A norm = sqrt(v);
      store_as(f.out, f.out_type, 0, static_cast<double>(norm));
      const A coef = static_cast<A>(f.max_norm) / (norm + static_cast<A>(f.eps));
      *f.coef = static_cast<double>(coef < A(1) || coef != coef ? coef : A(1));
      break;
    }
  }
}

// Stage 2, per tensor: warp i folds tensor i's segments in a fixed order.
template <class Fn, class A>
__global__ void __launch_bounds__(kBlockThreads) finish_per_tensor_kernel(PlanView plan, const A* partials,
                                                                           void* out, OutType out_type,
                                                                           bool take_sqrt) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (t >= plan.num_tensors) return;
  const int32_t first = plan.seg_first[t];
  const A v = warp_reduce<Fn>(fold_strided<Fn>(partials + first, plan.seg_first[t + 1] - first, lane, kWarpSize));
  if (lane == 0) store_as(out, out_type, t, take_sqrt ? static_cast<double>(sqrt(v)) : static_cast<double>(v));
}

// In-place x *= coef over one span, vectorised like thread_reduce.
template <class T>
__device__ __forceinline__ void thread_scale(T* p, int32_t n, acc_t<T> coef, int rank, int width) {
  using A = acc_t<T>;
  using V = Vec<T>;
  const int32_t head = head_elems(p, n);
  if (rank < head) p[rank] = from_acc_any<T>(static_cast<A>(load_acc(p[rank])) * coef);
  const int32_t nvec = (n - head) / V::kN;
  V* vp = reinterpret_cast<V*>(p + head);
  for (int32_t i = rank; i < nvec; i += width) {
    V x = vp[i];
#pragma unroll
    for (int k = 0; k < V::kN; ++k) x.v[k] = from_acc_any<T>(static_cast<A>(load_acc(x.v[k])) * coef);
    vp[i] = x;
  }
  for (int32_t i = head + nvec * V::kN + rank; i < n; i += width)
    p[i] = from_acc_any<T>(static_cast<A>(load_acc(p[i])) * coef);
}

template <class T>
__global__ void __launch_bounds__(kBlockThreads) scale_kernel(PlanView plan, const double* coef_ptr) {
  using A = acc_t<T>;
  const A coef = static_cast<A>(*coef_ptr);
  if (coef == A(1)) return;  // nothing to clip: skip every write
  const int32_t s0 = plan.block_first_seg[blockIdx.x];
  const int32_t s1 = plan.block_first_seg[blockIdx.x + 1];
  if (s1 - s0 == 1) {
    T* p;
    int32_t n;
    segment_span(plan, s0, p, n);
    thread_scale(p, n, coef, threadIdx.x, kBlockThreads);
  } else {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    for (int32_t s = s0 + warp; s < s1; s += kWarpsPerBlock) {
      T* p;
      int32_t n;
      segment_span(plan, s, p, n);
      thread_scale(p, n, coef, lane, kWarpSize);
    }
  }
}

}  // namespace nosync::kernels::engine
