// Launch-bound loop for the overhead benchmark: many tiny ops, no syncs (what
// the sanitizer must not slow down), then the cost of syncs it does intercept.
// bench_overhead.py runs it two ways:
//   overhead_bench [ops syncs]
//       one pass; run with and without CUDA_INJECTION64_PATH, process vs process
//   overhead_bench --interleaved rounds ops
//       one process, the sanitizer linked in and paused/resumed between
//       blocks (CUPTI unsubscribed vs subscribed), off/on alternating, so
//       process-to-process variance (placement, clocks) drops out
#include <nosync/sanitizer.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int interleaved(int rounds, int ops) {
  if (!nosync::sanitizer::start()) {
    std::printf("sanitizer could not start (CUPTI unavailable)\n");
    return 1;
  }
  torch::Tensor x = torch::zeros({256}, torch::kCUDA);
  auto block = [&] {
    auto t0 = Clock::now();
    for (int i = 0; i < ops; ++i) x.add_(1.0);
    torch::cuda::synchronize();
    return ns_between(t0, Clock::now()) / ops;
  };
  nosync::sanitizer::pause();
  block();  // warm-up
  std::vector<double> off, on;
  for (int r = 0; r < rounds; ++r) {
    // Alternate which state goes first so drift does not favour one.
    for (int k = 0; k < 2; ++k) {
      const bool enabled = (k == 0) == (r % 2 == 0);
      if (enabled) nosync::sanitizer::resume();
      else nosync::sanitizer::pause();
      (enabled ? on : off).push_back(block());
    }
  }
  nosync::sanitizer::pause();
  const double m_off = median(off), m_on = median(on);
  std::printf("interleaved rounds=%d ops=%d off_ns=%.1f on_ns=%.1f ratio=%.4f\n", rounds, ops, m_off, m_on,
              m_on / m_off);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::printf("[  SKIPPED ] no CUDA GPU\n");
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--interleaved") == 0)
    return interleaved(argc > 2 ? std::atoi(argv[2]) : 20, argc > 3 ? std::atoi(argv[3]) : 20000);

  const int ops = argc > 1 ? std::atoi(argv[1]) : 30000;
  const int syncs = argc > 2 ? std::atoi(argv[2]) : 3000;
  torch::Tensor x = torch::zeros({256}, torch::kCUDA);
  for (int i = 0; i < 2000; ++i) x.add_(1.0);
  torch::cuda::synchronize();

  auto t0 = Clock::now();
  for (int i = 0; i < ops; ++i) x.add_(1.0);
  torch::cuda::synchronize();
  auto t1 = Clock::now();
  // Device idle: each synchronize is pure host overhead (driver + sanitizer).
  for (int i = 0; i < syncs; ++i) torch::cuda::synchronize();
  auto t2 = Clock::now();
  for (int i = 0; i < syncs; ++i) (void)x.sum().item<float>();
  auto t3 = Clock::now();
  std::printf("launch_ns_per_op=%.1f sync_ns=%.1f item_ns=%.1f\n", ns_between(t0, t1) / ops,
              ns_between(t1, t2) / syncs, ns_between(t2, t3) / syncs);
  return 0;
}
