// Naming a host sync that happens while a step is being captured.
//
// Inside capture a sync makes CUDA fail with "operation not permitted when
// stream is capturing", deep in LibTorch, with no hint of the user's line.
// Torch can check for syncs itself before it makes them (its sync debug
// mode); set to "warn", the check calls the thread's c10 warning handler at
// the sync site, with the user's frames still on the stack. The guard below
// installs a handler that walks that stack there, and throws a
// CaptureSyncError naming the user's file:line and the nosync rule: before
// the sync reaches CUDA, so the capture is abandoned cleanly, and the same
// with or without libnosync_sanitizer.so loaded.
#pragma once

#include <c10/util/Exception.h>
#include <nosync/step_graph.h>

#include <memory>

namespace nosync::kernels::detail {

// On the capturing thread, for the duration of a capture. Restores torch's
// sync debug mode and the previous warning handler when it goes.
class CaptureSyncGuard {
 public:
  CaptureSyncGuard();
  ~CaptureSyncGuard();
  CaptureSyncGuard(const CaptureSyncGuard&) = delete;
  CaptureSyncGuard& operator=(const CaptureSyncGuard&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A CaptureSyncError for an error CUDA or torch raised inside capture without
// passing the handler (a sync on another thread, e.g. in backward; a raw CUDA
// call): no user line, the rule from the op frames named in the c10
// backtrace when there are any. `what` is the original error's message.
CaptureSyncError capture_error_from(const std::string& what);

// The rule id and op display name for a demangled frame function name list,
// innermost first (the op table's frame patterns, lowest priority wins).
struct RuleAndOp {
  std::string rule, op;
};
RuleAndOp rule_from_frames(const std::vector<std::string>& functions);

}  // namespace nosync::kernels::detail
