#include "engine/plan.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace nosync::kernels::engine {
namespace {

size_t align16(size_t x) { return (x + 15) & ~size_t{15}; }

bool packable(int64_t numel) { return numel <= kPackMaxElems; }

// Walks the list once, calling on_block(first_segment) whenever a block
// starts; shared by both passes so they cannot disagree.
template <class OnSegment, class OnBlock>
void walk(const TensorSlot* slots, int64_t n, int64_t chunk_elems, OnSegment on_segment, OnBlock on_block) {
  int64_t seg = 0;
  int open_pack = 0;  // small tensors in the block being packed; 0 = none open
  for (int64_t i = 0; i < n; ++i) {
    const int64_t numel = slots[i].numel;
    if (packable(numel)) {
      if (open_pack == 0 || open_pack == kPackMaxTensors) {
        on_block(seg);
        open_pack = 0;
      }
      ++open_pack;
      on_segment(i, seg++);
    } else {
      open_pack = 0;
      const int64_t k = segments_of(numel, chunk_elems);
      for (int64_t c = 0; c < k; ++c) {
        on_block(seg);
        on_segment(i, seg++);
      }
    }
  }
}

}  // namespace

PlanShape measure_plan(const TensorSlot* slots, int64_t n, int64_t elem_size) {
  if (elem_size <= 0 || kChunkBytes % elem_size != 0)
    throw std::invalid_argument("nosync::kernels: element size must divide the segment size");
  PlanShape s;
  s.num_tensors = n;
  s.chunk_elems = chunk_elems_of(elem_size);
  walk(slots, n, s.chunk_elems, [&](int64_t, int64_t) { ++s.num_segments; }, [&](int64_t) { ++s.num_blocks; });
  for (int64_t i = 0; i < n; ++i) s.total_numel += slots[i].numel;
  // Tables use int32 indices; 2^31 segments of 64 KB is far beyond any device
  // memory, but say so rather than wrap.
  if (s.num_segments >= std::numeric_limits<int32_t>::max() ||
      n >= std::numeric_limits<int32_t>::max())
    throw std::length_error("nosync::kernels: tensor list too large for one plan");
  size_t off = 0;
  s.off_slots = off;
  off = align16(off + sizeof(TensorSlot) * static_cast<size_t>(n));
  s.off_seg_first = off;
  off = align16(off + sizeof(int32_t) * static_cast<size_t>(n + 1));
  s.off_seg_tensor = off;
  off = align16(off + sizeof(int32_t) * static_cast<size_t>(s.num_segments));
  s.off_block_first_seg = off;
  off = align16(off + sizeof(int32_t) * static_cast<size_t>(s.num_blocks + 1));
  s.bytes = off;
  return s;
}

void write_plan(const TensorSlot* slots, int64_t n, const PlanShape& shape, void* blob) {
  auto* base = static_cast<char*>(blob);
  std::memcpy(base + shape.off_slots, slots, sizeof(TensorSlot) * static_cast<size_t>(n));
  auto* seg_first = reinterpret_cast<int32_t*>(base + shape.off_seg_first);
  auto* seg_tensor = reinterpret_cast<int32_t*>(base + shape.off_seg_tensor);
  auto* block_first = reinterpret_cast<int32_t*>(base + shape.off_block_first_seg);
  int64_t last_tensor = -1;
  int64_t b = 0;
  walk(
      slots, n, shape.chunk_elems,
      [&](int64_t tensor, int64_t seg) {
        if (tensor != last_tensor) {
          seg_first[tensor] = static_cast<int32_t>(seg);
          last_tensor = tensor;
        }
        seg_tensor[seg] = static_cast<int32_t>(tensor);
      },
      [&](int64_t seg) { block_first[b++] = static_cast<int32_t>(seg); });
  seg_first[n] = static_cast<int32_t>(shape.num_segments);
  block_first[shape.num_blocks] = static_cast<int32_t>(shape.num_segments);
}

PlanView view_plan(const PlanShape& shape, const void* base) {
  const auto* b = static_cast<const char*>(base);
  PlanView v{};
  v.slots = reinterpret_cast<const TensorSlot*>(b + shape.off_slots);
  v.seg_first = reinterpret_cast<const int32_t*>(b + shape.off_seg_first);
  v.seg_tensor = reinterpret_cast<const int32_t*>(b + shape.off_seg_tensor);
  v.block_first_seg = reinterpret_cast<const int32_t*>(b + shape.off_block_first_seg);
  v.num_tensors = static_cast<int32_t>(shape.num_tensors);
  v.num_segments = static_cast<int32_t>(shape.num_segments);
  v.num_blocks = static_cast<int32_t>(shape.num_blocks);
  v.chunk_elems = static_cast<int32_t>(shape.chunk_elems);
  return v;
}

}  // namespace nosync::kernels::engine
