// The engine's work partition (host only, no GPU): every element of every
// tensor belongs to exactly one segment, segments are in order, blocks cover
// segments contiguously, and packing/chunking follow the documented rules.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/plan.h"

namespace nosync::kernels::engine {
namespace {

struct Built {
  PlanShape shape;
  std::vector<unsigned char> blob;
  PlanView view;
};

// fp32 unless a test says otherwise.
constexpr int64_t kF32 = 4;
const int64_t kChunkElems = chunk_elems_of(kF32);

Built build(const std::vector<TensorSlot>& slots, int64_t elem_size = kF32) {
  Built b;
  b.shape = measure_plan(slots.data(), static_cast<int64_t>(slots.size()), elem_size);
  b.blob.assign(b.shape.bytes + 16, 0xCD);  // poisoned: every table entry must be written
  void* base = b.blob.data();
  write_plan(slots.data(), static_cast<int64_t>(slots.size()), b.shape, base);
  b.view = view_plan(b.shape, base);
  return b;
}

// Walks the plan the way the kernels do and checks it covers each tensor's
// elements exactly once, in order.
void check_covers(const std::vector<TensorSlot>& slots, const Built& b) {
  const PlanView& v = b.view;
  ASSERT_EQ(v.num_tensors, static_cast<int32_t>(slots.size()));
  ASSERT_EQ(v.seg_first[0], 0);
  ASSERT_EQ(v.seg_first[v.num_tensors], v.num_segments);
  ASSERT_EQ(v.block_first_seg[0], v.num_blocks > 0 ? 0 : v.block_first_seg[0]);
  ASSERT_EQ(v.block_first_seg[v.num_blocks], v.num_segments);
  std::vector<int64_t> covered(slots.size(), 0);
  for (int32_t blk = 0; blk < v.num_blocks; ++blk) {
    const int32_t s0 = v.block_first_seg[blk], s1 = v.block_first_seg[blk + 1];
    ASSERT_LT(s0, s1) << "block " << blk << " is empty";
    ASSERT_LE(s1 - s0, kPackMaxTensors);
    for (int32_t s = s0; s < s1; ++s) {
      const int32_t t = v.seg_tensor[s];
      ASSERT_GE(t, 0);
      ASSERT_LT(t, v.num_tensors);
      ASSERT_GE(s, v.seg_first[t]);
      ASSERT_LT(s, v.seg_first[t + 1]);
      if (s1 - s0 > 1) ASSERT_LE(slots[t].numel, kPackMaxElems) << "large tensor packed";
      const int64_t begin = static_cast<int64_t>(s - v.seg_first[t]) * v.chunk_elems;
      const int64_t len = std::min<int64_t>(v.chunk_elems, slots[t].numel - begin);
      ASSERT_EQ(begin, covered[t]) << "tensor " << t << " segment " << s << " out of order";
      covered[t] += std::max<int64_t>(len, 0);
    }
  }
  for (size_t t = 0; t < slots.size(); ++t) {
    EXPECT_EQ(covered[t], slots[t].numel) << "tensor " << t;
    EXPECT_EQ(v.seg_first[t + 1] - v.seg_first[t], segments_of(slots[t].numel, b.shape.chunk_elems)) << "tensor " << t;
    EXPECT_EQ(v.slots[t].numel, slots[t].numel);
    EXPECT_EQ(v.slots[t].ptr, slots[t].ptr);
  }
}

TEST(KernelsPlan, EmptyList) {
  const Built b = build({});
  EXPECT_EQ(b.shape.num_segments, 0);
  EXPECT_EQ(b.shape.num_blocks, 0);
  EXPECT_EQ(b.view.block_first_seg[0], 0);
  EXPECT_EQ(b.view.seg_first[0], 0);
}

TEST(KernelsPlan, SmallTensorsArePackedOneWarpEach) {
  std::vector<TensorSlot> slots(5000, TensorSlot{reinterpret_cast<void*>(0x1000), 1000});
  const Built b = build(slots);
  EXPECT_EQ(b.shape.num_segments, 5000);
  EXPECT_EQ(b.shape.num_blocks, (5000 + kPackMaxTensors - 1) / kPackMaxTensors);
  EXPECT_EQ(b.shape.total_numel, 5000 * 1000);
  check_covers(slots, b);
}

TEST(KernelsPlan, LargeTensorsAreChunked) {
  const int64_t n = 800000;
  std::vector<TensorSlot> slots(148, TensorSlot{reinterpret_cast<void*>(0x1000), n});
  const Built b = build(slots);
  const int64_t per = (n + kChunkElems - 1) / kChunkElems;
  EXPECT_EQ(b.shape.num_segments, 148 * per);
  EXPECT_EQ(b.shape.num_blocks, 148 * per);
  check_covers(slots, b);
}

// Segments are 64 KB whatever the dtype: twice the elements for bf16/fp16,
// half for fp64; anything that does not divide 64 KB is refused.
TEST(KernelsPlan, SegmentsAreCountedInBytes) {
  const int64_t n = 800000;
  std::vector<TensorSlot> slots(3, TensorSlot{reinterpret_cast<void*>(0x1000), n});
  for (int64_t elem : {1, 2, 4, 8}) {
    const Built b = build(slots, elem);
    EXPECT_EQ(b.shape.chunk_elems * elem, kChunkBytes) << "element size " << elem;
    EXPECT_EQ(b.view.chunk_elems, b.shape.chunk_elems);
    EXPECT_EQ(b.shape.num_segments, 3 * ((n * elem + kChunkBytes - 1) / kChunkBytes)) << "element size " << elem;
    check_covers(slots, b);
  }
  EXPECT_THROW(measure_plan(slots.data(), 3, 3), std::invalid_argument);
  EXPECT_THROW(measure_plan(slots.data(), 3, 0), std::invalid_argument);
}

TEST(KernelsPlan, HugeTensorPastInt32) {
  const int64_t n = (int64_t{1} << 31) + 12345;
  std::vector<TensorSlot> slots{{reinterpret_cast<void*>(0x1000), 3}, {reinterpret_cast<void*>(0x2000), n}};
  const Built b = build(slots);
  EXPECT_EQ(b.shape.num_segments, 1 + (n + kChunkElems - 1) / kChunkElems);
  check_covers(slots, b);
}

TEST(KernelsPlan, RandomMixesCoverEveryElementOnce) {
  std::mt19937_64 r(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TensorSlot> slots(std::uniform_int_distribution<int>(0, 400)(r));
    for (auto& s : slots) {
      const int kind = std::uniform_int_distribution<int>(0, 4)(r);
      const int64_t hi = kind == 0 ? 0 : kind == 1 ? kPackMaxElems : kind == 2 ? kPackMaxElems + 1 : 5 * kChunkElems;
      s = {reinterpret_cast<void*>(0x1000), std::uniform_int_distribution<int64_t>(kind == 2 ? hi : 0, hi)(r)};
    }
    const Built b = build(slots);
    check_covers(slots, b);
    if (HasFatalFailure()) return;
  }
}

TEST(KernelsPlan, PartitionDependsOnlyOnSizes) {
  // Same sizes, different pointers: identical tables (what makes results
  // bitwise reproducible on any GPU and grid).
  std::vector<TensorSlot> a{{reinterpret_cast<void*>(0x1000), 70000}, {reinterpret_cast<void*>(0x9000), 5}};
  std::vector<TensorSlot> c{{reinterpret_cast<void*>(0x5550), 70000}, {reinterpret_cast<void*>(0x7770), 5}};
  const Built ba = build(a), bc = build(c);
  ASSERT_EQ(ba.shape.bytes, bc.shape.bytes);
  EXPECT_EQ(0, std::memcmp(ba.blob.data() + ba.shape.off_seg_first, bc.blob.data() + bc.shape.off_seg_first,
                           ba.shape.bytes - ba.shape.off_seg_first));
}

}  // namespace
}  // namespace nosync::kernels::engine
