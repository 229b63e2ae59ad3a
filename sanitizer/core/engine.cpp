#include "engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

#include "attribution.h"
#include "classifier.h"
#include "python_frames.h"

namespace nosync::san {

Engine::Engine(Options options, std::unique_ptr<Symbolizer> symbolizer, Suppressions suppressions)
    : options_(std::move(options)),
      symbolizer_(std::move(symbolizer)),
      suppressions_(std::move(suppressions)),
      sink_(options_.log_path),
      sites_(options_.max_sites),
      fatal_([] { std::abort(); }),
      pid_([] { return static_cast<int>(::getpid()); }) {}

bool Engine::wants_stack(const SyncEvent& e) const {
  if (!is_host_blocking(e, options_.malloc_is_sync)) return false;
  return e.duration_ns >= options_.min_stall_us * 1000 || region_depth_.load(std::memory_order_relaxed) > 0;
}

void Engine::write(const std::string& text) {
  if (writer_) writer_(text);
  else sink_.write(text);
}

// Live lines (warn mode's new sites, error mode's report) are text. With a
// JSON or trace report the log file must stay one valid document, so they go
// to stderr instead.
void Engine::write_live(const std::string& text) {
  if (live_writer_) live_writer_(text);
  else if (options_.format == Format::Text) write(text);
  else LogSink("stderr").write(text);
}

void Engine::record(const SyncEvent& e) {
  intercepted_.fetch_add(1, std::memory_order_relaxed);
  if (is_query(e.kind)) {
    queries_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!is_host_blocking(e, options_.malloc_is_sync)) return;
  blocking_.fetch_add(1, std::memory_order_relaxed);
  blocking_ns_.fetch_add(e.duration_ns, std::memory_order_relaxed);
  const bool in_region = region_depth_.load(std::memory_order_relaxed) > 0;
  const std::uint64_t seq = in_region ? region_seq_.fetch_add(1) : 0;
  if (e.duration_ns < options_.min_stall_us * 1000) {
    below_threshold_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  SiteTable::AddResult added = sites_.add(e, options_.stack_depth);
  if (in_region) {
    std::lock_guard<std::mutex> lock(region_mu_);
    if (region_log_.size() < kRegionLog) region_log_.push_back({seq, added.site, e.duration_ns});
  }
  if (options_.format == Format::Trace) {
    std::lock_guard<std::mutex> lock(trace_mu_);
    if (trace_.size() < options_.trace_max_events)
      trace_.push_back({e.start_ns, e.duration_ns, e.thread_id, added.site->id});
    else
      ++trace_dropped_;
  }
  if (options_.mode == Mode::Warn && added.is_new) {
    resolve(added.site);
    if (added.site->suppression < 0) {
      std::ostringstream line;
      line << "==" << pid_() << "==WARNING: nosync-sanitizer: " << describe_site(added.site) << ", stalled "
           << format_duration(e.duration_ns) << " (new site; counts at exit)\n";
      write_live(line.str());
    }
  } else if (options_.mode == Mode::Error) {
    resolve(added.site);
    // Notes (a collective's own wait) are expected in correct programs: they
    // are counted and reported at exit, never a reason to abort.
    if (added.site->suppression < 0 &&
        nosync::rules::get(added.site->cls.rule).severity != nosync::rules::Severity::Note) {
      Report r = build_report();
      for (const Finding& f : r.findings)
        if (std::find(f.site_ids.begin(), f.site_ids.end(), added.site->id) != f.site_ids.end()) {
          write_live(write_text_finding(r, f, "ERROR") + "==" + std::to_string(r.pid) + "==ABORTING\n");
          break;
        }
      if (options_.format != Format::Text) finish();
      {
        // Error mode stops at the first finding: no exit report follows.
        std::lock_guard<std::mutex> lock(report_mu_);
        finished_pid_ = pid_();
      }
      fatal_();
    }
  }
}

void Engine::record_kernels(const KernelInterval* k, std::size_t n) {
  gpu_.add(k, n);
  if (options_.format != Format::Trace) return;
  std::lock_guard<std::mutex> lock(trace_mu_);
  for (std::size_t i = 0; i < n; ++i) {
    if (k[i].end_ns <= k[i].start_ns) continue;
    if (trace_.size() < options_.trace_max_events) {
      TraceSlice slice;
      slice.start_ns = k[i].start_ns;
      slice.duration_ns = k[i].end_ns - k[i].start_ns;
      slice.kernel = true;
      trace_.push_back(slice);
    } else {
      ++trace_dropped_;
    }
  }
}

void Engine::resolve(Site* s) {
  std::lock_guard<std::mutex> lock(resolve_mu_);
  if (s->resolved) return;
  std::vector<Frame> frames;
  if (options_.symbolize && symbolizer_ && !s->pcs.empty()) {
    frames = symbolizer_->symbolize(s->pcs.data(), s->pcs.size());
  } else {
    for (std::uintptr_t pc : s->pcs) frames.push_back(Frame{pc, "", "", 0, "", 0});
  }
  frames.erase(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(first_printed_frame(frames)));
  if (!s->python_stack.empty()) frames = splice_python_frames(std::move(frames), parse_python_stack(s->python_stack));
  s->user_frame = first_user_frame(frames);
  SyncEvent e;
  e.kind = s->kind;
  e.direction = s->direction;
  e.last_copy = s->last_copy;
  e.src = s->src;
  e.dst = s->dst;
  s->cls = classify(e, frames, s->user_frame);
  s->suppression = suppressions_.match(nosync::rules::get(s->cls.rule).id, s->api, frames);
  s->frames = std::move(frames);
  s->resolved = true;
}

// What a finding says instead of file:line when no frame is the user's: a
// sync in backward names the autograd node (the engine's threads run no
// Python), a Python program without a visible .py frame says so.
std::string Engine::where_without_user_frame(const Site* s) const {
  if (s->overflow) return "<sites beyond max_sites>";
  const std::string node = backward_node_of(s->frames);
  if (!node.empty()) return describe_backward(node);
  for (const Frame& f : s->frames)
    if (is_interpreter_frame(f) || is_python_frame(f)) return "<python>";
  return "";
}

std::string Engine::describe_site(Site* s) {
  resolve(s);
  std::ostringstream out;
  out << nosync::rules::get(s->cls.rule).id << " at ";
  if (s->user_frame < s->frames.size()) {
    const Frame& f = s->frames[s->user_frame];
    if (!f.file.empty()) out << display_path(options_, f.file) << ":" << f.line;
    else out << "<no line info>";
    if (!f.function.empty()) out << " in " << f.function;
  } else {
    const std::string where = where_without_user_frame(s);
    out << (where.empty() ? "<unknown location>" : where);
  }
  out << " (" << (s->cls.op.empty() ? "" : s->cls.op + " -> ") << s->api << ")";
  return out.str();
}

Totals Engine::totals() const {
  Totals t;
  t.intercepted = intercepted_.load();
  t.blocking = blocking_.load();
  t.blocking_ns = blocking_ns_.load();
  t.below_threshold = below_threshold_.load();
  t.queries = queries_.load();
  t.overflowed = sites_.overflowed_calls();
  return t;
}

Report Engine::build_report() {
  std::lock_guard<std::mutex> lock(report_mu_);
  return build_report_locked();
}

Report Engine::build_report_locked() {
  Report r;
  r.pid = pid_();
  r.options = options_;
  r.totals = totals();
  std::vector<std::uint64_t> suppressed_calls(suppressions_.size(), 0);

  // Group sites per (rule, user file, line, function, op): a user line that
  // syncs through two stacks (a copy and the stream sync after it) is one
  // finding whose `apis` lists both.
  using Key = std::tuple<int, std::string, int, std::string, std::string, bool>;
  std::map<Key, Finding> grouped;
  std::map<Key, std::uint64_t> costliest;
  for (Site* s : sites_.sites()) {
    resolve(s);
    const SiteStats st = sites_.stats(s);
    if (s->suppression >= 0) {
      r.totals.suppressed += st.count;
      suppressed_calls[static_cast<std::size_t>(s->suppression)] += st.count;
      continue;
    }
    std::string file, function;
    int line = 0;
    if (s->user_frame < s->frames.size()) {
      file = s->frames[s->user_frame].file;
      line = s->frames[s->user_frame].line;
      function = s->frames[s->user_frame].function;
    } else {
      function = where_without_user_frame(s);
    }
    Key key{static_cast<int>(s->cls.rule), file, line, function, s->cls.op, s->overflow};
    Finding& f = grouped[key];
    if (f.count == 0) {
      f.rule = s->cls.rule;
      f.file = file;
      f.line = line;
      f.function = function;
      f.op = s->cls.op;
    }
    f.count += st.count;
    f.total_ns += st.total_ns;
    f.max_ns = std::max(f.max_ns, st.max_ns);
    f.bytes += st.bytes;
    f.apis[s->api] += st.count;
    f.site_ids.push_back(s->id);
    std::uint64_t& best = costliest[key];
    if (f.frames.empty() || st.total_ns > best) {
      best = st.total_ns;
      f.frames = s->frames;
      f.user_frame = s->user_frame;
    }
  }
  for (auto& [key, f] : grouped) r.findings.push_back(std::move(f));
  r.gpu = gpu_.summary();
  r.has_gpu = r.gpu.kernels > 0;
  if (is_launch_bound(r.gpu)) {
    // Not a host sync and not tied to a source line: one finding for the
    // whole timeline, its "stall" being the time the GPU sat idle.
    Finding f;
    f.rule = nosync::rules::RuleId::LaunchBound;
    f.function = "<GPU timeline>";
    f.op = "kernel launches";
    f.count = r.gpu.kernels;
    f.total_ns = r.gpu.span_ns - r.gpu.busy_ns;
    f.max_ns = r.gpu.max_gap_ns;
    f.apis["kernels"] = r.gpu.kernels;
    f.apis["kernels under 5 us"] = r.gpu.short_kernels;
    r.findings.push_back(std::move(f));
  }
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.total_ns > b.total_ns; });
  for (std::size_t i = 0; i < suppressions_.size(); ++i)
    r.suppressions.push_back({suppressions_.describe(i), suppressed_calls[i]});
  {
    std::lock_guard<std::mutex> tl(trace_mu_);
    r.trace = trace_;
    r.trace_dropped = trace_dropped_;
  }
  return r;
}

