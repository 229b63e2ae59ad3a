#include "tensor_list.h"

#include <c10/util/Exception.h>

namespace nosync::kernels::detail {
namespace {

bool supported(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Tensor::grad() runs is_leaf() through the dispatcher on every call (to
// warn about non-leaf access); TensorImpl::grad() is one virtual call. At 5000
// parameters that difference is most of the host time of clip_grad_norm_.
const at::Tensor* pick(const at::Tensor& t, Select select) {
  if (select == Select::kTensors) return &t;
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->autograd_meta() == nullptr) return &t;  // a plain tensor: the gradient itself
  const at::Tensor& g = impl->grad();
  if (g.defined()) return &g;
  if (impl->requires_grad()) return nullptr;  // a parameter that got no gradient
  return &t;
}

// The gather loop is bound by cache misses: each tensor is a TensorImpl
// (several lines) and a StorageImpl (the data pointer) scattered over the
// heap. Prefetching a few tensors ahead overlaps those misses.
constexpr int64_t kPrefetchImpl = 16, kPrefetchStorage = 8;

inline void prefetch_ahead(at::TensorList list, int64_t i, int64_t n, Select select) {
  // Gradients sit three objects further down (AutogradMeta, the gradient's
  // TensorImpl, its StorageImpl). A software-pipelined prefetch along that
  // chain was tried on the H200 host (third session, A/B in one run): no
  // gain at 5000 parameters within that host's noise, and the 2000-tensor
  // pass got slower (27-50 -> 61-64 us). So only plain lists prefetch.
  if (select != Select::kTensors) return;
  if (i + kPrefetchImpl < n) {
    const char* p = reinterpret_cast<const char*>(list[i + kPrefetchImpl].unsafeGetTensorImpl());
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
    __builtin_prefetch(p + 128);
  }
  if (i + kPrefetchStorage < n) {
    // No has_storage() (a virtual call): a null StorageImpl* prefetches harmlessly.
    c10::TensorImpl* impl = list[i + kPrefetchStorage].unsafeGetTensorImpl();
    if (impl != nullptr) __builtin_prefetch(impl->unsafe_storage().unsafeGetStorageImpl());
  }
}

// impl->data() asks has_storage() first, a virtual call per tensor; a
// strided tensor of the standard TensorImpl always has one, so read the
// storage directly (checked, not assumed).
const void* data_of(const char* op, const char* what, int64_t i, const c10::TensorImpl* impl) {
  const c10::Storage& storage = impl->unsafe_storage();
  if (C10_UNLIKELY(!storage)) TORCH_CHECK(false, op, ": ", what, "[", i, "] has no storage");
  return static_cast<const char*>(storage.data()) + impl->storage_offset() * impl->itemsize();
}

}  // namespace

Gathered gather(const char* op, at::TensorList list, Select select) {
  thread_local std::vector<engine::TensorSlot> slots;
  thread_local std::vector<const at::Tensor*> tensors;
  slots.clear();
  tensors.clear();
  Gathered g;
  g.op = op;
  g.slots = &slots;
  g.tensors = &tensors;

  const char* what = select == Select::kTensors ? "tensors" : "gradient of tensors";
  int64_t first = -1;  // index of the first selected tensor: the reference for device and dtype
  c10::TensorImpl* ref = nullptr;
  uint64_t h = 0;
  const int64_t n = static_cast<int64_t>(list.size());
  for (int64_t i = 0; i < n; ++i) {
    prefetch_ahead(list, i, n, select);
    TORCH_CHECK(list[i].defined(), op, ": tensors[", i, "] is an undefined tensor");
    const at::Tensor* t = pick(list[i], select);
    if (t == nullptr) continue;
    c10::TensorImpl* impl = t->unsafeGetTensorImpl();
    if (ref == nullptr) {
      first = i;
      ref = impl;
      g.device = impl->device();
      g.dtype = impl->dtype().toScalarType();
      TORCH_CHECK(g.device.is_cuda() || g.device.is_cpu(), op, ": ", what, "[", i, "] is on ", g.device,
                  "; only CUDA and CPU tensors are supported");
      TORCH_CHECK(supported(g.dtype), op, ": ", what, "[", i, "] has dtype ", g.dtype,
                  "; supported: Float, Double, Half, BFloat16");
      if (g.device.is_cuda()) slots.reserve(static_cast<size_t>(n));
      else tensors.reserve(static_cast<size_t>(n));
    } else {
      if (C10_UNLIKELY(impl->device() != g.device))
        TORCH_CHECK(false, op, ": ", what, "[", i, "] is on ", impl->device(), " but ", what, "[", first,
                    "] is on ", g.device, "; all tensors must be on one device");
      if (C10_UNLIKELY(impl->dtype().toScalarType() != g.dtype))
        TORCH_CHECK(false, op, ": ", what, "[", i, "] has dtype ", impl->dtype().toScalarType(), " but ", what, "[",
                    first, "] has ", g.dtype,
                    "; one dtype per call (call once per dtype group, or convert)");
    }
    if (g.device.is_cuda()) {
      if (C10_UNLIKELY(impl->layout() != c10::kStrided))
        TORCH_CHECK(false, op, ": ", what, "[", i, "] has layout ", impl->layout(),
                    "; only dense strided tensors are supported");
      // Dense and non-overlapping (contiguous, channels-last, any permutation):
      // the elements are exactly numel items from data(), in some order, which
      // is all a reduction or an element-wise scale needs.
      if (C10_UNLIKELY(!impl->is_contiguous() && !impl->is_non_overlapping_and_dense()))
        TORCH_CHECK(false, op, ": ", what, "[", i,
                    "] is neither contiguous nor dense (a strided view?); pass .contiguous() copies");
      const int64_t numel = impl->numel();
      const void* ptr = numel == 0 ? nullptr : data_of(op, what, i, impl);
      slots.push_back({ptr, numel});
      // Terms summed, not chained: a chained hash (h = (h ^ x) * p) puts two
      // dependent multiplies per tensor on the loop's critical path. The
      // cache compares the whole list on a hash match, so a weaker hash only
      // costs a compare.
      h += (reinterpret_cast<uintptr_t>(ptr) ^ static_cast<uint64_t>(i)) * 0x9e3779b97f4a7c15ull +
           static_cast<uint64_t>(numel) * 0xc2b2ae3d27d4eb4full;
    } else {
      tensors.push_back(t);
    }
    ++g.count;
  }
  g.hash = h ^ (static_cast<uint64_t>(g.count) * 0xff51afd7ed558ccdull);
  return g;
}

}  // namespace nosync::kernels::detail
