// Fixture for nosync-device-to-host in code the compiler dropped (see
// item.dropped.cpp): a `.to(...)` read from text is a download when it names
// the CPU: kCPU, "cpu", or a device variable named for it (`cpu`,
// `cpu_device`), as RL trainers keep one beside the training device.
#include <torch/torch.h>

struct Actor {
  torch::Tensor act(const torch::Tensor& obs);
};

void rollout(Actor& actor, torch::Tensor obs, torch::Device device) {
  const torch::Device cpu = torch::kCPU;
  const torch::Device cpu_device = torch::kCPU;
  auto env = make_env("CartPole");
  // CHECK-MESSAGES: :[[@LINE-1]]:14: error: use of undeclared identifier 'make_env' [clang-diagnostic-error]
  for (auto& step : *env) {
    auto action = actor.act(obs.to(device)).to(cpu);
    // CHECK-MESSAGES: :[[@LINE-1]]:45: warning: 'to()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-device-to-host]
    auto host = actor.act(obs).to(cpu_device);
    // CHECK-MESSAGES: :[[@LINE-1]]:32: warning: 'to()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-device-to-host]
    auto kept = actor.act(obs).to(torch::kFloat);
    step.take(action, host, kept);
  }
}
