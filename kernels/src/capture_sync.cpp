#include "capture_sync.h"

#include <c10/cuda/CUDAFunctions.h>
#include <dlfcn.h>
#include <nosync/ops.h>
#include <nosync/rules.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

// Shared with the sanitizer as source, not as a library: kernels must load
// without libnosync_sanitizer.so (see kernels/CMakeLists.txt).
#include "attribution.h"
#include "process_symbolizer.h"
#include "stack_capture.h"

namespace nosync::kernels::detail {
namespace {

constexpr std::string_view kSyncWarning = "called a synchronizing CUDA operation";

// The part of a demangled name before its parameter list: patterns must not
// match parameter types.
std::string_view name_part(std::string_view fn) {
  const std::size_t paren = fn.find('(');
  return paren == std::string_view::npos ? fn : fn.substr(0, paren);
}

std::string module_of(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) && info.dli_fname ? info.dli_fname : "";
}

std::string message(const std::string& where, const RuleAndOp& r, const std::string& tail) {
  std::ostringstream m;
  m << "nosync: host sync during CUDA graph capture";
  if (!where.empty()) m << " at " << where;
  if (!r.op.empty()) m << ": " << r.op;
  if (!r.rule.empty()) m << " [" << r.rule << "]";
  if (const auto* rule = nosync::rules::find(r.rule)) {
    m << "\n  " << rule->summary << "\n  fix: " << rule->fix;
  }
  m << "\n  A step captured by nosync::kernels::StepGraph must not wait for the GPU: keep the value on the "
       "device and read it after the step (the graph was not kept)."
    << tail;
  return m.str();
}

// The user's site and the rule from raw return addresses, innermost first.
// Frames of this library (the handler, StepGraph, the nosync ops) are never
// the user's: they are dropped before the first user frame is looked for.
CaptureSyncError error_from_pcs(const std::uintptr_t* pcs, std::size_t n, const std::string& tail) {
  // Created once and kept: libbacktrace reads the binaries' DWARF on first use.
  static auto* symbolizer = new nosync::san::ProcessSymbolizer();
  std::vector<nosync::san::Frame> frames = symbolizer->symbolize(pcs, n);
  const std::string self = module_of(reinterpret_cast<const void*>(&error_from_pcs));
  frames.erase(std::remove_if(frames.begin(), frames.end(),
                              [&](const nosync::san::Frame& f) { return f.module == self; }),
               frames.end());
  const std::size_t user = nosync::san::first_user_frame(frames);
  std::vector<std::string> functions;
  for (std::size_t i = 0; i < user && i < frames.size(); ++i) functions.push_back(frames[i].function);
  const RuleAndOp r = rule_from_frames(functions);
  std::string file, where;
  int line = 0;
  if (user < frames.size()) {
    file = frames[user].file;
    line = frames[user].line;
    if (!file.empty()) where = file + ":" + std::to_string(line);
    else  // no debug info: the function at least
      where = frames[user].function.empty() ? nosync::san::basename_of(frames[user].module) : frames[user].function;
  }
  return CaptureSyncError(message(where, r, tail), file, line, r.rule, r.op);
}

// Called at the sync site, on the capturing thread: the user's frames are
// still on the stack.
CaptureSyncError error_here() {
  std::uintptr_t pcs[128];
  const std::uint32_t n = nosync::san::capture_stack(pcs, 128);
  return error_from_pcs(pcs, n, "");
}

// Turns torch's sync warning into a CaptureSyncError thrown from the sync
// site; other warnings go where they went before.
class SyncToError : public c10::WarningHandler {
 public:
  explicit SyncToError(c10::WarningHandler* previous) : previous_(previous) {}
  void process(const c10::Warning& warning) override {
    if (warning.msg().find(kSyncWarning) != std::string::npos) throw error_here();
    if (previous_) previous_->process(warning);
  }

 private:
  c10::WarningHandler* previous_;
};

}  // namespace

RuleAndOp rule_from_frames(const std::vector<std::string>& functions) {
  using nosync::rules::OpEntry;
  using nosync::rules::OpForm;
  using nosync::rules::RuleId;
  const OpEntry* best = nullptr;
  // Inner to outer; on a tie the outer frame wins: it is the call the user
  // wrote (at::Tensor::item over _local_scalar_dense).
  for (const std::string& f : functions) {
    const std::string_view fn = name_part(f);
    if (fn.empty()) continue;
    for (const OpEntry& op : nosync::rules::kOps) {
      if (op.form == OpForm::Module || op.at_runtime == RuleId::CollectiveWait) continue;
      const bool hit = nosync::rules::any_word(
          op.frames, [fn](std::string_view p) { return fn.find(p) != std::string_view::npos; });
      if (!hit) continue;
      if (!best || op.priority <= best->priority) best = &op;
      break;  // the first op that matches a frame is its meaning
    }
  }
  if (!best || best->display.empty() || best->form == OpForm::NeverSyncs) return {};
  // A copy's direction is not on the stack; its row's runtime rule stands.
  return {std::string(nosync::rules::get(best->at_runtime).id), std::string(best->display)};
}

CaptureSyncError capture_error_from(const std::string& what) {
  // c10's backtrace, taken where the error was thrown: lines
  // "frame #3: at::native::nonzero_cuda(...) + 0x1d (0x7f12... in /x/libtorch_cuda.so)".
  std::vector<std::uintptr_t> pcs;
  std::vector<std::string> functions;
  std::istringstream in(what);
  for (std::string l; std::getline(in, l);) {
    const std::size_t at = l.find("frame #");
    const std::size_t colon = at == std::string::npos ? at : l.find(": ", at);
    if (colon == std::string::npos) continue;
    functions.push_back(l.substr(colon + 2));
    const std::size_t addr = l.rfind("(0x");
    if (addr != std::string::npos && l.find(" in ", addr) != std::string::npos)
      pcs.push_back(static_cast<std::uintptr_t>(std::strtoull(l.c_str() + addr + 1, nullptr, 16)));
  }
  const std::string first = what.substr(0, what.find('\n'));
  const std::string tail = "\n  CUDA/torch said: " + first;
  // With addresses, symbolize them as at a sync site (these are return
  // addresses, as capture_stack's are); else the op names alone.
  if (!pcs.empty()) {
    CaptureSyncError e = error_from_pcs(pcs.data(), pcs.size(), tail);
    if (!e.rule().empty() || e.line() > 0) return e;
  }
  const RuleAndOp r = rule_from_frames(functions);
  return CaptureSyncError(message("", r, tail), "", 0, r.rule, r.op);
}

struct CaptureSyncGuard::Impl {
  c10::cuda::SyncDebugMode mode = c10::cuda::warning_state().get_sync_debug_mode();
  c10::WarningHandler* previous = c10::WarningUtils::get_warning_handler();
  SyncToError handler{previous};
};

CaptureSyncGuard::CaptureSyncGuard() : impl_(std::make_unique<Impl>()) {
  nosync::san::warm_up_stack_capture();
  // "warn", not "error": an error would be a c10::Error thrown without our
  // handler seeing the stack.
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
  c10::WarningUtils::set_warning_handler(&impl_->handler);
}

CaptureSyncGuard::~CaptureSyncGuard() {
  c10::WarningUtils::set_warning_handler(impl_->previous);
  c10::cuda::warning_state().set_sync_debug_mode(impl_->mode);
}

}  // namespace nosync::kernels::detail
