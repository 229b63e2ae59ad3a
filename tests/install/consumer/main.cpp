// Uses the installed headers and libraries: a multi-tensor sum on the CPU
// path, the rule catalog, and the sanitizer's counters.
#include <nosync/kernels.h>
#include <nosync/rules.h>
#include <nosync/sanitizer.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  std::vector<at::Tensor> tensors = {torch::ones({3}), torch::full({2}, 2.0f)};
  float total = nosync::kernels::sum(tensors).item<float>();
  if (std::fabs(total - 7.0f) > 1e-6f) {
    std::fprintf(stderr, "FAIL: nosync::kernels::sum gave %f, expected 7\n", total);
    return 1;
  }
  if (nosync::rules::find("nosync-item") == nullptr) {
    std::fprintf(stderr, "FAIL: installed rule catalog lacks nosync-item\n");
    return 1;
  }
  nosync_counters c = nosync::sanitizer::counters();
  std::printf("ok   consumer: sum=%g, %zu rules, sanitizer counters readable (intercepted=%llu)\n", total,
              nosync::rules::kRuleCount, static_cast<unsigned long long>(c.intercepted));
  return 0;
}
