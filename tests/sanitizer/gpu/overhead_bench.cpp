// Launch-bound loop for the overhead benchmark: many tiny ops, no syncs (what
// the sanitizer must not slow down), then the cost of syncs it does intercept.
// bench_overhead.py runs this with and without the sanitizer.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::printf("[  SKIPPED ] no CUDA GPU\n");
    return 77;
  }
  const int ops = argc > 1 ? std::atoi(argv[1]) : 30000;
  const int syncs = argc > 2 ? std::atoi(argv[2]) : 3000;
  using clock = std::chrono::steady_clock;
  torch::Tensor x = torch::zeros({256}, torch::kCUDA);
  for (int i = 0; i < 2000; ++i) x.add_(1.0);
  torch::cuda::synchronize();

  auto t0 = clock::now();
  for (int i = 0; i < ops; ++i) x.add_(1.0);
  torch::cuda::synchronize();
  auto t1 = clock::now();
  // Device idle: each synchronize is pure host overhead (driver + sanitizer).
  for (int i = 0; i < syncs; ++i) torch::cuda::synchronize();
  auto t2 = clock::now();
  for (int i = 0; i < syncs; ++i) (void)x.sum().item<float>();
  auto t3 = clock::now();
  auto ns = [](auto a, auto b) { return std::chrono::duration<double, std::nano>(b - a).count(); };
  std::printf("launch_ns_per_op=%.1f sync_ns=%.1f item_ns=%.1f\n", ns(t0, t1) / ops, ns(t1, t2) / syncs,
              ns(t2, t3) / syncs);
  return 0;
}
