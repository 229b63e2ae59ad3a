// Fixture for the context rules every nosync check shares (utils/SyncContext),
// exercised through nosync-item: test bodies, throttled and one-off callers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <map>
#include <string>

#include <cmath>

// doctest and Catch2 register tests through a TEST_CASE macro; they are not
// installed here, but the context rule only looks at the macro the user wrote.
#define NOSYNC_CAT2(a, b) a##b
#define NOSYNC_CAT(a, b) NOSYNC_CAT2(a, b)
#define TEST_CASE(name) static void NOSYNC_CAT(doctest_anon_func_, __LINE__)()

// Called only under `if (step % N == 0)`: rare, its loop included.
float estimate_loss(torch::nn::Linear& model, const torch::Tensor& x) {
  float total = 0;
  for (int i = 0; i < 10; ++i) {
    total += model->forward(x).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:38: remark: 'item()' in code called only from throttled, test or one-off code: {{.*}} [nosync-item]
  }
  return total / 10;
}

// Called from a test body only.
float read_back(const torch::Tensor& t) {
  return t.sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:18: remark: 'item()' in code called only from throttled, test or one-off code: {{.*}} [nosync-item]
}

// A predicate that tests a remainder throttles like the test itself; one
// that does not is no throttle.
bool is_refining(int step) { return step > 10 && step % 100 == 0; }
bool warmed_up(int step) { return step > 10; }

// Called only under `if (is_refining(step))`.
float refine(const torch::Tensor& x) {
  return x.abs().sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:24: remark: 'item()' in code called only from throttled, test or one-off code: {{.*}} [nosync-item]
}

// Trained every 4th environment step: `if (step % 4 == 3)` picks the steps the
// model trains on. That update is the training itself, not throttled logging,
// and its syncs are as hot as the loop that calls observe().
struct Agent {
  torch::nn::Linear policy{3, 1};
  torch::optim::SGD optimizer{policy->parameters(), 0.1};
  float train_on(const torch::Tensor& x) {
    auto loss = policy->forward(x).pow(2).mean();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    return loss.item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'item()' in {{.*}}, which is called from a loop: {{.*}} [nosync-item]
  }
  void observe(const torch::Tensor& x, int step) {
    if (step % 4 == 3) {
      float trained = train_on(x);
      (void)trained;
    }
  }
};

// The same with the update defined in another file: only its name is known
// here, and a name for a training update (train_step, update, learn) says the
// `if` picks the steps the model trains on. A target-network sync by name is
// no training update: its branch stays throttled.
struct Learner {
  std::map<std::string, float> train_step(const torch::Tensor& batch);
  void update_target();
};
void collect(Learner& learner, const torch::Tensor& batch, const torch::Tensor& weights, int step) {
  if (step % 5 == 0) {
    float max_weight = weights.max().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:38: warning: 'item()' in 'collect', which is called from a loop: {{.*}} [nosync-item]
    learner.train_step(batch * max_weight);
  }
  if (step % 100 == 0) {
    float norm = weights.norm().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:33: remark: 'item()' in throttled code (runs every N-th iteration): {{.*}} [nosync-item]
    learner.update_target();
    (void)norm;
  }
}

// A constructor runs where its object is made: made every step, its reads
// are per step; made once in main(), they are one-off.
struct StepSampler {
  bool greedy;
  explicit StepSampler(const torch::Tensor& do_sample) : greedy(!do_sample.any().item<bool>()) {}
  // CHECK-MESSAGES: :[[@LINE-1]]:82: warning: 'item()' in code called from a loop: {{.*}} [nosync-item]
};
struct RunConfig {
  float scale;
  explicit RunConfig(const torch::Tensor& t) { scale = t.max().item<float>(); }
  // CHECK-MESSAGES: :[[@LINE-1]]:64: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
};

// Called once, straight-line, from main(): its straight-line code runs once,
// its loop is still a loop.
void train(torch::nn::Linear& model, const torch::Tensor& x) {
  Agent agent;
  for (int step = 0; step < 100; ++step) {
    agent.observe(x, step);
    Learner* learner = nullptr;
    collect(*learner, x, x, step);
    StepSampler sampler(x);
    (void)sampler;
    auto loss = model->forward(x).sum();
    float value = loss.item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    if (step % 50 == 0) {
      float eval = estimate_loss(model, x);
      (void)eval;
    }
    if (is_refining(step)) {
      float refined = refine(x);
      (void)refined;
    }
    // A flag set from the test throttles like the test.
    bool checkpoint_it = step % 20 == 0 || step == 99;
    if (checkpoint_it) {
      float saved = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:26: remark: 'item()' in throttled code (runs every N-th iteration): {{.*}} [nosync-item]
      (void)saved;
    }
    // `k % 5 == 0` in a loop of five turns is true on one turn of every
    // step: once per step, no throttle.
    for (int k = 0; k < 5; ++k) {
      if (k % 5 == 0) {
        float first = loss.item<float>();
        // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()' inside a loop: {{.*}} [nosync-item]
        (void)first;
      }
    }
    // Two turns of constant bounds are no loop of their own, but the step
    // loop around them is.
    for (int head = 0; head < 2; ++head) {
      float part = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' inside a loop: {{.*}} [nosync-item]
      (void)part;
    }
    if (warmed_up(step)) {
      float again = loss.item<float>();
      // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: 'item()' inside a loop: {{.*}} [nosync-item]
      (void)again;
    }
    (void)value;
  }
  float final_loss = model->forward(x).sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:46: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  (void)final_loss;
}

