// Fixture for where a tensor parameter or member lives when nothing at its
// use says: it is where every value the main file gives it is. A host value
// everywhere makes item() a plain host read; one value that may be on the GPU
// (or none seen) keeps it a sync.
#include <torch/torch.h>

#include <iostream>

// Every call passes a host copy: the parameter is on the CPU.
void print_stats(const torch::Tensor& t) { std::cout << t.mean().item<float>() << "\n"; }

// One call passes a GPU tensor: a sync.
float read_value(const torch::Tensor& t) {
  return t.item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'item()' in 'read_value', which is called from a loop: {{.*}} [nosync-item]
}

class Agent {
public:
  Agent() : visits_(torch::zeros({4})) {}
  void reset(torch::Device device) { state_ = torch::zeros({4}, torch::TensorOptions().device(torch::kCUDA)); }
  float step() {
    float v = visits_.sum().item<float>();
    float s = state_.sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()' in 'step', which is called from a loop: {{.*}} [nosync-item]
    return v + s;
  }

private:
  torch::Tensor visits_;  // the CPU: its only value is torch::zeros({4})
  torch::Tensor state_;   // the GPU
};

// A read after `x = value` that runs before it every time: where that value
// is. A host accumulator (`acc = cat({acc, y.cpu()})`) stays on the host.
float decode(torch::Tensor out, const torch::Tensor& gpu) {
  out = out.to(torch::kCPU);
  float first = out[0].item<float>();
  torch::Tensor acc;
  for (int i = 0; i < 3; ++i) {
    if (i == 0)
      acc = gpu.cpu();
    else
      acc = torch::cat({acc, gpu.cpu()});
  }
  float mean = acc.mean().item<float>();
  // The copy and the read in one expression: one sync, reported as the read.
  float next = gpu.to(torch::kCPU)[0].item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:39: warning: 'item()' in 'decode', which is called from a loop: {{.*}} [nosync-item]
  // A branch's assignment does not run every time: unknown, a sync.
  torch::Tensor maybe = gpu;
  if (first > 0)
    maybe = maybe.cpu();
  float last = maybe.sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()' in 'decode', which is called from a loop: {{.*}} [nosync-item]
  // A structured binding moved to the host before its read, the same way.
  auto [values, indices] = gpu.max(-1);
  values = torch::softmax(values, 0).cpu();
  float top = values[0].item<float>();
  float index = indices[0].item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()' in 'decode', which is called from a loop: {{.*}} [nosync-item]
  return first + mean + next + last + top + index;
}

// A method of the user's class returns host copies in a vector: what the
// caller reads from it, through another method's parameter, is host memory.
struct Detector {
  std::vector<torch::Tensor> suppress(const torch::Tensor& pred) {
    std::vector<torch::Tensor> kept;
    for (int64_t i = 0; i < pred.size(0); ++i)
      kept.push_back(pred[i].cpu());
    return kept;
  }
  std::vector<torch::Tensor> predict(const torch::Tensor& pred) { return suppress(pred); }
  float draw(const std::vector<torch::Tensor>& boxes) {
    float sum = 0;
    for (size_t i = 0; i < boxes.size(); ++i)
      sum += boxes[i][0].item<float>();
    return sum;
  }
  // A tensor from the GPU path is still a sync.
  float first(const torch::Tensor& pred) { return pred[0].item<float>(); }
  // CHECK-MESSAGES: :[[@LINE-1]]:59: warning: 'item()' in 'first', which is called from a loop: {{.*}} [nosync-item]
};

// `if (!device.is_cpu()) x = x.cpu();` leaves `x` on the host either way: the
// guard skips the copy only where `x` is there already.
float read_keypoints(torch::Tensor keypoints, torch::Tensor scores, const torch::Device& device, bool verbose) {
  if (!device.is_cpu()) {
    keypoints = keypoints.detach().cpu();
  }
  if (verbose)
    scores = scores.cpu();
  float sum = 0;
  for (int64_t i = 0; i < keypoints.size(0); ++i)
    sum += keypoints[i][0].item<float>() + scores[i].item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:54: warning: 'item()' inside a loop: {{.*}} [nosync-item]
  return sum;
}

// A bare block always runs: the host copy made inside it is what the loop
// after it reads.
int64_t count_matches(const torch::Tensor& scores) {
  torch::Tensor matches;
  {
    matches = scores.argmax(1);
    matches = matches.detach().cpu();
  }
  int64_t n = 0;
  for (int64_t i = 0; i < matches.size(0); ++i)
    n += matches[i].item<int64_t>();
  return n;
}

