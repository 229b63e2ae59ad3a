// The report model shared by the three writers (text, JSON, trace): findings
// grouped per (rule, user source line), already sorted by total stall.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nosync/rules.h>

#include "frames.h"
#include "gpu_activity.h"
#include "options.h"

namespace nosync::san {

struct Finding {
  nosync::rules::RuleId rule{};
  std::string file;      // user frame's source file ("" when unknown)
  int line = 0;
  int column = 0;        // DWARF line tables give no column here; kept for the linter's schema
  std::string function;  // user frame's function
  std::string op;        // LibTorch op that synced, "" if none seen
  std::uint64_t count = 0, total_ns = 0, max_ns = 0, bytes = 0;
  std::map<std::string, std::uint64_t> apis;  // blocking API -> calls
  std::vector<Frame> frames;                  // of the costliest stack, observer frames removed
  std::size_t user_frame = 0;                 // index into frames (== size() when none)
  std::vector<std::uint32_t> site_ids;        // sites folded into this finding (for the trace)
};

struct Totals {
  std::uint64_t intercepted = 0;      // every callback the adapter forwarded
  std::uint64_t blocking = 0;         // host-blocking calls
  std::uint64_t blocking_ns = 0;      // host time they took
  std::uint64_t below_threshold = 0;  // blocking but under min_stall_us
  std::uint64_t suppressed = 0;       // blocking calls matched by a suppression
  std::uint64_t queries = 0;          // stream/event queries (not stalls)
  std::uint64_t overflowed = 0;       // calls folded into the overflow site
};

struct TraceSlice {
  std::uint64_t start_ns = 0, duration_ns = 0, thread_id = 0;
  std::uint32_t site_id = 0;
  bool kernel = false;  // a GPU kernel (activity=1), drawn on its own "GPU" track
};

struct SuppressionHit {
  std::string pattern;
  std::uint64_t hits = 0;
};

struct Report {
  int pid = 0;
  Options options;
  std::vector<Finding> findings;  // sorted by total_ns, largest first
  Totals totals;
  std::vector<SuppressionHit> suppressions;
  bool has_gpu = false;                 // activity=1 and kernels were seen
  GpuSummary gpu;
  std::vector<TraceSlice> trace;        // only with format=trace
  std::uint64_t trace_dropped = 0;
};

// Writers: pure functions of the report, so tests compare their output.
std::string write_text(const Report& r);
std::string write_json(const Report& r);
std::string write_trace(const Report& r);
std::string write_report(const Report& r);  // by r.options.format

// One finding as the full sanitizer block (header, frames, SUMMARY), for
// error mode and for the exit report.
std::string write_text_finding(const Report& r, const Finding& f, const char* kind);

// "12.3 us" / "4.56 ms" / "1.2 s"
std::string format_duration(std::uint64_t ns);

// `path` minus options.strip_path_prefix.
std::string display_path(const Options& o, const std::string& path);

}  // namespace nosync::san