bool Engine::finish() {
  std::lock_guard<std::mutex> lock(report_mu_);
  const int pid = pid_();
  if (finished_pid_ == pid) return false;
  finished_pid_ = pid;
  Report r = build_report_locked();
  // A forked child (DataLoader worker) that found nothing stays silent so the
  // parent's report is the only one.
  if (forked_child_ && r.findings.empty()) return false;
  write(write_report(r));
  return std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return nosync::rules::get(f.rule).severity != nosync::rules::Severity::Note;
  });
}

std::uint64_t Engine::region_begin() {
  region_depth_.fetch_add(1);
  return region_seq_.load();
}

RegionResult Engine::region_end(std::uint64_t token) {
  RegionResult out;
  const std::uint64_t total = region_seq_.load() - token;
  std::vector<RegionEntry> entries;
  {
    std::lock_guard<std::mutex> lock(region_mu_);
    for (const RegionEntry& e : region_log_)
      if (e.seq >= token) entries.push_back(e);
    if (region_depth_.fetch_sub(1) == 1) region_log_.clear();
  }
  std::uint64_t suppressed = 0;
  std::map<Site*, std::uint64_t> per_site;
  for (const RegionEntry& e : entries) {
    resolve(e.site);
    if (e.site->suppression >= 0) {
      ++suppressed;
      continue;
    }
    per_site[e.site] += 1;
    out.stall_ns += e.ns;
  }
  out.syncs = total - suppressed;
  std::ostringstream d;
  for (const auto& [site, n] : per_site) d << "  " << n << " x " << describe_site(site) << "\n";
  if (total > entries.size()) d << "  (" << total - entries.size() << " more not itemized)\n";
  out.description = d.str();
  return out;
}

void Engine::before_fork() {
  report_mu_.lock();
  resolve_mu_.lock();
  trace_mu_.lock();
  region_mu_.lock();
  sites_.lock_all();
}

void Engine::after_fork_parent() {
  sites_.unlock_all();
  region_mu_.unlock();
  trace_mu_.unlock();
  resolve_mu_.unlock();
  report_mu_.unlock();
}

void Engine::after_fork_child() {
  after_fork_parent();
  forked_child_ = true;
  reset();
}

void Engine::reset() {
  sites_.clear();
  gpu_.reset();
  intercepted_ = 0;
  blocking_ = 0;
  blocking_ns_ = 0;
  below_threshold_ = 0;
  queries_ = 0;
  std::lock_guard<std::mutex> tl(trace_mu_);
  trace_.clear();
  trace_dropped_ = 0;
}

}  // namespace nosync::san