// A simulated body whose position member is only ever made on the CPU:
// each update computes the next position from the current one through a
// local, so the member's values cycle back to itself; it stays on the CPU.
struct Body {
  torch::Tensor position_;
  void reset(float x, float y) { position_ = torch::tensor({x, y}); }
  void move(float dt) {
    auto velocity = torch::tensor({1.0f, 0.5f});
    auto next = position_ + velocity * dt;
    position_ = next;
  }
  float x() const { return position_[0].item<float>(); }
};

// Members given their values in methods defined outside the class: placed
// from those definitions as from inline ones. A gauge reset to host zeros is
// read on the host; one reset on the device is a sync.
struct Gauge {
  torch::Tensor level_;
  void reset();
  float read() const;
};
void Gauge::reset() { level_ = torch::zeros({1}); }
float Gauge::read() const { return level_[0].item<float>(); }

struct DeviceGauge {
  torch::Tensor level_;
  void reset(torch::Device device);
  float read() const;
};
void DeviceGauge::reset(torch::Device device) { level_ = torch::zeros({1}, device); }
float DeviceGauge::read() const { return level_[0].item<float>(); }
// CHECK-MESSAGES: :[[@LINE-1]]:52: warning: 'item()' in 'read', which is called from a loop: {{.*}} [nosync-item]

// A history of states rebuilt from its own elements every step (the oldest
// dropped, the newest added): its placement cycles back to itself, and it is
// on the CPU when every state put into it is. One whose first state is on the
// device stays there.
struct History {
  std::vector<torch::Tensor> states_;
  void reset(const torch::Tensor& first) {
    states_ = std::vector<torch::Tensor>(0);
    states_.push_back(first.clone());
  }
  void push(const torch::Tensor& state) {
    std::vector<torch::Tensor> next(states_.size() - 1);
    for (size_t i = 0; i < next.size(); ++i) next[i] = states_[i + 1].clone();
    next.push_back(state.clone());
    states_ = next;
  }
  int newest() const { return states_.back()[0].item<int>(); }
};

struct DeviceHistory {
  std::vector<torch::Tensor> states_;
  void reset(torch::Device device) {
    states_ = std::vector<torch::Tensor>(0);
    states_.push_back(torch::zeros({2}, device));
  }
  void push() {
    std::vector<torch::Tensor> next(states_.size() - 1);
    for (size_t i = 0; i < next.size(); ++i) next[i] = states_[i + 1].clone();
    next.push_back(states_.back() + 1);
    states_ = next;
  }
  int newest() const { return states_.back()[0].item<int>(); }
  // CHECK-MESSAGES: :[[@LINE-1]]:49: warning: 'item()' in 'newest', which is called from a loop: {{.*}} [nosync-item]
};

int main() {
  torch::Device device(torch::kCUDA);
  History history;
  history.reset(torch::zeros({2}));
  DeviceHistory device_history;
  device_history.reset(device);
  for (int t = 0; t < 10; ++t) {
    history.push(torch::ones({2}));
    (void)history.newest();
    device_history.push();
    (void)device_history.newest();
  }
  Gauge gauge;
  DeviceGauge device_gauge;
  for (int t = 0; t < 10; ++t) {
    gauge.reset();
    (void)gauge.read();
    device_gauge.reset(device);
    (void)device_gauge.read();
  }
  Body body;
  body.reset(0, 0);
  for (int t = 0; t < 10; ++t) {
    body.move(0.1f);
    (void)body.x();
  }
  Agent agent;
  agent.reset(device);
  auto weights = torch::randn({8}, device);
  for (int step = 0; step < 100; ++step) {
    print_stats(weights.cpu());
    print_stats(torch::ones({3}));
    read_value(weights.sum().cpu());
    read_value(weights.sum());
    agent.step();
    decode(weights, weights);
    Detector detector;
    std::vector<torch::Tensor> boxes = detector.predict(weights);
    detector.draw(boxes);
    detector.first(weights);
    read_keypoints(weights, weights, device, step == 0);
    count_matches(weights);
  }
  return 0;
}

// In a template, a read on a dependent type is read from its text. A read of
// a local the function copied to the host, never assigned again, costs
// nothing: the copy is the sync, which nosync-device-to-host reports.
template <typename Model> struct PairStyle {
  Model model;
  double virial[6] = {0};
  void compute(const torch::Tensor& x, int steps) {
    for (int step = 0; step < steps; ++step) {
      auto out = model.forward(x);
      auto vir = out.to("cpu");
      virial[0] += vir[0][0].template item<double>();
      auto energy = out.sum();
      virial[1] += energy.template item<double>();
      // CHECK-MESSAGES: :[[@LINE-1]]:36: warning: 'item()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-item]
      auto moved = out.cpu();
      moved = out;
      virial[2] += moved.template item<double>();
      // CHECK-MESSAGES: :[[@LINE-1]]:35: warning: 'item()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-item]
    }
  }
};
