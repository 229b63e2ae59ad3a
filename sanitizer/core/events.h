// What the CUPTI adapter tells the core engine about one CUDA call, and the one
// place that knows which of those calls keep the host waiting for the GPU.
// Nothing here includes CUDA headers: the core is tested on machines without one.
#pragma once

#include <cstdint>
#include <string_view>

namespace nosync::san {

// The kind of CUDA call, independent of runtime/driver spelling and _ptsz/_v2
// suffixes (the adapter maps every callback id it enables onto one of these).
enum class ApiKind : std::uint8_t {
  DeviceSync,   // cudaDeviceSynchronize, cudaThreadSynchronize
  ContextSync,  // cuCtxSynchronize
  StreamSync,   // cudaStreamSynchronize, cuStreamSynchronize
  EventSync,    // cudaEventSynchronize, cuEventSynchronize
  Memcpy,       // synchronous cudaMemcpy* / cuMemcpy*
  MemcpyAsync,  // cudaMemcpy*Async / cuMemcpy*Async
  Memset,       // synchronous cudaMemset* / cuMemsetD*
  Free,         // cudaFree / cuMemFree / cudaFreeHost
  Malloc,       // cudaMalloc / cuMemAlloc
  StreamQuery,  // cudaStreamQuery: polled, never a stall by itself
  EventQuery,   // cudaEventQuery
};

// Where a pointer lives, from the driver's pointer attributes.
enum class MemKind : std::uint8_t { Unknown, Device, Pinned, Pageable, Managed };

enum class Direction : std::uint8_t { None, HostToDevice, DeviceToHost, DeviceToDevice, HostToHost };

std::string_view to_string(ApiKind k);
std::string_view to_string(MemKind k);
std::string_view to_string(Direction d);

// One intercepted call. `pcs` points at the captured return addresses
// (innermost first) and is only valid during Engine::record().
struct SyncEvent {
  ApiKind kind = ApiKind::StreamSync;
  const char* api = "";  // the API's own name (CUPTI's functionName: a static string)
  Direction direction = Direction::None;
  MemKind src = MemKind::Unknown;
  MemKind dst = MemKind::Unknown;
  std::uint64_t bytes = 0;
  std::uint64_t thread_id = 0;
  std::uint64_t start_ns = 0;     // monotonic clock, for the trace
  std::uint64_t duration_ns = 0;  // host time between API enter and exit
  // For a stream/event sync: direction of the last copy this thread issued;
  // torch's memcpy_and_sync pairs a copy with a stream sync, and the pair is
  // one device-to-host or host-to-device hazard.
  Direction last_copy = Direction::None;
  // A free of a null pointer: CUDA defines it as no operation (cuBLAS calls
  // cudaFree(0) once per handle to make sure a context exists).
  bool null_free = false;
  const std::uintptr_t* pcs = nullptr;
  std::uint32_t num_pcs = 0;
  // The calling thread's Python stack as CPython's faulthandler writes it
  // (python_frames.h), captured with the PCs; empty when the thread runs no
  // Python. Part of the site's identity: two .py lines calling the same op
  // share every native frame. Only valid during Engine::record().
  const char* python_stack = nullptr;
  std::uint32_t python_stack_len = 0;
};

// True when the call makes the host wait for queued GPU work (or for a staged
// copy). Follows the CUDA "API synchronization behavior" page:
//  - device/context/stream/event synchronize: always;
//  - synchronous memcpy: whenever a device is on one side (D2D and H2H do not
//    wait for the GPU's queue);
//  - async memcpy: only when the host side is pageable (staged, "might be
//    synchronous") — pinned/device copies are truly asynchronous;
//  - synchronous memset: only into pinned host or managed memory;
//  - cudaFree: always (it waits for the device), but not of a null pointer,
//    which does nothing; cudaMalloc: only when
//    `malloc_is_sync` (it is not documented to synchronize);
//  - stream/event queries: never (counted separately).
bool is_host_blocking(const SyncEvent& e, bool malloc_is_sync);

// Queries are counted so busy-wait loops show up, but they are not stalls.
inline bool is_query(ApiKind k) { return k == ApiKind::StreamQuery || k == ApiKind::EventQuery; }

}  // namespace nosync::san
