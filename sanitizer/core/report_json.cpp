// JSON findings. Field names follow nosync-lint's JSON (file, line, column,
// rule, severity, message) so static and runtime findings join on
// (file, line, rule); the runtime adds count, total_stall_us, max_stall_us,
// op, apis and frames.
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "json_writer.h"
#include "report.h"

namespace nosync::san {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {
std::string us(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ns / 1e3);
  return buf;
}
}  // namespace

std::string write_json(const Report& r) {
  std::ostringstream out;
  const Totals& t = r.totals;
  out << "{\n  \"tool\": \"nosync-sanitizer\",\n  \"pid\": " << r.pid << ",\n  \"mode\": "
      << json_string(to_string(r.options.mode)) << ",\n  \"findings\": [";
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    const auto& rule = nosync::rules::get(f.rule);
    out << (i ? "," : "") << "\n    {\"file\": " << json_string(display_path(r.options, f.file))
        << ", \"line\": " << f.line << ", \"column\": " << f.column << ", \"rule\": " << json_string(rule.id)
        << ", \"severity\": " << json_string(nosync::rules::to_string(rule.severity))
        << ", \"message\": " << json_string(rule.summary) << ",\n     \"function\": " << json_string(f.function)
        << ", \"op\": " << json_string(f.op) << ", \"count\": " << f.count
        << ", \"total_stall_us\": " << us(f.total_ns) << ", \"max_stall_us\": " << us(f.max_ns)
        << ", \"bytes\": " << f.bytes << ",\n     \"apis\": {";
    std::size_t k = 0;
    for (const auto& [api, n] : f.apis) out << (k++ ? ", " : "") << json_string(api) << ": " << n;
    out << "},\n     \"frames\": [";
    for (std::size_t j = 0; j < f.frames.size(); ++j) {
      const Frame& fr = f.frames[j];
      char pc[32];
      std::snprintf(pc, sizeof pc, "0x%" PRIxPTR, fr.pc);
      out << (j ? ", " : "") << "\n       {\"pc\": \"" << pc << "\", \"function\": " << json_string(fr.function)
          << ", \"file\": " << json_string(display_path(r.options, fr.file)) << ", \"line\": " << fr.line
          << ", \"module\": " << json_string(fr.module) << ", \"user\": " << (j == f.user_frame ? "true" : "false")
          << "}";
    }
    out << "]}";
  }
  out << "\n  ],\n  \"totals\": {\"blocking_calls\": " << t.blocking << ", \"blocking_us\": " << us(t.blocking_ns)
      << ", \"below_threshold\": " << t.below_threshold << ", \"suppressed\": " << t.suppressed
      << ", \"queries\": " << t.queries << ", \"overflowed\": " << t.overflowed << "}";
  if (r.has_gpu)
    out << ",\n  \"gpu\": {\"kernels\": " << r.gpu.kernels << ", \"short_kernels\": " << r.gpu.short_kernels
        << ", \"busy_us\": " << us(r.gpu.busy_ns) << ", \"span_us\": " << us(r.gpu.span_ns)
        << ", \"max_gap_us\": " << us(r.gpu.max_gap_ns) << "}";
  out << "\n}\n";
  return out.str();
}

}  // namespace nosync::san
