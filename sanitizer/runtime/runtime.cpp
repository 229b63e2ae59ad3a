#include "runtime.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "cupti_adapter.h"
#include "engine.h"
#include "log_sink.h"
#include "process_symbolizer.h"
#include "python_stack.h"

namespace nosync::san {

namespace {

std::mutex g_start_mu;
bool g_started = false;
// Deliberately leaked: the engine must outlive every static destructor and
// atexit handler that might still make a CUDA call during teardown.
Engine* g_engine = nullptr;
CuptiAdapter* g_adapter = nullptr;

void say(const std::string& line) {
  std::string s = "==" + std::to_string(::getpid()) + "==nosync-sanitizer: " + line + "\n";
  (void)!::write(2, s.data(), s.size());
}

void at_exit() {
  if (!g_engine) return;
  if (g_adapter) g_adapter->flush();
  const bool found = g_engine->finish();
  const auto code = g_engine->options().exitcode;
  if (found && code != 0) ::_exit(static_cast<int>(code));
}

// Best effort: building the report is not async-signal-safe, but a process
// being terminated has nothing left to lose, and compiler-rt makes the same
// trade for its fatal-signal reports. Only installed when the program has no
// SIGTERM handler of its own (then its handler decides how to exit, and our
// atexit hook reports if it exits normally).
void on_sigterm(int sig) {
  if (g_adapter) g_adapter->flush();
  if (g_engine) g_engine->finish();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void before_fork() {
  if (g_engine) g_engine->before_fork();
}
void after_fork_parent() {
  if (g_engine) g_engine->after_fork_parent();
}
void after_fork_child() {
  python_stack_after_fork_child();
  if (g_engine) g_engine->after_fork_child();
}

}  // namespace

bool runtime_start(const char* how) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (g_started) return g_adapter && g_adapter->running();
  g_started = true;

  Options opts;
  if (const char* env = std::getenv("NOSYNC_OPTIONS")) {
    std::string err = parse_options(env, opts);
    if (!err.empty()) {
      // compiler-rt dies on bad flags: a typo must not silently run the job
      // without the checks the user asked for.
      say("ERROR: " + err);
      ::_exit(1);
    }
  }
  if (opts.help) {
    std::string help = options_help();
    (void)!::write(2, help.data(), help.size());
  }
  Suppressions sup;
  if (!opts.suppressions.empty()) {
    std::string err = sup.load_file(opts.suppressions);
    if (!err.empty()) {
      say("ERROR: " + err);
      ::_exit(1);
    }
  }
  g_engine = new Engine(opts, std::make_unique<ProcessSymbolizer>(), std::move(sup));
  g_adapter = new CuptiAdapter();
  std::string why = g_adapter->start(g_engine);
  if (!why.empty()) {
    say("WARNING: " + why + "; host syncs are not checked in this process, the program continues");
    return false;
  }
  std::atexit(at_exit);
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  if (opts.handle_sigterm) {
    struct sigaction old {};
    if (::sigaction(SIGTERM, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
      ::signal(SIGTERM, on_sigterm);
  }
  if (opts.verbosity >= 1)
    say(std::string("active (started by ") + how + "), " + std::to_string(g_adapter->enabled_callbacks()) +
        " CUPTI callbacks enabled, Python frames " + (python_stack_available() ? "on" : "off") + ", mode=" + std::string(to_string(opts.mode)) + ", reports to " +
        LogSink(opts.log_path).current_path());
  return true;
}

Engine* runtime_engine() { return g_engine; }

bool runtime_pause() {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (!g_adapter || !g_adapter->running()) return false;
  g_adapter->stop();
  return true;
}

bool runtime_resume() {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (!g_adapter || !g_engine) return false;
  if (g_adapter->running()) return true;
  std::string why = g_adapter->start(g_engine);
  if (!why.empty()) say("WARNING: cannot resume: " + why);
  return g_adapter->running();
}

void runtime_flush_activity() {
  if (g_adapter) g_adapter->flush();
}

bool runtime_active() {
  std::lock_guard<std::mutex> lock(g_start_mu);
  return g_adapter && g_adapter->running();
}

}  // namespace nosync::san
