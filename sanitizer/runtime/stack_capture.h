// Return addresses of the calling thread, captured only for calls that
// blocked (a few microseconds each; symbolization happens later, once per
// unique stack).
#pragma once

#include <cstdint>

namespace nosync::san {

// Fills up to `max` return addresses, innermost first; returns how many.
std::uint32_t capture_stack(std::uintptr_t* out, std::uint32_t max);

// The first unwind loads libgcc_s's unwinder tables (and may malloc); do it
// at start-up, not inside the first CUDA callback.
void warm_up_stack_capture();

}  // namespace nosync::san
