#include "python_stack.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace nosync::san {

namespace {

// PyThreadState* is opaque here.
using IsInitializedFn = int (*)();
using IsFinalizingFn = int (*)();
using ThisThreadStateFn = void* (*)();
using DumpTracebackFn = void (*)(int fd, void* tstate);

IsInitializedFn g_is_initialized = nullptr;
IsFinalizingFn g_is_finalizing = nullptr;
ThisThreadStateFn g_this_thread_state = nullptr;
DumpTracebackFn g_dump = nullptr;
std::atomic<bool> g_ready{false};

// Bumped in a forked child: a thread's memfd from before the fork shares its
// file offset with the parent's, so the child opens its own.
std::atomic<unsigned> g_fork_generation{0};

struct ThreadDump {
  int fd = -1;
  unsigned generation = 0;
  ~ThreadDump() {
    if (fd >= 0) ::close(fd);
  }
};
thread_local ThreadDump t_dump;

int thread_fd() {
  const unsigned gen = g_fork_generation.load(std::memory_order_relaxed);
  if (t_dump.fd >= 0 && t_dump.generation != gen) {
    ::close(t_dump.fd);
    t_dump.fd = -1;
  }
  if (t_dump.fd < 0) {
    t_dump.fd = ::memfd_create("nosync-python-stack", MFD_CLOEXEC);
    t_dump.generation = gen;
  }
  return t_dump.fd;
}

template <class F>
F lookup(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
}

}  // namespace

bool python_stack_init() {
  if (g_ready.load()) return true;
  g_is_initialized = lookup<IsInitializedFn>("Py_IsInitialized");
  // 3.13 made it public as Py_IsFinalizing; earlier versions export _Py_IsFinalizing.
  g_is_finalizing = lookup<IsFinalizingFn>("Py_IsFinalizing");
  if (!g_is_finalizing) g_is_finalizing = lookup<IsFinalizingFn>("_Py_IsFinalizing");
  g_this_thread_state = lookup<ThisThreadStateFn>("PyGILState_GetThisThreadState");
  g_dump = lookup<DumpTracebackFn>("_Py_DumpTraceback");
  const bool ok = g_is_initialized && g_this_thread_state && g_dump;
  g_ready.store(ok);
  return ok;
}

bool python_stack_available() { return g_ready.load(std::memory_order_relaxed); }

std::size_t capture_python_stack(char* buf, std::size_t cap) {
  if (!g_ready.load(std::memory_order_relaxed) || cap == 0) return 0;
  // During and after Py_Finalize thread states are being freed: no frames.
  if (!g_is_initialized() || (g_is_finalizing && g_is_finalizing())) return 0;
  // This thread's state from the interpreter's thread-specific key, read
  // without the GIL (PyGILState_Ensure reads it the same way before it
  // waits); null on threads that never ran Python.
  void* tstate = g_this_thread_state();
  if (!tstate) return 0;
  const int fd = thread_fd();
  if (fd < 0) return 0;
  if (::lseek(fd, 0, SEEK_SET) != 0) return 0;
  g_dump(fd, tstate);
  const off_t end = ::lseek(fd, 0, SEEK_CUR);
  if (end <= 0) return 0;
  std::size_t n = static_cast<std::size_t>(end) < cap ? static_cast<std::size_t>(end) : cap;
  const ssize_t got = ::pread(fd, buf, n, 0);
  if (got <= 0) return 0;
  n = static_cast<std::size_t>(got);
  // Only the frame lines matter ("Stack (most recent call first):" and
  // "<no Python frame>" are not frames).
  const char* first = static_cast<const char*>(::memmem(buf, n, "File \"", 6));
  if (!first) return 0;
  const std::size_t skip = static_cast<std::size_t>(first - buf);
  std::memmove(buf, first, n - skip);
  return n - skip;
}

void python_stack_after_fork_child() { g_fork_generation.fetch_add(1); }

}  // namespace nosync::san
