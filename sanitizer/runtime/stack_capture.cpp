#include "stack_capture.h"

#include <unwind.h>

namespace nosync::san {

namespace {
struct Walk {
  std::uintptr_t* out;
  std::uint32_t max;
  std::uint32_t n;
};

// _Unwind_Backtrace rather than glibc backtrace(): same unwinder, no
// intermediate void* array, and we stop as soon as the buffer is full.
_Unwind_Reason_Code on_frame(struct _Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  std::uintptr_t pc = _Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  w->out[w->n++] = pc;
  return w->n < w->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}
}  // namespace

std::uint32_t capture_stack(std::uintptr_t* out, std::uint32_t max) {
  if (max == 0) return 0;
  Walk w{out, max, 0};
  _Unwind_Backtrace(on_frame, &w);
  return w.n;
}

void warm_up_stack_capture() {
  std::uintptr_t pcs[4];
  (void)capture_stack(pcs, 4);
}

}  // namespace nosync::san
