#include "cupti_adapter.h"

#include <cuda.h>
#include <cupti.h>  // also brings the generated *_params structs
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "engine.h"
#include "python_stack.h"
#include "stack_capture.h"

namespace nosync::san {

namespace {

Engine* g_engine = nullptr;
const auto g_t0 = std::chrono::steady_clock::now();

// ---------------------------------------------------------------- memory kinds
using PointerGetAttributesFn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
PointerGetAttributesFn g_get_attributes = nullptr;

// cuPointerGetAttributes does not fail on unregistered host memory; it
// reports memory type 0, which is exactly "pageable". It is a driver call we
// never enable a callback for, so it cannot re-enter this adapter.
MemKind memory_kind(const void* p) {
  if (!p || !g_get_attributes) return MemKind::Unknown;
  unsigned int type = 0, managed = 0;
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* data[2] = {&type, &managed};
  if (g_get_attributes(2, attrs, data, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return MemKind::Unknown;
  if (managed & 0xff) return MemKind::Managed;
  switch (type) {
    case CU_MEMORYTYPE_HOST: return MemKind::Pinned;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: return MemKind::Device;
    case CU_MEMORYTYPE_UNIFIED: return MemKind::Managed;
    default: return MemKind::Pageable;
  }
}

bool on_device(MemKind k) { return k == MemKind::Device || k == MemKind::Managed; }

Direction infer_direction(MemKind src, MemKind dst) {
  if (on_device(src)) return on_device(dst) ? Direction::DeviceToDevice : Direction::DeviceToHost;
  return on_device(dst) ? Direction::HostToDevice : Direction::HostToHost;
}

Direction from_runtime_kind(int kind, MemKind src, MemKind dst) {
  switch (kind) {
    case 0: return Direction::HostToHost;
    case 1: return Direction::HostToDevice;
    case 2: return Direction::DeviceToHost;
    case 3: return Direction::DeviceToDevice;
    default: return infer_direction(src, dst);  // cudaMemcpyDefault: UVA decides
  }
}

// ---------------------------------------------------------------- decoders
// One per parameter layout, typed on the generated *_params structs so a
// layout change in a future CUDA fails to compile instead of misreading.
using Decoder = void (*)(const void* params, SyncEvent& e);

// With an explicit cudaMemcpyKind only the host side needs a pointer query
// (one driver call per copy instead of two: it is the adapter's main cost on
// pinned non_blocking copies); cudaMemcpyDefault asks about both sides.
void runtime_kinds(const void* src, const void* dst, int kind, SyncEvent& e) {
  switch (kind) {
    case 1:  // cudaMemcpyHostToDevice
      e.src = memory_kind(src);
      e.dst = MemKind::Device;
      break;
    case 2:  // cudaMemcpyDeviceToHost
      e.src = MemKind::Device;
      e.dst = memory_kind(dst);
      break;
    case 3:  // cudaMemcpyDeviceToDevice
      e.src = e.dst = MemKind::Device;
      break;
    case 0:  // cudaMemcpyHostToHost: never waits for the GPU, nothing to ask
      break;
    default:
      e.src = memory_kind(src);
      e.dst = memory_kind(dst);
  }
  e.direction = from_runtime_kind(kind, e.src, e.dst);
}

template <class P>
void rt_copy(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  runtime_kinds(p->src, p->dst, static_cast<int>(p->kind), e);
  e.bytes = p->count;
}

template <class P>
void rt_copy_2d(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  runtime_kinds(p->src, p->dst, static_cast<int>(p->kind), e);
  e.bytes = p->width * p->height;
}

template <class P>
void rt_to_symbol(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.src = memory_kind(p->src);
  e.dst = MemKind::Device;
  e.direction = from_runtime_kind(static_cast<int>(p->kind), e.src, e.dst);
  e.bytes = p->count;
}

template <class P>
void rt_from_symbol(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.src = MemKind::Device;
  e.dst = memory_kind(p->dst);
  e.direction = from_runtime_kind(static_cast<int>(p->kind), e.src, e.dst);
  e.bytes = p->count;
}

template <class P>
void rt_memset(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.dst = memory_kind(p->devPtr);
  e.bytes = p->count;
}

template <class P>
void drv_htod(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.src = memory_kind(p->srcHost);
  e.dst = MemKind::Device;
  e.direction = Direction::HostToDevice;
  e.bytes = p->ByteCount;
}

template <class P>
void drv_dtoh(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.src = MemKind::Device;
  e.dst = memory_kind(p->dstHost);
  e.direction = Direction::DeviceToHost;
  e.bytes = p->ByteCount;
}

template <class P>
void drv_uva(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.src = memory_kind(reinterpret_cast<const void*>(p->src));
  e.dst = memory_kind(reinterpret_cast<const void*>(p->dst));
  e.direction = infer_direction(e.src, e.dst);
  e.bytes = p->ByteCount;
}

template <class P, unsigned Width>
void drv_memset(const void* params, SyncEvent& e) {
  auto* p = static_cast<const P*>(params);
  e.dst = memory_kind(reinterpret_cast<const void*>(p->dstDevice));
  e.bytes = p->N * Width;
}

// Any free: only whether the pointer is null matters (see SyncEvent::null_free).
template <class T> struct ParamsOf;
template <class P, class M> struct ParamsOf<M P::*> { using type = P; };
template <auto Ptr>
void free_of(const void* params, SyncEvent& e) {
  using P = typename ParamsOf<decltype(Ptr)>::type;
  e.null_free = !(static_cast<const P*>(params)->*Ptr);
}

// ---------------------------------------------------------------- the watch list
struct Watched {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  ApiKind kind;
  const char* name;  // our spelling: no _v3020/_ptsz suffixes
  Decoder decode;
};

#define RT(id) CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##id
#define DRV(id) CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##id

const Watched kWatched[] = {
    // Runtime API: what LibTorch and most user code call.
    {RT(cudaDeviceSynchronize_v3020), ApiKind::DeviceSync, "cudaDeviceSynchronize", nullptr},
    {RT(cudaThreadSynchronize_v3020), ApiKind::DeviceSync, "cudaThreadSynchronize", nullptr},
    {RT(cudaStreamSynchronize_v3020), ApiKind::StreamSync, "cudaStreamSynchronize", nullptr},
    {RT(cudaStreamSynchronize_ptsz_v7000), ApiKind::StreamSync, "cudaStreamSynchronize", nullptr},
    {RT(cudaEventSynchronize_v3020), ApiKind::EventSync, "cudaEventSynchronize", nullptr},
    {RT(cudaStreamQuery_v3020), ApiKind::StreamQuery, "cudaStreamQuery", nullptr},
    {RT(cudaStreamQuery_ptsz_v7000), ApiKind::StreamQuery, "cudaStreamQuery", nullptr},
    {RT(cudaEventQuery_v3020), ApiKind::EventQuery, "cudaEventQuery", nullptr},
    {RT(cudaMemcpy_v3020), ApiKind::Memcpy, "cudaMemcpy", rt_copy<cudaMemcpy_v3020_params>},
    {RT(cudaMemcpy_ptds_v7000), ApiKind::Memcpy, "cudaMemcpy", rt_copy<cudaMemcpy_ptds_v7000_params>},
    {RT(cudaMemcpy2D_v3020), ApiKind::Memcpy, "cudaMemcpy2D", rt_copy_2d<cudaMemcpy2D_v3020_params>},
    {RT(cudaMemcpyToSymbol_v3020), ApiKind::Memcpy, "cudaMemcpyToSymbol", rt_to_symbol<cudaMemcpyToSymbol_v3020_params>},
    {RT(cudaMemcpyFromSymbol_v3020), ApiKind::Memcpy, "cudaMemcpyFromSymbol",
     rt_from_symbol<cudaMemcpyFromSymbol_v3020_params>},
    {RT(cudaMemcpyAsync_v3020), ApiKind::MemcpyAsync, "cudaMemcpyAsync", rt_copy<cudaMemcpyAsync_v3020_params>},
    {RT(cudaMemcpyAsync_ptsz_v7000), ApiKind::MemcpyAsync, "cudaMemcpyAsync",
     rt_copy<cudaMemcpyAsync_ptsz_v7000_params>},
    {RT(cudaMemcpy2DAsync_v3020), ApiKind::MemcpyAsync, "cudaMemcpy2DAsync",
     rt_copy_2d<cudaMemcpy2DAsync_v3020_params>},
    {RT(cudaMemset_v3020), ApiKind::Memset, "cudaMemset", rt_memset<cudaMemset_v3020_params>},
    {RT(cudaMemset_ptds_v7000), ApiKind::Memset, "cudaMemset", rt_memset<cudaMemset_ptds_v7000_params>},
    {RT(cudaFree_v3020), ApiKind::Free, "cudaFree", free_of<&cudaFree_v3020_params::devPtr>},
    {RT(cudaFreeHost_v3020), ApiKind::Free, "cudaFreeHost", free_of<&cudaFreeHost_v3020_params::ptr>},
    {RT(cudaMalloc_v3020), ApiKind::Malloc, "cudaMalloc", nullptr},
    // Driver API: for code that skips the runtime (Triton, cuSPARSE internals,
    // NCCL). Calls made from inside a watched runtime call are not counted again.
    {DRV(cuCtxSynchronize), ApiKind::ContextSync, "cuCtxSynchronize", nullptr},
    {DRV(cuStreamSynchronize), ApiKind::StreamSync, "cuStreamSynchronize", nullptr},
    {DRV(cuStreamSynchronize_ptsz), ApiKind::StreamSync, "cuStreamSynchronize", nullptr},
    {DRV(cuEventSynchronize), ApiKind::EventSync, "cuEventSynchronize", nullptr},
    {DRV(cuStreamQuery), ApiKind::StreamQuery, "cuStreamQuery", nullptr},
    {DRV(cuStreamQuery_ptsz), ApiKind::StreamQuery, "cuStreamQuery", nullptr},
    {DRV(cuEventQuery), ApiKind::EventQuery, "cuEventQuery", nullptr},
    {DRV(cuMemcpyHtoD_v2), ApiKind::Memcpy, "cuMemcpyHtoD", drv_htod<cuMemcpyHtoD_v2_params>},
    {DRV(cuMemcpyHtoD_v2_ptds), ApiKind::Memcpy, "cuMemcpyHtoD", drv_htod<cuMemcpyHtoD_v2_ptds_params>},
    {DRV(cuMemcpyDtoH_v2), ApiKind::Memcpy, "cuMemcpyDtoH", drv_dtoh<cuMemcpyDtoH_v2_params>},
    {DRV(cuMemcpyDtoH_v2_ptds), ApiKind::Memcpy, "cuMemcpyDtoH", drv_dtoh<cuMemcpyDtoH_v2_ptds_params>},
    {DRV(cuMemcpy), ApiKind::Memcpy, "cuMemcpy", drv_uva<cuMemcpy_params>},
    {DRV(cuMemcpy_ptds), ApiKind::Memcpy, "cuMemcpy", drv_uva<cuMemcpy_ptds_params>},
    {DRV(cuMemcpyHtoDAsync_v2), ApiKind::MemcpyAsync, "cuMemcpyHtoDAsync", drv_htod<cuMemcpyHtoDAsync_v2_params>},
    {DRV(cuMemcpyHtoDAsync_v2_ptsz), ApiKind::MemcpyAsync, "cuMemcpyHtoDAsync",
     drv_htod<cuMemcpyHtoDAsync_v2_ptsz_params>},
    {DRV(cuMemcpyDtoHAsync_v2), ApiKind::MemcpyAsync, "cuMemcpyDtoHAsync", drv_dtoh<cuMemcpyDtoHAsync_v2_params>},
    {DRV(cuMemcpyDtoHAsync_v2_ptsz), ApiKind::MemcpyAsync, "cuMemcpyDtoHAsync",
     drv_dtoh<cuMemcpyDtoHAsync_v2_ptsz_params>},
    {DRV(cuMemcpyAsync), ApiKind::MemcpyAsync, "cuMemcpyAsync", drv_uva<cuMemcpyAsync_params>},
    {DRV(cuMemcpyAsync_ptsz), ApiKind::MemcpyAsync, "cuMemcpyAsync", drv_uva<cuMemcpyAsync_ptsz_params>},
    {DRV(cuMemsetD8_v2), ApiKind::Memset, "cuMemsetD8", drv_memset<cuMemsetD8_v2_params, 1>},
    {DRV(cuMemsetD32_v2), ApiKind::Memset, "cuMemsetD32", drv_memset<cuMemsetD32_v2_params, 4>},
    {DRV(cuMemFree_v2), ApiKind::Free, "cuMemFree", free_of<&cuMemFree_v2_params::dptr>},
    {DRV(cuMemFreeHost), ApiKind::Free, "cuMemFreeHost", free_of<&cuMemFreeHost_params::p>},
    {DRV(cuMemAlloc_v2), ApiKind::Malloc, "cuMemAlloc", nullptr},
};
#undef RT
#undef DRV

// cbid -> entry, per domain; ids are small dense integers.
constexpr std::size_t kMaxCbid = 1024;
const Watched* g_runtime[kMaxCbid];
const Watched* g_driver[kMaxCbid];

struct ThreadState {
  int runtime_depth = 0;  // > 0 while inside a watched runtime call
  Direction last_copy = Direction::None;
  std::uint64_t tid = 0;
  std::uint32_t generation = 0;
};
thread_local ThreadState t_state;
// Bumped on every (re)subscription: a thread whose runtime call was entered
// before a pause would otherwise keep runtime_depth > 0 and skip its driver
// calls forever.
std::atomic<std::uint32_t> g_generation{1};

// Python frames are gathered only in processes that run Python (python_frames=1).
bool g_python = false;
constexpr std::size_t kPythonStackBytes = 16384;

std::uint64_t thread_id() {
  if (t_state.tid == 0) t_state.tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return t_state.tid;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* raw) {
  if (cbid >= kMaxCbid || !g_engine) return;
  const Watched* w = domain == CUPTI_CB_DOMAIN_RUNTIME_API  ? g_runtime[cbid]
                     : domain == CUPTI_CB_DOMAIN_DRIVER_API ? g_driver[cbid]
                                                            : nullptr;
  if (!w) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(raw);
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const std::uint32_t gen = g_generation.load(std::memory_order_relaxed);
  if (t_state.generation != gen) {
    t_state.runtime_depth = 0;
    t_state.generation = gen;
  }
  // Runtime calls go through the driver: the driver half of a watched
  // runtime call is the same stall, count it once (at the runtime level,
  // where the user-facing API name is).
  if (!runtime && t_state.runtime_depth > 0) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (runtime) ++t_state.runtime_depth;
    *cb->correlationData = now_ns();
    return;
  }
  if (runtime) --t_state.runtime_depth;
  const std::uint64_t end = now_ns();
  const std::uint64_t start = *cb->correlationData;

  SyncEvent e;
  e.kind = w->kind;
  e.api = w->name;
  e.start_ns = start;
  e.duration_ns = end > start ? end - start : 0;
  e.thread_id = thread_id();
  if (w->decode && cb->functionParams) w->decode(cb->functionParams, e);
  if (e.kind == ApiKind::Memcpy || e.kind == ApiKind::MemcpyAsync) t_state.last_copy = e.direction;
  else e.last_copy = t_state.last_copy;

  std::uintptr_t pcs[128];
  if (g_engine->wants_stack(e)) {
    const auto depth = static_cast<std::uint32_t>(g_engine->options().stack_depth);
    e.num_pcs = capture_stack(pcs, depth < 128 ? depth : 128);
    e.pcs = pcs;
    if (g_python) {
      // Heap, once per thread: a faulthandler dump of 100 frames is ~15 KB,
      // too much for the stack of a thread we do not own.
      thread_local std::unique_ptr<char[]> py;
      if (!py) py.reset(new char[kPythonStackBytes]);
      const std::size_t n = capture_python_stack(py.get(), kPythonStackBytes);
      if (n) {
        e.python_stack = py.get();
        e.python_stack_len = static_cast<std::uint32_t>(n);
      }
    }
  }
  g_engine->record(e);
}

// ---------------------------------------------------------------- kernel activity (activity=1)
std::atomic<std::int64_t> g_cupti_minus_host{0};

// CUPTI recommends 1-10 MB buffers; records are copied out as intervals and
// the buffer freed at once, so memory stays bounded however long the run.
constexpr std::size_t kActivityBuffer = 4 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kActivityBuffer));
  *size = *buffer ? kActivityBuffer : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  KernelInterval batch[512];
  std::size_t n = 0;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    // CUPTI's clock -> the sanitizer's host clock (offset taken at start), so
    // kernels and host syncs share one time axis in the trace.
    const std::int64_t off = g_cupti_minus_host.load(std::memory_order_relaxed);
    if (k->end <= k->start) continue;
    batch[n++] = KernelInterval{static_cast<std::uint64_t>(static_cast<std::int64_t>(k->start) - off),
                                static_cast<std::uint64_t>(static_cast<std::int64_t>(k->end) - off)};
    if (n == 512) {
      if (g_engine) g_engine->record_kernels(batch, n);
      n = 0;
    }
  }
  if (n && g_engine) g_engine->record_kernels(batch, n);
  std::free(buffer);
}

