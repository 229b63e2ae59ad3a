// Fixture for the command-interpreter context (utils/SyncContext: a chain of
// three or more comparisons with string literals inside a loop): a program
// that reads an input script runs each command's branch once per command,
// and a command is a whole run. The loop over the script does not make the
// branches hot; loops inside them still are loops.
#include <torch/torch.h>

#include <string>
#include <vector>

struct Simulation {
  torch::Tensor velocities = torch::randn({64, 3}, torch::kCUDA);
  float temperature() { return velocities.pow(2).sum().item<float>(); }
  // CHECK-MESSAGES: :[[@LINE-1]]:56: remark: 'item()' in {{.*}} [nosync-item]
  void run(int steps) {
    for (int s = 0; s < steps; ++s) {
      velocities = velocities * 0.99;
      float kinetic = velocities.pow(2).sum().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:47: warning: 'item()' inside a loop: {{.*}} [nosync-item]
      (void)kinetic;
    }
  }
};

// Called from a template on a type that depends on its parameter: the call
// is unresolved in the template, and still a call from its loop.
struct Thermostat {
  torch::Tensor target = torch::ones({1}, torch::kCUDA);
  float set_temp(float t) { return (target * t).max().item<float>(); }
  // CHECK-MESSAGES: :[[@LINE-1]]:55: warning: 'item()' in 'set_temp', which is called from a loop: {{.*}} [nosync-item]
};
template <typename ThermostatType> void anneal(ThermostatType& thermostat, int steps) {
  for (int s = 0; s < steps; ++s)
    thermostat.set_temp(300.0f - s);
}

int main(int argc, char** argv) {
  std::vector<std::string> script(argv + 1, argv + argc);
  Simulation sim;
  for (const std::string& cmd : script) {
    if (cmd == "NVE") {
      sim.run(1000);
    } else if (cmd == "TEMP") {
      float t = sim.temperature();
      (void)t;
    } else if (cmd == "RESET") {
      float before = sim.velocities.abs().max().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:49: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
      sim.velocities.zero_();
      (void)before;
    }
  }
  return 0;
}
