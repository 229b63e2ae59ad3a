// Fixture for where the tensors of a sequence (std::vector<Tensor>, a local or
// a member) live: where every tensor put into it is (its initializer,
// push_back, emplace_back, `v[i] = t`). An element read back (`v[i]`,
// `v.at(i)`, `v.back()`, a range-for variable) and a cat / stack of it are
// there too. A sequence also filled some other way (by reference, by an
// element assigned in a loop) is unknown, and its reads stay syncs. Also: a
// tensor declared without a value is where every value assigned to it is.
#include <torch/torch.h>

#include <vector>

struct Rollout {
  std::vector<torch::Tensor> actions;  // host: torch::full without a device
  std::vector<torch::Tensor> values;   // the GPU: critic outputs
};

void record(Rollout& r, torch::Tensor value, float a) {
  r.actions.push_back(torch::full({1}, a));
  r.values.push_back(value.to(torch::kCUDA));
}

void fill(std::vector<torch::Tensor>& out);

float train_step(Rollout& r, const torch::Tensor& logits) {
  float sum = 0;
  for (size_t i = 0; i < r.actions.size(); ++i)
    sum += r.actions[i].item<float>();
  sum += r.values.back().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: 'item()' in 'train_step', which is called from a loop: {{.*}} [nosync-item]
  sum += torch::cat(r.actions).sum().item<float>();

  std::vector<torch::Tensor> rows(4, torch::zeros({3}));
  rows[1] = torch::ones({3});
  for (const auto& row : rows)
    sum += row.sum().item<float>();
  sum += torch::stack({rows.at(0), torch::ones({3})}).sum().item<float>();

  std::vector<torch::Tensor> moved = {torch::zeros({3})};
  for (auto& t : moved)
    t = t.to(torch::kCUDA);
  sum += moved[0].sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'item()' in 'train_step', which is called from a loop: {{.*}} [nosync-item]

  std::vector<torch::Tensor> filled;
  filled.push_back(torch::zeros({3}));
  fill(filled);
  sum += filled.front().sum().item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: 'item()' in 'train_step', which is called from a loop: {{.*}} [nosync-item]

  torch::Tensor mask;
  mask = torch::full({3}, false, torch::TensorOptions().dtype(torch::kBool));
  sum += mask.sum().item<float>();
  torch::Tensor probs;
  probs = logits.softmax(-1);
  sum += probs[0].item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'item()' in 'train_step', which is called from a loop: {{.*}} [nosync-item]
  return sum;
}

int main() {
  Rollout r;
  auto net_out = torch::randn({4}, torch::kCUDA);
  for (int step = 0; step < 100; ++step) {
    record(r, net_out, 1.0f);
    train_step(r, net_out);
  }
  return 0;
}
