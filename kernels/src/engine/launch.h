// Host entry points of the CUDA engine. Deliberately free of torch headers:
// the .cu files compile in seconds, and the torch-facing code (ops_cuda.cpp)
// owns validation, allocation and streams.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/plan.h"

namespace nosync::kernels::engine {

enum class DType : int { kF32, kF64, kF16, kBF16 };
// Element type of a result written by a finishing kernel.
enum class OutType : int { kF32, kF64, kF16, kBF16, kI32, kBool };

// What each element contributes, and how contributions combine.
enum class ReduceOp : int {
  kSum,        // x, +
  kSumSquares, // x*x, +
  kNonfinite,  // !isfinite(x), max
};

// What the single-block second stage makes of the grand total.
enum class Epilogue : int {
  kValue,          // out = total
  kScale,          // out = total * scale             (mean: scale = 1 / numel)
  kSqrt,           // out = sqrt(total)               (L2 norm)
  kSetFlag,        // if total != 0: out = 1          (never clears: flags OR up)
  kClipCoef,       // out = sqrt(total); coef = clamp(max_norm / (out + eps), max 1)
};

struct Finish {
  Epilogue epilogue = Epilogue::kValue;
  void* out = nullptr;
  OutType out_type = OutType::kF32;
  double scale = 1.0;
  double max_norm = 0.0;
  double eps = 0.0;
  double* coef = nullptr;  // kClipCoef only: written for scale_in_place
};

// Stage 1 writes one partial per segment into `partials` (num_segments
// accumulators: float, or double for fp64 inputs); stage 2 (one block) folds
// them in a fixed order and applies the epilogue. Two launches, no atomics.
cudaError_t reduce_total(DType dtype, ReduceOp op, const PlanView& plan, void* partials,
                         const Finish& finish, cudaStream_t stream);

// Stage 1 as above; stage 2 gives each tensor one warp that folds its own
// segments in a fixed order: out[i] = total_i (or sqrt(total_i)).
cudaError_t reduce_per_tensor(DType dtype, ReduceOp op, const PlanView& plan, void* partials,
                              void* out, OutType out_type, bool take_sqrt, cudaStream_t stream);

// x *= *coef for every element of every tensor, computed in fp32 (fp64 for
// fp64 tensors). Blocks return at once when *coef == 1, so a clip that does
// not clip writes nothing.
cudaError_t scale_in_place(DType dtype, const PlanView& plan, const double* coef, cudaStream_t stream);

size_t accumulator_bytes(DType dtype);

// Writes `bytes` of host memory `src` to device memory `dst` with kernels whose
// parameters carry the bytes (< 4 KB per launch). Inside CUDA-graph capture
// this puts host data into the graph with no host buffer to keep alive and no
// host-to-device copy node: the bytes live in the graph's kernel nodes.
cudaError_t write_from_params(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace nosync::kernels::engine
