// The work partition of one tensor list: which block reduces which elements.
//
// Plain C++ (no torch, no CUDA) so the host side can be unit-tested on the CPU
// box and the .cu files stay light.  The partition depends only on the tensor
// sizes (and the element size), never on the GPU's SM count or the grid size,
// which is what makes the reductions bitwise reproducible run to run.
//
// Vocabulary:
//   tensor   one entry of the input list: a pointer to `numel` dense elements
//   segment  a contiguous piece of one tensor reduced to one partial value:
//            a large tensor has ceil(numel / chunk_elems) segments, a small
//            (or empty) one exactly one
//   block    one CUDA block's share: one segment of a large tensor, or up to
//            kPackMaxTensors consecutive small tensors (one warp each)
#pragma once

#include <cstddef>
#include <cstdint>

namespace nosync::kernels::engine {

constexpr int kBlockThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = kBlockThreads / kWarpSize;
// 64 KB per segment, whatever the dtype (16k fp32, 32k fp16/bf16, 8k fp64
// elements). Measured on the H200 with fp32: clip of 148 x 800k took 371 us
// with 256 KB segments, 361 us with 128 KB, 358 us with 64 KB (more, shorter
// blocks: less time in a part-full last wave, we think), large sums at 97 %
// of the read ceiling. Counted in elements instead, bf16 at 32 KB fell from
// 90 % to 82 %: bytes are what a block's fixed cost is weighed against.
constexpr int64_t kChunkBytes = int64_t{1} << 16;
inline int64_t chunk_elems_of(int64_t elem_size) { return kChunkBytes / elem_size; }
// Tensors this small are packed, one warp each, so 5000 tiny tensors become
// 625 full blocks instead of 5000 mostly idle ones.
constexpr int64_t kPackMaxElems = 4096;
static_assert(kPackMaxElems <= kChunkBytes / 8, "a packed tensor must fit one segment of any dtype");
constexpr int kPackMaxTensors = kWarpsPerBlock;

struct TensorSlot {
  const void* ptr;
  int64_t numel;
};
static_assert(sizeof(TensorSlot) == 16, "TensorSlot is mirrored in device code");

// Device-side view of a plan. Every pointer points into one device buffer.
struct PlanView {
  const TensorSlot* slots;          // [num_tensors]
  const int32_t* seg_first;         // [num_tensors + 1]: CSR, segments of tensor i
  const int32_t* seg_tensor;        // [num_segments]: owning tensor of each segment
  const int32_t* block_first_seg;   // [num_blocks + 1]: segments of block b
  int32_t num_tensors;
  int32_t num_segments;
  int32_t num_blocks;
  int32_t chunk_elems;              // elements per segment of a chunked tensor
};

// Sizes of a plan's tables, from the tensor sizes alone.
struct PlanShape {
  int64_t num_tensors = 0;
  int64_t num_segments = 0;
  int64_t num_blocks = 0;
  int64_t total_numel = 0;
  int64_t chunk_elems = 0;
  // Byte offsets of each table inside the blob (16-byte aligned).
  size_t off_slots = 0, off_seg_first = 0, off_seg_tensor = 0, off_block_first_seg = 0;
  size_t bytes = 0;
};

inline int64_t segments_of(int64_t numel, int64_t chunk_elems) {
  return numel <= chunk_elems ? 1 : (numel + chunk_elems - 1) / chunk_elems;
}

// First pass: counts and offsets, for elements of `elem_size` bytes. No
// allocation.
PlanShape measure_plan(const TensorSlot* slots, int64_t n, int64_t elem_size);

// Second pass: fills `blob` (shape.bytes, 16-byte aligned) with the tables.
// The blob is position independent: tables are addressed by offset, so the
// same bytes serve on the host (tests) and after a copy to the device.
void write_plan(const TensorSlot* slots, int64_t n, const PlanShape& shape, void* blob);

// Pointers into a blob that lives at `base` (host or device).
PlanView view_plan(const PlanShape& shape, const void* base);

}  // namespace nosync::kernels::engine
