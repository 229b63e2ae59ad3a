// nosync sanitizer, in-code API. Link nosync::sanitizer (libnosync_sanitizer.so).
//
//   nosync::sanitizer::start();                 // or run under CUDA_INJECTION64_PATH / nosync-run
//   warm_up();                                   // allocator, cuBLAS handles, ...
//   {
//     nosync::sanitizer::SyncFreeScope step("train step");
//     train_step();                              // any host sync here -> HostSyncError at scope end
//   }
//   EXPECT_NO_HOST_SYNC(train_step());           // in a GoogleTest
//
// Syncs are counted process-wide while a scope is open (backward runs on
// autograd threads), so keep one scope open at a time. The CUPTI callback
// cannot throw through the CUDA driver: a scope reports at its end.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef struct nosync_counters {
  uint64_t intercepted;      // watched CUDA calls seen
  uint64_t blocking;         // of which blocked the host
  uint64_t blocking_ns;      // host time they took
  uint64_t below_threshold;  // blocking but under min_stall_us
  uint64_t queries;          // stream/event queries (not stalls)
} nosync_counters;

typedef struct nosync_finding {
  char rule[48];
  char file[512];
  int line;
  char function[256];
  char op[96];
  char apis[256];  // "cudaMemcpyAsync=3,cudaStreamSynchronize=3"
  uint64_t count;
  uint64_t total_stall_ns;
  uint64_t max_stall_ns;
} nosync_finding;

// Starts the sanitizer in this process if it is not running (options from
// NOSYNC_OPTIONS). Returns 1 when CUPTI callbacks are active, 0 otherwise
// (CUPTI held by a profiler, no driver): a warning was printed.
int nosync_sanitizer_start(void);
int nosync_sanitizer_active(void);
// Stops watching CUDA calls (CUPTI unsubscribed; findings kept) / starts
// again, e.g. around an evaluation phase. pause returns 1 if it was active,
// resume 1 if it is active afterwards.
int nosync_sanitizer_pause(void);
int nosync_sanitizer_resume(void);
void nosync_sanitizer_counters(nosync_counters* out);
// Copies up to `max` findings (sorted by total stall) and returns how many exist.
size_t nosync_sanitizer_findings(nosync_finding* out, size_t max);
// Forgets all sites and counters (e.g. after warm-up).
void nosync_sanitizer_reset(void);
// Writes the exit report now (once per process), as at exit.
int nosync_sanitizer_write_report(void);
uint64_t nosync_sanitizer_region_begin(void);
// Returns the host syncs since `token`; fills `stall_ns` and a description
// (one line per site) when non-null.
uint64_t nosync_sanitizer_region_end(uint64_t token, uint64_t* stall_ns, char* description, size_t len);

}  // extern "C"

#ifdef __cplusplus
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace nosync::sanitizer {

inline bool start() { return nosync_sanitizer_start() != 0; }
inline bool active() { return nosync_sanitizer_active() != 0; }
inline bool pause() { return nosync_sanitizer_pause() != 0; }
inline bool resume() { return nosync_sanitizer_resume() != 0; }

inline nosync_counters counters() {
  nosync_counters c{};
  nosync_sanitizer_counters(&c);
  return c;
}

struct Finding {
  std::string rule, file, function, op, apis;
  int line = 0;
  std::uint64_t count = 0, total_stall_ns = 0, max_stall_ns = 0;
};

inline std::vector<Finding> findings() {
  std::vector<nosync_finding> raw(nosync_sanitizer_findings(nullptr, 0));
  raw.resize(nosync_sanitizer_findings(raw.data(), raw.size()));
  std::vector<Finding> out;
  for (const nosync_finding& f : raw)
    out.push_back({f.rule, f.file, f.function, f.op, f.apis, f.line, f.count, f.total_stall_ns, f.max_stall_ns});
  return out;
}

inline void reset() { nosync_sanitizer_reset(); }

class HostSyncError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Measures host syncs between construction and finish().
class SyncProbe {
 public:
  SyncProbe() : active_(start()), token_(nosync_sanitizer_region_begin()) {}
  SyncProbe(const SyncProbe&) = delete;
  SyncProbe& operator=(const SyncProbe&) = delete;
  ~SyncProbe() {
    if (!done_) finish();
  }

  struct Result {
    bool ok;
    std::uint64_t syncs;
    std::string message;
  };

  Result finish() {
    done_ = true;
    char text[4096] = {0};
    std::uint64_t ns = 0;
    std::uint64_t n = nosync_sanitizer_region_end(token_, &ns, text, sizeof text);
    if (!active_)
      return {false, 0,
              "the nosync sanitizer is not active in this process (CUPTI unavailable or held by a profiler), so "
              "the absence of host syncs cannot be checked"};
    if (n == 0) return {true, 0, ""};
    return {false, n,
            std::to_string(n) + " host sync" + (n == 1 ? "" : "s") + " (" + std::to_string(ns / 1000) +
                " us host stalled):\n" + text};
  }

 private:
  bool active_;
  std::uint64_t token_;
  bool done_ = false;
};

// A region that must not sync the host. At scope exit, if it did, throws
// HostSyncError naming each site (unless an exception is already unwinding).
class SyncFreeScope {
 public:
  explicit SyncFreeScope(std::string name = "sync-free scope") : name_(std::move(name)) {}
  ~SyncFreeScope() noexcept(false) {
    SyncProbe::Result r = probe_.finish();
    if (!r.ok && std::uncaught_exceptions() == 0) throw HostSyncError(name_ + ": " + r.message);
  }

 private:
  std::string name_;
  SyncProbe probe_;
};

}  // namespace nosync::sanitizer

// GoogleTest assertion: `statement` performs no host-blocking CUDA call.
// Fails (it does not skip) when the sanitizer cannot observe the process.
#define EXPECT_NO_HOST_SYNC(statement)                                                          \
  do {                                                                                          \
    ::nosync::sanitizer::SyncProbe nosync_probe_;                                               \
    { statement; }                                                                              \
    const ::nosync::sanitizer::SyncProbe::Result nosync_result_ = nosync_probe_.finish();       \
    EXPECT_TRUE(nosync_result_.ok) << "`" #statement "`: " << nosync_result_.message;           \
  } while (0)

#endif  // __cplusplus
