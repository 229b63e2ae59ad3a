#include "plan_cache.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "engine/launch.h"
#include "tensor_list.h"

namespace nosync::kernels::detail {
namespace {

// Enough for a model's parameter groups and gradient lists plus tests; a
// plan is a few bytes per tensor.
constexpr size_t kMaxPlans = 32;

struct Entry {
  uint64_t hash = 0;
  int device = -1;
  int64_t elem_size = 0;                // segments are counted in bytes
  std::vector<engine::TensorSlot> key;  // exact list, for collisions
  std::shared_ptr<UploadedPlan> plan;
  bool ready = false;      // upload known complete
  bool captured = false;   // used inside a graph capture: never evicted
  bool eager_written = true;  // false for a plan built in capture until written outside it
  // The capture whose graph writes the plan (0: uploaded eagerly). Another
  // capture using it writes it too: the first graph may never run (a capture
  // abandoned over a sync), and a new one can get the same addresses from the pool.
  unsigned long long written_by_capture = 0;
  std::vector<cudaStream_t> streams;  // streams recorded with the allocator
  uint64_t last_use = 0;
};

// Leaked on purpose: plans hold device memory, and freeing it from a static
// destructor after the CUDA runtime has shut down would crash at exit.
struct Cache {
  std::mutex mutex;
  std::vector<std::unique_ptr<Entry>> entries;
  uint64_t clock = 0;
  int64_t built = 0;
};
Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

// The id of the capture `s` takes part in; 0 when it is not capturing.
unsigned long long capture_id(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  C10_CUDA_CHECK(cudaStreamGetCaptureInfo(s, &st, &id));
  return st == cudaStreamCaptureStatusNone ? 0 : id;
}
bool capturing(cudaStream_t s) { return capture_id(s) != 0; }

Entry* find(const Gathered& g) {
  const auto& slots = *g.slots;
  const int64_t elem_size = g.elem_size();
  for (auto& e : cache().entries) {
    if (e->hash == g.hash && e->device == g.device.index() && e->elem_size == elem_size &&
        e->key.size() == slots.size() &&
        std::memcmp(e->key.data(), slots.data(), slots.size() * sizeof(engine::TensorSlot)) == 0)
      return e.get();
  }
  return nullptr;
}

void evict_if_full() {
  auto& entries = cache().entries;
  if (entries.size() < kMaxPlans) return;
  auto victim = entries.end();
  for (auto it = entries.begin(); it != entries.end(); ++it)
    if (!(*it)->captured && (victim == entries.end() || (*it)->last_use < (*victim)->last_use)) victim = it;
  if (victim != entries.end()) entries.erase(victim);  // allocator frees stream-ordered (streams recorded)
}

Entry* build(const Gathered& g, cudaStream_t stream) {
  // A list first seen in capture (typically gradients that backward
  // allocated in the graph's pool) is written by the graph itself.
  const unsigned long long cap_id = capture_id(stream);
  const bool cap = cap_id != 0;
  const auto& slots = *g.slots;
  auto e = std::make_unique<Entry>();
  e->hash = g.hash;
  e->device = g.device.index();
  e->elem_size = g.elem_size();
  e->key = slots;
  e->plan = upload_plan(slots, e->elem_size, g.device, stream, cap);
  e->ready = cap;  // nothing to wait for: the writes are in the stream (graph) order
  e->eager_written = !cap;
  e->written_by_capture = cap_id;
  e->streams.push_back(stream);
  ++cache().built;
  evict_if_full();
  cache().entries.push_back(std::move(e));
  return cache().entries.back().get();
}

// A plan uploaded on one stream may be used on another: the first use there
// waits for the upload (on the device), and the buffer is recorded as used by
// that stream so the caching allocator does not recycle it too early.
void prepare_for(Entry& e, cudaStream_t stream) {
  const unsigned long long cap_id = capture_id(stream);
  const bool cap = cap_id != 0;
  if (cap && e.written_by_capture != 0 && e.written_by_capture != cap_id) {
    const auto* p = e.plan.get();
    C10_CUDA_CHECK(engine::write_from_params(p->device_blob.data_ptr(), p->host_blob.const_data_ptr(),
                                             p->shape.bytes, stream));
    e.written_by_capture = cap_id;
  }
  if (cap) e.captured = true;  // a graph now points at this plan: keep it for good
  // Outside capture, learn (without blocking) when the upload has landed;
  // after that no stream ever needs to wait for it again.
  if (!e.ready && !cap) {
    const cudaError_t st = cudaEventQuery(e.plan->uploaded);
    if (st == cudaErrorNotReady) (void)cudaGetLastError();  // not an error: clear it
    else C10_CUDA_CHECK(st);
    e.ready = st == cudaSuccess;
  }
  // Built in capture, used outside it: the bytes reach the device only when
  // the graph runs, so write them once on this stream too.
  if (!cap && !e.eager_written) {
    const auto* p = e.plan.get();
    C10_CUDA_CHECK(engine::write_from_params(p->device_blob.data_ptr(), p->host_blob.const_data_ptr(),
                                             p->shape.bytes, stream));
    e.eager_written = true;
  }
  if (std::find(e.streams.begin(), e.streams.end(), stream) != e.streams.end()) return;
  // Inside capture the wait must be an external-event node: a plain wait on
  // an event recorded outside the capture is not part of the graph.
  if (!e.ready) C10_CUDA_CHECK(cudaStreamWaitEvent(stream, e.plan->uploaded, cap ? cudaEventWaitExternal : 0));
  c10::cuda::CUDACachingAllocator::recordStream(e.plan->device_blob.storage().data_ptr(),
                                                c10::cuda::getStreamFromExternal(stream, e.device));
  e.streams.push_back(stream);
}

}  // namespace

DevicePlan plan_for(const Gathered& g, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  Entry* e = find(g);
  if (e == nullptr) e = build(g, stream);
  prepare_for(*e, stream);
  e->last_use = ++cache().clock;
  return e->plan->device_plan();
}

UploadedPlan::~UploadedPlan() {
  if (uploaded) cudaEventDestroy(uploaded);
}

DevicePlan UploadedPlan::device_plan() const {
  return {shape, engine::view_plan(shape, device_blob.data_ptr())};
}

std::shared_ptr<UploadedPlan> upload_plan(const std::vector<engine::TensorSlot>& slots, int64_t elem_size,
                                          c10::Device device, cudaStream_t stream, bool in_capture) {
  auto p = std::make_shared<UploadedPlan>();
  const auto n = static_cast<int64_t>(slots.size());
  p->shape = engine::measure_plan(slots.data(), n, elem_size);
  const auto bytes = static_cast<int64_t>(p->shape.bytes);
  p->host_blob = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(!in_capture));
  engine::write_plan(slots.data(), n, p->shape, p->host_blob.data_ptr());
  p->device_blob = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  if (in_capture) {
    // No copy node from host memory the graph would have to keep alive and
    // unchanged (PyTorch reverted #119153 over that): kernel parameters.
    C10_CUDA_CHECK(engine::write_from_params(p->device_blob.data_ptr(), p->host_blob.const_data_ptr(),
                                             p->shape.bytes, stream));
    p->upload_stream = stream;
    return p;
  }
  C10_CUDA_CHECK(cudaMemcpyAsync(p->device_blob.data_ptr(), p->host_blob.data_ptr(), p->shape.bytes,
                                 cudaMemcpyHostToDevice, stream));
  C10_CUDA_CHECK(cudaEventCreateWithFlags(&p->uploaded, cudaEventDisableTiming));
  C10_CUDA_CHECK(cudaEventRecord(p->uploaded, stream));
  p->upload_stream = stream;
  return p;
}

int64_t plans_built() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().built;
}

void clear_plan_cache() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  auto& entries = cache().entries;
  entries.erase(std::remove_if(entries.begin(), entries.end(), [](auto& e) { return !e->captured; }),
                entries.end());
}

}  // namespace nosync::kernels::detail
