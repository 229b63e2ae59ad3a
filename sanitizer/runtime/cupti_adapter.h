// The CUPTI side: subscribes one callback, enables only the callback ids of
// CUDA calls that can block the host (runtime and driver), times each call
// from API enter to exit, works out copy direction and memory kinds, and
// hands the result to the core engine. Enabling whole domains would put a
// callback on every kernel launch (≈ +30 % on launch-bound loops, DESIGN.md);
// single ids cost nothing measurable on calls we do not watch.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

namespace nosync::san {

class Engine;

class CuptiAdapter {
 public:
  // Returns "" on success, else a one-line reason (CUPTI held by another
  // tool, no driver, ...). On failure nothing stays subscribed.
  std::string start(Engine* engine);
  void stop();
  // Delivers buffered kernel activity to the engine (before a report).
  void flush();
  bool running() const { return running_; }
  int enabled_callbacks() const { return enabled_; }

 private:
  bool running_ = false;
  bool activity_ = false;
  int enabled_ = 0;
  void* subscriber_ = nullptr;
};

// Monotonic nanoseconds since the sanitizer started (trace timestamps).
std::uint64_t now_ns();

namespace detail {
// The callback CUPTI would call, and its wiring without a subscription, so
// tests can drive it with fabricated callback data on a machine without a
// GPU (the idea of Kineto's CuptiCallbackApiMock).
using CuptiCallback = void(CUPTIAPI*)(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*);
CuptiCallback callback_for_testing();
void attach_engine_for_testing(Engine* engine);
}  // namespace detail

}  // namespace nosync::san
