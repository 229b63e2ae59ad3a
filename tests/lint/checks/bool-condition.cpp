// Fixture for nosync-bool-condition: tensor-derived values deciding host control flow.
#include <torch/torch.h>

#include <cassert>
#include <cmath>

// A project's own check macro that aborts through a function call.
void check_or_abort(bool ok, const char* what);
#define MY_CHECK(p) check_or_abort(static_cast<bool>(p), #p)

void train(torch::nn::Linear& model, const torch::Tensor& x, const torch::Tensor& y) {
  for (int step = 0; step < 100; ++step) {
    auto loss = torch::mse_loss(model->forward(x), y);
    auto mask = loss > 0;
    if (loss.item<bool>()) continue;
    // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: 'item()' in a condition inside a loop: a tensor-derived bool decides host control flow{{.*}}; branch on the device instead{{.*}} [nosync-bool-condition]
    // CHECK-MESSAGES: :[[@LINE-2]]:14: note: compute both outcomes on the device and select with torch::where(mask, a, b){{.*}}
    if (!mask.any().is_nonzero()) break;
    // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'is_nonzero()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    if (std::isnan(loss.item<float>())) return;
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    // CHECK-MESSAGES: :[[@LINE-2]]:25: note: a NaN/Inf check decides host control flow here, so it is not rewritten{{.*}}nosync::kernels::nonfinite_flag(tensors){{.*}}
    if (torch::equal(x, y) || x.allclose(y)) continue;
    // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: 'equal()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    // CHECK-MESSAGES: :[[@LINE-2]]:33: warning: 'allclose()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    float scale = loss.item<float>() > 1.0f ? 0.5f : 1.0f;
    // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'item()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    TORCH_CHECK(loss.isfinite().all().item<bool>(), "loss diverged");
    // CHECK-MESSAGES: :[[@LINE-1]]:39: warning: 'item()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    // assert() runs in CMake's default and Debug builds (no NDEBUG): a sync.
    assert(x.equal(x));
    // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: 'equal()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
    // CHECK-MESSAGES: :[[@LINE-2]]:14: note: assert on the device instead: at::_assert_async{{.*}}
    // Its argument decides whether the program goes on, as assert()'s does.
    MY_CHECK(!torch::isnan(loss).any().item<bool>());
    // CHECK-MESSAGES: :[[@LINE-1]]:40: warning: 'item()' in a condition inside a loop: {{.*}} [nosync-bool-condition]

    // Not conditions: the value is stored or printed (nosync-item's concern).
    float value = loss.item<float>() * scale;
    bool stored = mask.any().item<bool>();
    (void)value;
    (void)stored;
    // Device-side selection is the fix, not a finding.
    auto clipped = torch::where(mask, loss, torch::zeros_like(loss));
    (void)clipped;
    // Host tensors: comparing them costs nothing.
    auto host = torch::zeros({3});
    if (host.sum().item<float>() > 0 || torch::equal(host, host.clone())) break;
  }
  // A do/while condition, outside the training loop and not in main: default severity.
  auto y2 = y.clone();
  do {
    y2 = y2 * 2;
  } while (y2.norm().item<double>() < 1000);
  // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'item()' in a condition inside a loop: {{.*}} [nosync-bool-condition]
}

// In a template, a read on a dependent type is read from its text; where it
// decides a branch it is still this rule's (also inside an AT_ASSERT).
template <typename LossFn> void fit(LossFn& loss_fn, const torch::Tensor& x, int steps) {
  for (int step = 0; step < steps; ++step) {
    auto loss = loss_fn(x);
    if (std::isnan(loss.template item<float>())) break;
    // CHECK-MESSAGES: :[[@LINE-1]]:34: warning: 'item()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-bool-condition]
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    // CHECK-MESSAGES: :[[@LINE-1]]:41: warning: 'item()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-bool-condition]
  }
}

// A known tensor given the template's own parameter as template argument
// (`loss.template item<Scalar>()`) also waits for an instantiation.
template <typename Scalar> struct Fitter {
  torch::nn::Linear model{3, 1};
  void fit(const torch::Tensor& x, int steps) {
    for (int step = 0; step < steps; ++step) {
      auto loss = model->forward(x).pow(2).mean();
      AT_ASSERT(!std::isnan(loss.template item<Scalar>()));
      // CHECK-MESSAGES: :[[@LINE-1]]:43: warning: 'item()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-bool-condition]
    }
  }
};

int main() {
  torch::nn::Linear model(3, 1);
  auto x = torch::randn({8, 3}, torch::kCUDA);
  // Once, at startup: low severity.
  if (x.isnan().any().item<bool>()) return 1;
  // CHECK-MESSAGES: :[[@LINE-1]]:23: remark: 'item()' in a condition in one-off setup/export code: {{.*}} [nosync-bool-condition]
  train(model, x, x.sum(1));
  return 0;
}
