// Fixture for training drivers and one-iteration tests (utils/SyncContext),
// exercised through nosync-item. This unit has no main(): its functions'
// callers are in other files, as in a project whose trainer is a library.
#include <torch/torch.h>

#include <vector>

// A function that holds the training loop runs once, like main(): its code
// outside that loop (setup before it, the final evaluation after it) runs
// once too. The loop itself is hot.
float fit(torch::nn::Linear& model, torch::optim::SGD& opt, const torch::Tensor& x, bool test) {
  float baseline = model->forward(x).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:44: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  for (int epoch = 0; epoch < 10; ++epoch) {
    auto loss = model->forward(x).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
    float value = loss.item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    if (epoch == 0) {
      float first = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:26: remark: 'item()' in throttled code (runs every N-th iteration): {{.*}} [nosync-item]
      (void)first;
    }
    (void)value;
  }
  // The final evaluation: a loop after the training loop, also inside an if.
  float total = 0;
  if (test) {
    for (int i = 0; i < 4; ++i) {
      total += model->forward(x).sum().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:40: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
    }
  }
  return baseline + total;
}

// A branch that ends by leaving the loop runs once per run of that loop: the
// early stop's report in a training driver is one-off, like code after the
// loop. A break that leaves an inner loop or a switch leaves the outer loop
// turning.
float fit_until(torch::nn::Linear& model, torch::optim::SGD& opt, const torch::Tensor& x) {
  float best = 1e9f;
  for (int epoch = 0; epoch < 100; ++epoch) {
    auto loss = model->forward(x).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (epoch > 10 && best < 1e-3f) {
      best = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:19: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
      break;
    }
    if (best != best) {
      float last = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:25: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
      return last;
    }
    for (int64_t row = 0; row < x.size(0); ++row) {
      if (best > static_cast<float>(row)) {
        best += loss.item<float>();
        // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'item()' inside a loop: {{.*}} [nosync-item]
        break;
      }
    }
    switch (epoch % 3) {
    case 0:
      if (best > 0) {
        best -= loss.item<float>();
        // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'item()' inside a loop: {{.*}} [nosync-item]
        break;
      }
      break;
    default:
      break;
    }
  }
  return best;
}

// Named for one step of a loop elsewhere: it runs every time that loop
// turns, so its code outside its own loop is not one-off.
float update(torch::nn::Linear& model, torch::optim::SGD& opt, const std::vector<torch::Tensor>& batches) {
  float before = model->forward(batches[0]).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:51: warning: 'item()': {{.*}} [nosync-item]
  for (const auto& b : batches) {
    auto loss = model->forward(b).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  return before;
}

// No training loop: a helper whose callers are not seen.
float evaluate(torch::nn::Linear& model, const torch::Tensor& x) {
  return model->forward(x).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:34: warning: 'item()': {{.*}} [nosync-item]
}

// A counter compared for inequality picks almost every iteration: no throttle.
void log_loop(const torch::Tensor& x) {
  for (int step = 0; step < 100; ++step) {
    if (step != 0) {
      float v = x.sum().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' inside a loop: {{.*}} [nosync-item]
      (void)v;
    }
  }
}

// Named for loading pretrained weights: one-off, its loop included.
float load_pretrained(const std::vector<torch::Tensor>& weights) {
  float total = 0;
  for (const auto& w : weights) total += w.abs().sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:56: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  return total;
}

// A frame counter, here a member, compared for equality picks one frame out of
// all: first-frame diagnostics run once per viewer, not per frame.
struct Viewer {
  int frame_count_ = 0;
  void render(const torch::Tensor& image) {
    if (frame_count_ == 0) {
      float peak = image.max().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:32: remark: 'item()' in throttled code (runs every N-th iteration): {{.*}} [nosync-item]
      (void)peak;
    }
    ++frame_count_;
  }
};

void show(Viewer& viewer, const torch::Tensor& image) {
  for (int i = 0; i < 100; ++i) viewer.render(image);
}
