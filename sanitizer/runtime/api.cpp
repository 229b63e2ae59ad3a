// The C ABI behind nosync/sanitizer.h. Plain C structs and fixed buffers so
// the header works from any compiler/standard library the user links with.
#include <nosync/sanitizer.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine.h"
#include "python_stack.h"
#include "runtime.h"

#define NOSYNC_EXPORT extern "C" __attribute__((visibility("default")))

using nosync::san::Engine;
using nosync::san::runtime_engine;

namespace {
void copy(char* dst, std::size_t n, const std::string& src) {
  std::size_t k = std::min(n - 1, src.size());
  std::memcpy(dst, src.data(), k);
  dst[k] = '\0';
}
}  // namespace

NOSYNC_EXPORT int nosync_sanitizer_start(void) { return nosync::san::runtime_start("nosync_sanitizer_start") ? 1 : 0; }

NOSYNC_EXPORT int nosync_sanitizer_active(void) { return nosync::san::runtime_active() ? 1 : 0; }

NOSYNC_EXPORT int nosync_sanitizer_pause(void) { return nosync::san::runtime_pause() ? 1 : 0; }

NOSYNC_EXPORT int nosync_sanitizer_resume(void) { return nosync::san::runtime_resume() ? 1 : 0; }

NOSYNC_EXPORT void nosync_sanitizer_counters(nosync_counters* out) {
  if (!out) return;
  *out = nosync_counters{};
  Engine* e = runtime_engine();
  if (!e) return;
  nosync::san::Totals t = e->totals();
  *out = nosync_counters{t.intercepted, t.blocking, t.blocking_ns, t.below_threshold, t.queries};
}

NOSYNC_EXPORT size_t nosync_sanitizer_findings(nosync_finding* out, size_t max) {
  Engine* e = runtime_engine();
  if (!e) return 0;
  nosync::san::runtime_flush_activity();
  nosync::san::Report r = e->build_report();
  for (std::size_t i = 0; i < r.findings.size() && i < max && out; ++i) {
    const nosync::san::Finding& f = r.findings[i];
    nosync_finding& o = out[i];
    copy(o.rule, sizeof o.rule, std::string(nosync::rules::get(f.rule).id));
    copy(o.file, sizeof o.file, f.file);
    o.line = f.line;
    copy(o.function, sizeof o.function, f.function);
    copy(o.op, sizeof o.op, f.op);
    std::string apis;
    for (const auto& [api, n] : f.apis) apis += (apis.empty() ? "" : ",") + api + "=" + std::to_string(n);
    copy(o.apis, sizeof o.apis, apis);
    o.count = f.count;
    o.total_stall_ns = f.total_ns;
    o.max_stall_ns = f.max_ns;
  }
  return r.findings.size();
}

NOSYNC_EXPORT void nosync_sanitizer_reset(void) {
  if (Engine* e = runtime_engine()) e->reset();
}

NOSYNC_EXPORT int nosync_sanitizer_write_report(void) {
  nosync::san::runtime_flush_activity();
  Engine* e = runtime_engine();
  return e && e->finish() ? 1 : 0;
}

NOSYNC_EXPORT uint64_t nosync_sanitizer_region_begin(void) {
  Engine* e = runtime_engine();
  return e ? e->region_begin() : 0;
}

NOSYNC_EXPORT uint64_t nosync_sanitizer_region_end(uint64_t token, uint64_t* stall_ns, char* description,
                                                   size_t len) {
  Engine* e = runtime_engine();
  if (!e) {
    if (stall_ns) *stall_ns = 0;
    if (description && len) description[0] = '\0';
    return 0;
  }
  nosync::san::RegionResult r = e->region_end(token);
  if (stall_ns) *stall_ns = r.stall_ns;
  if (description && len) copy(description, len, r.description);
  return r.syncs;
}

// For tests (tests/sanitizer/runtime/python_stack_test.py): the Python stack
// the sanitizer would record for a blocking call made by the calling thread,
// gathered exactly as in the CUPTI callback, after sleeping `delay_us` (so a
// test can have another thread hold the GIL meanwhile); `capture_ns` gets the
// time the gathering itself took. Returns the length (0: no Python frames, or
// no Python in this process).
NOSYNC_EXPORT size_t nosync_sanitizer_debug_python_stack(char* buf, size_t len, unsigned delay_us,
                                                         uint64_t* capture_ns) {
  if (delay_us) ::usleep(delay_us);
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t n = 0;
  if (buf && len && nosync::san::python_stack_init()) n = nosync::san::capture_python_stack(buf, len - 1);
  if (buf && len) buf[n] = '\0';
  if (capture_ns)
    *capture_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  return n;
}
