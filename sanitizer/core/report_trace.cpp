// Chrome / Perfetto trace ("Trace Event Format", JSON object form): each
// host-blocking call is a complete ("X") slice on its thread, named by rule,
// with the source line and API in args. Open in ui.perfetto.dev or
// chrome://tracing.
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "json_writer.h"
#include "report.h"

namespace nosync::san {

std::string write_trace(const Report& r) {
  std::unordered_map<std::uint32_t, const Finding*> by_site;
  for (const Finding& f : r.findings)
    for (std::uint32_t id : f.site_ids) by_site[id] = &f;
  std::ostringstream out;
  out << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"tool\": \"nosync-sanitizer\", \"dropped_slices\": "
      << r.trace_dropped << "},\n \"traceEvents\": [";
  out << "\n  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << r.pid
      << ", \"args\": {\"name\": \"nosync-sanitizer host syncs\"}}";
  // Kernels (activity=1) go on a track of their own, tid 0, named "GPU".
  bool kernels = false;
  for (const TraceSlice& s : r.trace) {
    if (!s.kernel) continue;
    if (!kernels) {
      out << ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << r.pid
          << ", \"tid\": 0, \"args\": {\"name\": \"GPU (kernels)\"}}";
      kernels = true;
    }
    char ts[64];
    std::snprintf(ts, sizeof ts, "\"ts\": %.3f, \"dur\": %.3f", s.start_ns / 1e3, s.duration_ns / 1e3);
    out << ",\n  {\"name\": \"kernel\", \"cat\": \"gpu\", \"ph\": \"X\", " << ts << ", \"pid\": " << r.pid
        << ", \"tid\": 0}";
  }
  for (const TraceSlice& s : r.trace) {
    if (s.kernel) continue;
    auto it = by_site.find(s.site_id);
    if (it == by_site.end()) continue;  // suppressed or below threshold
    const Finding& f = *it->second;
    char ts[64];
    std::snprintf(ts, sizeof ts, "\"ts\": %.3f, \"dur\": %.3f", s.start_ns / 1e3, s.duration_ns / 1e3);
    std::string where = f.file.empty() ? f.function : display_path(r.options, f.file) + ":" + std::to_string(f.line);
    out << ",\n  {\"name\": " << json_string(nosync::rules::get(f.rule).id)
        << ", \"cat\": \"host-sync\", \"ph\": \"X\", " << ts << ", \"pid\": " << r.pid << ", \"tid\": " << s.thread_id
        << ", \"args\": {\"site\": " << json_string(where) << ", \"op\": " << json_string(f.op) << "}}";
  }
  out << "\n ]}\n";
  return out.str();
}

}  // namespace nosync::san
