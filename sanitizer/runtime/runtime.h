// Process-wide lifecycle of the sanitizer: read NOSYNC_OPTIONS once, build
// the engine, subscribe to CUPTI, and make sure a report is written however
// the process ends (exit, error-mode abort, SIGTERM) and exactly once per
// process across fork().
#pragma once

namespace nosync::san {

class Engine;

// Idempotent and thread-safe. `how` says who started it ("injection",
// "api"), for verbosity=1. Returns true when CUPTI callbacks are active.
bool runtime_start(const char* how);

// The engine, or nullptr before start / when options were invalid.
Engine* runtime_engine();

bool runtime_active();

// Unsubscribes from CUPTI / subscribes again, keeping all findings. Returns
// true when the sanitizer is active afterwards (resume) or was active (pause).
bool runtime_pause();
bool runtime_resume();

// Hands buffered kernel activity (activity=1) to the engine.
void runtime_flush_activity();

}  // namespace nosync::san
