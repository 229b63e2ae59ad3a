// The core engine: events in, findings out. Knows nothing of CUPTI; the
// runtime feeds it intercepted calls, tests feed it synthetic ones.
//
//  record()        per intercepted call (any thread): counts, aggregates per
//                  site, and in warn/error mode reports new sites at once.
//  build_report()  resolves every site (symbolize once, classify, attribute,
//                  apply suppressions) and groups them per user source line.
//  finish()        writes the exit report once per process.
//  region_*()      the in-code "this region is sync-free" API.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "events.h"
#include "frames.h"
#include "gpu_activity.h"
#include "log_sink.h"
#include "options.h"
#include "report.h"
#include "site_table.h"
#include "suppressions.h"

namespace nosync::san {

struct RegionResult {
  std::uint64_t syncs = 0;     // host-blocking calls inside the region, suppressed ones excluded
  std::uint64_t stall_ns = 0;  // host time they took
  std::string description;     // one line per site: rule, location, op, API
};

class Engine {
 public:
  Engine(Options options, std::unique_ptr<Symbolizer> symbolizer, Suppressions suppressions = {});

  const Options& options() const { return options_; }

  // Cheap test for the adapter: capture a stack only when this returns true.
  bool wants_stack(const SyncEvent& e) const;

  void record(const SyncEvent& e);
  // Kernel activity (activity=1), from CUPTI's buffer-completed callback,
  // already in the host clock of SyncEvent::start_ns so the trace lines up.
  void record_kernels(const KernelInterval* k, std::size_t n);

  Report build_report();
  // Writes the exit report (once per process; a forked child writes its own
  // only if it found something). Returns true if a finding above note
  // severity was reported (what exitcode= acts on; notes never fail a run).
  bool finish();

  Totals totals() const;

  std::uint64_t region_begin();
  RegionResult region_end(std::uint64_t token);

  // Where live lines and reports go (default: the LogSink of log_path).
  void set_writer(std::function<void(const std::string&)> w) { writer_ = std::move(w); }
  // Where live text lines go (default: the report's destination for
  // format=text, stderr otherwise).
  void set_live_writer(std::function<void(const std::string&)> w) { live_writer_ = std::move(w); }
  // Called after the error-mode report (default: std::abort).
  void set_fatal_handler(std::function<void()> f) { fatal_ = std::move(f); }
  // The pid printed in reports (tests pin it).
  void set_pid_source(std::function<int()> f) { pid_ = std::move(f); }

  // fork() handling: hold all locks across fork; the child starts empty.
  void before_fork();
  void after_fork_parent();
  void after_fork_child();

  // Drops every site and counter (tests; the in-code API's reset()).
  void reset();

 private:
  void resolve(Site* s);
  std::string describe_site(Site* s);
  std::string where_without_user_frame(const Site* s) const;
  void write(const std::string& text);
  void write_live(const std::string& text);
  Report build_report_locked();

  Options options_;
  std::unique_ptr<Symbolizer> symbolizer_;
  Suppressions suppressions_;
  LogSink sink_;
  SiteTable sites_;
  GpuActivity gpu_;

  std::atomic<std::uint64_t> intercepted_{0}, blocking_{0}, blocking_ns_{0}, below_threshold_{0}, queries_{0};

  std::mutex resolve_mu_;  // symbolization and classification of sites
  std::mutex report_mu_;   // one report at a time; finish() once
  int finished_pid_ = 0;
  bool forked_child_ = false;

  std::mutex trace_mu_;
  std::vector<TraceSlice> trace_;
  std::uint64_t trace_dropped_ = 0;

  std::atomic<int> region_depth_{0};
  std::atomic<std::uint64_t> region_seq_{0};
  std::mutex region_mu_;
  struct RegionEntry {
    std::uint64_t seq;
    Site* site;
    std::uint64_t ns;
  };
  std::vector<RegionEntry> region_log_;  // bounded: kRegionLog entries
  static constexpr std::size_t kRegionLog = 64;

  std::function<void(const std::string&)> writer_;
  std::function<void(const std::string&)> live_writer_;
  std::function<void()> fatal_;
  std::function<int()> pid_;
};

}  // namespace nosync::san
