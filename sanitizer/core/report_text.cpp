// Text reports in the sanitizer tradition: "==PID==WARNING: tool: what",
// numbered frames "#N 0xPC in function file:line", one SUMMARY line.
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "attribution.h"
#include "report.h"

namespace nosync::san {

std::string format_duration(std::uint64_t ns) {
  char buf[32];
  if (ns < 1000000) std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (ns < 1000000000) std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

std::string display_path(const Options& o, const std::string& path) {
  const std::string& pre = o.strip_path_prefix;
  if (!pre.empty() && path.compare(0, pre.size(), pre) == 0) return path.substr(pre.size());
  return path;
}

namespace {

std::string location(const Options& o, const Finding& f) {
  if (f.file.empty()) return f.function.empty() ? "<unknown location>" : f.function;
  return display_path(o, f.file) + ":" + std::to_string(f.line);
}

void write_frames(std::ostream& out, const Options& o, const Finding& f) {
  for (std::size_t i = 0; i < f.frames.size(); ++i) {
    const Frame& fr = f.frames[i];
    char pc[32];
    std::snprintf(pc, sizeof pc, "0x%" PRIxPTR, fr.pc);
    // Python frames have no pc: "#7 in step train.py:42 (python)".
    const bool py = fr.module == "<python>";
    out << "    #" << i << " " << (py ? "" : std::string(pc) + " ") << "in "
        << (fr.function.empty() ? "<unknown>" : fr.function);
    if (py) {
      out << " " << display_path(o, fr.file) << ":" << fr.line << " (python)";
      if (i == f.user_frame) out << "   <== user frame";
      out << "\n";
      continue;
    }
    if (!fr.file.empty()) out << " " << display_path(o, fr.file) << ":" << fr.line;
    else if (!fr.module.empty()) {
      char off[32];
      std::snprintf(off, sizeof off, "+0x%" PRIxPTR, fr.module_offset);
      out << " (" << basename_of(fr.module) << off << ")";
    }
    if (i == f.user_frame) out << "   <== user frame";
    out << "\n";
  }
}

std::string apis_text(const Finding& f) {
  std::string s;
  for (const auto& [api, n] : f.apis) s += (s.empty() ? "" : ", ") + api + " x" + std::to_string(n);
  return s;
}

}  // namespace

namespace {
std::string write_launch_bound(const Report& r, const Finding& f, const char* kind) {
  const auto& rule = nosync::rules::get(f.rule);
  std::ostringstream out;
  char share[64];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * r.gpu.busy_share());
  out << "==" << r.pid << "==" << kind << ": nosync-sanitizer: GPU mostly idle [" << rule.id << "]: "
      << f.count << " kernels (" << r.gpu.short_kernels << " under 5 us), GPU busy " << share << " of "
      << format_duration(r.gpu.span_ns) << "\n";
  out << "  " << rule.summary << "\n";
  out << "  idle " << format_duration(f.total_ns) << " in total, longest gap " << format_duration(f.max_ns) << "\n";
  out << "  fix: " << rule.fix << "\n";
  out << "SUMMARY: nosync-sanitizer: " << rule.id << " (GPU timeline)\n";
  return out.str();
}
}  // namespace

std::string write_text_finding(const Report& r, const Finding& f, const char* kind) {
  if (f.rule == nosync::rules::RuleId::LaunchBound) return write_launch_bound(r, f, kind);
  const auto& rule = nosync::rules::get(f.rule);
  std::ostringstream out;
  out << "==" << r.pid << "==" << kind << ": nosync-sanitizer: host sync [" << rule.id << "] in "
      << (f.op.empty() ? std::string("a CUDA call") : f.op) << " at " << location(r.options, f) << "\n";
  out << "  " << rule.summary << "\n";
  out << "  " << f.count << " blocking call" << (f.count == 1 ? "" : "s") << " (" << apis_text(f)
      << "), host stalled " << format_duration(f.total_ns) << " in total, max " << format_duration(f.max_ns);
  if (f.bytes) out << ", " << f.bytes << " bytes copied";
  out << "\n";
  write_frames(out, r.options, f);
  out << "  fix: " << rule.fix << "\n";
  out << "SUMMARY: nosync-sanitizer: " << rule.id << " " << location(r.options, f)
      << (f.function.empty() ? "" : " in " + f.function) << "\n";
  return out.str();
}

std::string write_text(const Report& r) {
  std::ostringstream out;
  const Totals& t = r.totals;
  std::uint64_t reported_calls = 0, reported_ns = 0, sites = 0;
  for (const Finding& f : r.findings) {
    if (f.rule == nosync::rules::RuleId::LaunchBound) continue;  // GPU idle time, not host syncs
    ++sites;
    reported_calls += f.count;
    reported_ns += f.total_ns;
  }
  out << "==" << r.pid << "==nosync-sanitizer: " << sites << " sync site" << (sites == 1 ? "" : "s") << ", "
      << reported_calls << " host-blocking call"
      << (reported_calls == 1 ? "" : "s") << ", host stalled " << format_duration(reported_ns) << "\n";
  std::size_t n = 0;
  for (const Finding& f : r.findings) {
    out << "\n--- finding " << ++n << " of " << r.findings.size() << " ---\n";
    // Per-site blocks carry their own SUMMARY lines only in error mode; the
    // exit report ends with the one summary line of the run.
    std::string block = write_text_finding(r, f, "WARNING");
    block.erase(block.rfind("SUMMARY:"));
    out << block;
  }
  out << "\n==" << r.pid << "==nosync-sanitizer: counted " << t.blocking << " host-blocking calls ("
      << format_duration(t.blocking_ns) << "), " << t.below_threshold << " under min_stall_us, " << t.suppressed
      << " suppressed, " << t.queries << " stream/event queries (not stalls)";
  if (t.overflowed) out << ", " << t.overflowed << " in sites beyond max_sites";
  out << "\n";
  if (r.has_gpu) {
    char share[64];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * r.gpu.busy_share());
    out << "==" << r.pid << "==nosync-sanitizer: GPU timeline: " << r.gpu.kernels << " kernels ("
        << r.gpu.short_kernels << " under 5 us), busy " << share << " of " << format_duration(r.gpu.span_ns)
        << ", longest idle gap " << format_duration(r.gpu.max_gap_ns) << "\n";
  }
  for (const SuppressionHit& s : r.suppressions)
    if (s.hits) out << "==" << r.pid << "==suppressed " << s.hits << " x " << s.pattern << "\n";
  out << "SUMMARY: nosync-sanitizer: " << reported_calls << " host syncs at " << sites << " site"
      << (sites == 1 ? "" : "s") << ", " << format_duration(reported_ns) << " stalled";
  if (r.findings.size() > sites) out << "; GPU launch-bound";
  out << "\n";
  return out.str();
}

std::string write_report(const Report& r) {
  switch (r.options.format) {
    case Format::Json: return write_json(r);
    case Format::Trace: return write_trace(r);
    case Format::Text: break;
  }
  return write_text(r);
}

}  // namespace nosync::san
