// Fixture for cold paths (utils/ColdPath): a sync that runs only when a check
// fails (a TORCH_CHECK message, a branch that throws) or only at a debug log
// level is a remark, wherever it sits; the same sync on the normal path, or
// under an info-level log, stays a warning.
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>

int log_level = 0;
#define APP_LOG_VERBOSE(x) if (log_level > 2) std::cout << x << '\n'
#define APP_LOG_INFO(x) if (log_level > 0) std::cout << x << '\n'

struct Logger {
  template <typename... Args> void debug(const char* fmt, Args&&... args) { (std::cout << ... << args) << fmt; }
};

// Called only from a verbose-level log message: as cold as the message.
std::string describe(const torch::Tensor& t) {
  return std::to_string(t.abs().max().item<float>());
  // CHECK-MESSAGES: :[[@LINE-1]]:39: remark: 'item()' in code called only from throttled, test or one-off code: {{.*}} [nosync-item]
}

void train(torch::nn::Linear& model, torch::optim::SGD& opt, const torch::Tensor& x, Logger& logger) {
  for (int step = 0; step < 1000; ++step) {
    auto loss = model->forward(x).pow(2).mean();
    auto parts = model->forward(x).abs().sum();
    // The message arguments run only when the check fails.
    TORCH_CHECK(loss.defined(), "loss undefined at step ", step, ", parts ", parts.item<double>());
    // CHECK-MESSAGES: :[[@LINE-1]]:84: remark: 'item()' on a failure path: {{.*}} [nosync-item]
    if (!loss.defined()) {
      std::cerr << "parts: " << parts.item<float>() << '\n';
      // CHECK-MESSAGES: :[[@LINE-1]]:39: remark: 'item()' on a failure path: {{.*}} [nosync-item]
      throw std::runtime_error("loss is undefined at step " + std::to_string(parts.item<float>()));
      // CHECK-MESSAGES: :[[@LINE-1]]:84: remark: 'item()' on a failure path: {{.*}} [nosync-item]
    }
    APP_LOG_VERBOSE("step " << step << " loss " << loss.item<float>());
    // CHECK-MESSAGES: :[[@LINE-1]]:57: remark: 'item()' in debug logging: {{.*}} [nosync-item]
    APP_LOG_VERBOSE("weights " << describe(model->weight));
    logger.debug("loss {}", loss.item<float>());
    // CHECK-MESSAGES: :[[@LINE-1]]:34: remark: 'item()' in debug logging: {{.*}} [nosync-item]
    // An info-level message is printed in a normal run.
    APP_LOG_INFO("step " << step << " loss " << loss.item<float>());
    // CHECK-MESSAGES: :[[@LINE-1]]:54: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    // A branch that reports and carries on runs whenever its test holds.
    if (step > 500) {
      std::cerr << "late loss " << loss.item<float>() << '\n';
      // CHECK-MESSAGES: :[[@LINE-1]]:41: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    }
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}
