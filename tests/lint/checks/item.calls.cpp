// Fixture for how often code runs through the calls that reach it
// (utils/SyncContext, utils/ColdPath), exercised through nosync-item: lazy
// one-time initialization, virtual calls, calls the compiler left unresolved,
// and a training step whose body is in another file.
#include <torch/torch.h>

#include <vector>

const torch::Device kDevice(torch::kCUDA);

// `if (!ready_) { ready_ = true; ... }`: the branch sets the member flag its
// condition tests, so it runs once per object however often step() runs. The
// same test without the assignment runs every time the flag is still false.
struct Mapper {
  bool ready_ = false;
  bool first_ = true;
  bool dirty_ = false;
  float scale_ = 0;

  void step(const torch::Tensor& frame) {
    if (!ready_) {
      ready_ = true;
      scale_ = frame.abs().max().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:34: remark: 'item()' in lazy one-time initialization: {{.*}} [nosync-item]
    }
    if (first_) {
      scale_ += frame.mean().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:30: remark: 'item()' in lazy one-time initialization: {{.*}} [nosync-item]
      first_ = false;
    }
    if (!dirty_) {
      scale_ -= frame.min().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:29: warning: 'item()' in 'step', which is called from a loop: {{.*}} [nosync-item]
    }
  }

  // Set only once the work is done, deep in the branch: it runs until then.
  bool drained_ = false;
  void drain(const torch::Tensor& queue) {
    if (!drained_) {
      for (int64_t i = 0; i < queue.size(0); ++i) {
        scale_ += queue[i].item<float>();
        // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()' inside a loop: {{.*}} [nosync-item]
        if (scale_ > 1) drained_ = true;
      }
    }
  }
};

void map_frames(Mapper& mapper, const std::vector<torch::Tensor>& frames) {
  for (const auto& f : frames) mapper.step(f);
}

// A local flag closes its branch for the rest of one call: the loop around it
// does not repeat it, though the function is still called from a loop.
float scan(const std::vector<torch::Tensor>& rows) {
  bool first = true;
  float total = 0;
  for (const auto& r : rows) {
    if (first) {
      first = false;
      total += r.sum().item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'item()' in 'scan', which is called from a loop: {{.*}} [nosync-item]
    }
    total += r.max().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: 'item()' inside a loop: {{.*}} [nosync-item]
  }
  return total;
}

void scan_all(const std::vector<std::vector<torch::Tensor>>& batches) {
  for (const auto& b : batches) scan(b);
}

// A virtual call through the base class reaches the override: bind() is
// called once, from the straight-line code of main(), so the override's read
// is one-off; rollout() is called from main()'s training loop, so its
// override's is hot.
struct Model {
  virtual ~Model() = default;
  virtual void bind(const torch::Tensor& grid) = 0;
  virtual float rollout(const torch::Tensor& x) = 0;
};

struct Heston : Model {
  float dt_ = 0;
  void bind(const torch::Tensor& grid) override {
    dt_ = grid.diff().mean().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:30: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  }
  float rollout(const torch::Tensor& x) override {
    return x.sum().item<float>() * dt_;
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'item()' in 'rollout', which is called from a loop: {{.*}} [nosync-item]
  }
};

// A call whose argument waits for a template parameter names an overload set,
// not a function: each of the set taking that many arguments may be called.
float penalty(const torch::Tensor& w) {
  return w.pow(2).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' in 'penalty', which is called from a loop: {{.*}} [nosync-item]
}

template <typename Weights> float regularize(const Weights& layers) {
  float total = 0;
  for (const auto& w : layers) total += penalty(w);
  return total;
}

template float regularize(const std::vector<torch::Tensor>&);

// optimize() is defined in another file: its name says it trains, so
// mapping() holds the training loop and runs once, and the evaluation pass it
// calls after that loop is one-off.
void optimize(torch::nn::Linear& model, const torch::Tensor& frame);

float evaluate_all(torch::nn::Linear& model, const std::vector<torch::Tensor>& frames) {
  float total = 0;
  for (const auto& f : frames) {
    total += model->forward(f).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:38: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  }
  return total;
}

float mapping(torch::nn::Linear& model, const std::vector<torch::Tensor>& frames) {
  for (const auto& f : frames) optimize(model, f);
  return evaluate_all(model, frames);
}

int main() {
  Heston heston;
  Model& model = heston;
  torch::Tensor grid = torch::linspace(0, 1, 16, torch::TensorOptions().device(kDevice));
  torch::nn::Linear net(16, 1);
  model.bind(grid);
  float total = 0;
  for (int path = 0; path < 8; ++path) {
    optimize(net, grid);
    total += model.rollout(grid);
  }
  return total > 0 ? 0 : 1;
}
