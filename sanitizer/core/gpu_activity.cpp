#include "gpu_activity.h"

namespace nosync::san {

bool is_launch_bound(const GpuSummary& s) {
  if (s.kernels < kLaunchBoundMinKernels || s.span_ns == 0) return false;
  const double short_share = static_cast<double>(s.short_kernels) / static_cast<double>(s.kernels);
  return s.busy_share() < kLaunchBoundMaxBusyShare && short_share >= kLaunchBoundMinShortShare;
}

void GpuActivity::add(const KernelInterval* k, std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < n; ++i) {
    const KernelInterval& r = k[i];
    if (r.end_ns <= r.start_ns) continue;  // incomplete record (flushed early)
    const std::uint64_t dur = r.end_ns - r.start_ns;
    ++s_.kernels;
    if (dur < kShortKernelNs) ++s_.short_kernels;
    if (s_.kernels == 1) {
      first_start_ = r.start_ns;
      last_end_ = r.end_ns;
      s_.busy_ns = dur;
    } else {
      if (r.start_ns < first_start_) first_start_ = r.start_ns;
      if (r.start_ns >= last_end_) {
        const std::uint64_t gap = r.start_ns - last_end_;
        if (gap > s_.max_gap_ns) s_.max_gap_ns = gap;
        s_.busy_ns += dur;
      } else if (r.end_ns > last_end_) {
        s_.busy_ns += r.end_ns - last_end_;
      }
      if (r.end_ns > last_end_) last_end_ = r.end_ns;
    }
    s_.span_ns = last_end_ - first_start_;
  }
}

GpuSummary GpuActivity::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

void GpuActivity::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  s_ = GpuSummary{};
  first_start_ = last_end_ = 0;
}

}  // namespace nosync::san