// Called once from main() after train(), in a program that trains: its loop
// does not train, so it is a one-off evaluation pass, and what the loop calls
// runs once per sample of that pass, not every training step.
float sample_score(const torch::Tensor& x) {
  return x.max().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:18: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
}

void evaluate(torch::nn::Linear& model, const torch::Tensor& x) {
  for (int i = 0; i < 10; ++i) {
    float s = model->forward(x).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:39: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
    s += sample_score(x);
    (void)s;
  }
}

// Also called once after train(), but its loop runs until another thread
// clears the flag (it never writes it): a serving loop, hot however the rest
// of the program trains.
std::atomic<bool> serving{true};
void serve(torch::nn::Linear& model, const torch::Tensor& x) {
  while (serving) {
    float s = model->forward(x).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:39: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    (void)s;
  }
}

// A warm-up runs once, before the work it warms up, whoever calls it.
void warmUp(torch::nn::Linear& model, const torch::Tensor& x, int rounds = 10) {
  for (int i = 0; i < rounds; ++i) {
    float s = model->forward(x).sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:39: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
    (void)s;
  }
}

// Reading a checkpoint back: a function given the archive runs once per
// load, whatever its name and however it is reached (here: by nobody seen).
struct CheckpointedAgent {
  int64_t batch_size = 0;
  virtual void LoadArchive(torch::serialize::InputArchive* archive) {
    torch::Tensor tensor;
    if (archive->try_read("batch_size", tensor))
      batch_size = tensor.item<int64_t>();
    // CHECK-MESSAGES: :[[@LINE-1]]:27: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  }
  virtual ~CheckpointedAgent() = default;
};

// A load() that calls torch::load reads a checkpoint back, once; a load that
// reads no file (the next batch of a stream) runs every step.
struct ReplayState {
  int64_t write_pos = 0;
  std::vector<float> priorities;
  void load(const std::string& dir) {
    std::vector<torch::Tensor> state;
    torch::load(state, dir + "/state.pt");
    write_pos = state[0][0].item<int64_t>();
    // CHECK-MESSAGES: :[[@LINE-1]]:29: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
    for (int64_t i = 0; i < write_pos; ++i)
      priorities.push_back(state[1][i].item<float>());
    // CHECK-MESSAGES: :[[@LINE-1]]:40: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  }
  float load_next(const torch::Tensor& stream, int64_t i) {
    return stream[i].sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()'{{.*}} [nosync-item]
  }
};

// The two images of one pair: `for (int i = 0; i < 2; ++i)` is straight-line
// code written as a loop, so what it calls from main() runs once.
float describe(const torch::Tensor& image) {
  return image.mean().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:23: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
}

TEST(Training, LossIsFinite) {
  auto x = torch::randn({4, 3}, torch::kCUDA);
  float v = x.sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:21: remark: 'item()' in test code: {{.*}} [nosync-item]
  EXPECT_GT(read_back(x), -1e9f);
  EXPECT_FALSE(std::isnan(v));
}

class TrainerTest : public ::testing::Test {
protected:
  void SetUp() override {
    weights = torch::randn({3}, torch::kCUDA);
    initial_norm = weights.norm().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:35: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  }
  torch::Tensor weights;
  float initial_norm = 0;
};

TEST_F(TrainerTest, StepsStayFinite) {
  float sum = 0;
  for (int i = 0; i < 3; ++i) {
    sum += weights.sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:26: remark: 'item()' in test code: {{.*}} [nosync-item]
  }
  EXPECT_FALSE(std::isnan(sum));
}

TEST_CASE("doctest-style test body") {
  auto t = torch::ones({2}, torch::kCUDA);
  float s = t.sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:21: remark: 'item()' in test code: {{.*}} [nosync-item]
  (void)s;
}

int main(int argc, char** argv) {
  torch::nn::Linear model(3, 1);
  auto x = torch::randn({8, 3}, torch::kCUDA);
  RunConfig config(x);
  (void)config;
  train(model, x);
  evaluate(model, x);
  serve(model, x);
  for (int i = 0; i < 2; ++i)
    describe(x);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
