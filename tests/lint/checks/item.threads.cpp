// Fixture for thread entries (utils/SyncContext), exercised through
// nosync-item. A function a thread starts with runs once per thread, like
// main() for its thread: its straight-line code, and what that code calls,
// runs once; its loops are hot. A thread started in a loop runs per turn.
#include <torch/torch.h>

#include <future>
#include <thread>
#include <vector>

float prepare(const torch::Tensor& points) {
  return points.norm(2, 1).max().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:34: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
}

class Mapper {
public:
  explicit Mapper(torch::Tensor points) : points_(std::move(points)) {
    worker_ = std::thread(&Mapper::batch_train, this);
  }
  ~Mapper() { worker_.join(); }

private:
  void batch_train() {
    float radius = prepare(points_);
    float center = points_.mean().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:35: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
    for (int step = 0; step < 1000; ++step) {
      auto loss = (points_ * radius - center).pow(2).mean();
      loss.backward();
      float value = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: 'item()' inside a loop: {{.*}} [nosync-item]
      (void)value;
    }
  }

  torch::Tensor points_;
  std::thread worker_;
};

// One thread per frame: the entry runs every turn of the loop that starts it.
float score_frame(const torch::Tensor& frame) {
  return frame.sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'item()' in 'score_frame', which is called from a loop: {{.*}} [nosync-item]
}

void serve(const std::vector<torch::Tensor>& frames) {
  for (const auto& frame : frames) {
    auto scored = std::async(std::launch::async, score_frame, frame);
    scored.get();
  }
}