void fill_tables() {
  for (const Watched& w : kWatched) {
    if (w.cbid >= kMaxCbid) continue;
    (w.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_runtime : g_driver)[w.cbid] = &w;
  }
}

}  // namespace

namespace detail {
CuptiCallback callback_for_testing() { return on_callback; }
void attach_engine_for_testing(Engine* engine) {
  fill_tables();
  g_engine = engine;
  g_generation.fetch_add(1);
}
}  // namespace detail

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - g_t0).count());
}

std::string CuptiAdapter::start(Engine* engine) {
  if (running_) return "";
  g_engine = engine;
  g_get_attributes = reinterpret_cast<PointerGetAttributesFn>(dlsym(RTLD_DEFAULT, "cuPointerGetAttributes"));
  if (!g_get_attributes) {
    if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD))
      g_get_attributes = reinterpret_cast<PointerGetAttributesFn>(dlsym(cuda, "cuPointerGetAttributes"));
  }
  warm_up_stack_capture();
  g_python = engine->options().python_frames && python_stack_init();
  fill_tables();
  CUpti_SubscriberHandle sub = nullptr;
  CUptiResult r = cuptiSubscribe(&sub, on_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    const char* why = nullptr;
    cuptiGetResultString(r, &why);
    g_engine = nullptr;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return "CUPTI is already in use by another tool (a profiler, Nsight Systems, compute-sanitizer)";
    return std::string("cuptiSubscribe failed: ") + (why ? why : "unknown CUPTI error");
  }
  subscriber_ = sub;
  g_generation.fetch_add(1);
  enabled_ = 0;
  const bool driver = engine->options().driver_api;
  for (const Watched& w : kWatched) {
    if (w.domain == CUPTI_CB_DOMAIN_DRIVER_API && !driver) continue;
    if (cuptiEnableCallback(1, sub, w.domain, w.cbid) == CUPTI_SUCCESS) ++enabled_;
  }
  if (engine->options().activity) {
    std::uint64_t cupti_now = 0;
    if (cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS)
      g_cupti_minus_host = static_cast<std::int64_t>(cupti_now) - static_cast<std::int64_t>(now_ns());
    // Process-wide in CUPTI's single-subscriber mode: a profiler started later
    // (torch.profiler) takes the buffers over; the report then shows fewer kernels.
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS &&
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS)
      activity_ = true;
  }
  running_ = true;
  return "";
}

void CuptiAdapter::flush() {
  if (activity_) cuptiActivityFlushAll(1);
}

void CuptiAdapter::stop() {
  if (!running_) return;
  if (activity_) {
    cuptiActivityFlushAll(1);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    activity_ = false;
  }
  cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber_));
  running_ = false;
  g_engine = nullptr;
}

}  // namespace nosync::san
