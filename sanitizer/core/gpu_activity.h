// GPU timeline summary from kernel activity records (opt-in: option
// activity=1), and the launch-bound signature: many kernels shorter than
// 5 us with the GPU idle most of the time, i.e. the host cannot launch fast
// enough (nosync-launch-bound). Memory is constant however long the run: the
// busy time is a running union, not a list of kernels.
#pragma once

#include <cstdint>
#include <mutex>

namespace nosync::san {

struct KernelInterval {
  std::uint64_t start_ns = 0, end_ns = 0;  // GPU timestamps
};

struct GpuSummary {
  std::uint64_t kernels = 0;
  std::uint64_t short_kernels = 0;  // shorter than kShortKernelNs
  std::uint64_t busy_ns = 0;        // union of kernel intervals
  std::uint64_t span_ns = 0;        // first kernel start to last kernel end
  std::uint64_t max_gap_ns = 0;     // longest idle stretch between kernels
  double busy_share() const { return span_ns ? static_cast<double>(busy_ns) / span_ns : 0.0; }
};

// The thresholds of the signature, from DESIGN.md's rule table: "GPU busy
// share low while many < 5 us kernels".
constexpr std::uint64_t kShortKernelNs = 5000;
constexpr std::uint64_t kLaunchBoundMinKernels = 1000;
constexpr double kLaunchBoundMaxBusyShare = 0.5;
constexpr double kLaunchBoundMinShortShare = 0.5;

bool is_launch_bound(const GpuSummary& s);

class GpuActivity {
 public:
  // Records arrive per CUPTI buffer, nearly in time order. The union is
  // computed incrementally against the latest end seen; a record that starts
  // before an earlier one only adds the part past that end (exact for one
  // stream, a close lower bound for overlapping streams).
  void add(const KernelInterval* k, std::size_t n);
  GpuSummary summary() const;
  void reset();

 private:
  mutable std::mutex mu_;
  GpuSummary s_;
  std::uint64_t first_start_ = 0, last_end_ = 0;
};

}  // namespace nosync::san
