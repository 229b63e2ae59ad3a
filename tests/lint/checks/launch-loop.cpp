// Fixture for nosync-launch-loop: one kernel per tensor in a loop.
#include <torch/torch.h>

#include <array>
#include <vector>
// CHECK-FIXES: #include <nosync/kernels.h>

struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(4, 2))) {
    // Initialisation runs once: not a finding.
    for (auto& p : parameters()) {
      torch::nn::init::normal_(p, 0.0, 0.02);
      p.mul_(0.5);
    }
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc->forward(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

torch::Tensor grad_norm(Net& model) {
  auto total = torch::zeros({}, torch::kCUDA);
  for (const auto& p : model->parameters()) {
    // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: loop over 'model->parameters()' in 'grad_norm', which is called from a loop: a loop over parameters or a tensor list launches one tiny kernel per tensor{{.*}}; one multi-tensor launch{{.*}} [nosync-launch-loop]
    // CHECK-MESSAGES: :[[@LINE-2]]:3: note: fix-it: the loop becomes one multi-tensor reduction{{.*}}
    total += p.grad().norm().pow(2);
  }
  // CHECK-FIXES: total += nosync::kernels::l2_norm(nosync::kernels::grads_of(model->parameters())).pow(2);
  return total.sqrt();
}

void sgd_step(std::vector<torch::Tensor>& params, double lr) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: loop over 'params' in 'sgd_step', which is called from a loop: {{.*}} [nosync-launch-loop]
    // CHECK-MESSAGES: :[[@LINE-2]]:3: note: fix-it: the per-tensor update becomes one at::_foreach_* call{{.*}}
    params[i].add_(params[i].grad(), -lr);
  }
  // CHECK-FIXES: at::_foreach_add_(params, nosync::kernels::grads_of(params), -lr);
}

// A collate function pads the examples of one batch on the host, before the
// batch is moved to the device: its loop runs CPU ops and launches nothing on
// the GPU.
struct PadCollate {
  torch::Tensor operator()(std::vector<torch::data::Example<>> examples) {
    std::vector<torch::Tensor> padded;
    for (const auto& example : examples)
      padded.push_back(example.data);
    for (auto& t : padded)
      t = torch::constant_pad_nd(t, {0, 2});
    return torch::stack(padded);
  }
};

void train(Net& model, const torch::Tensor& x) {
  auto params = model->parameters();
  for (int step = 0; step < 100; ++step) {
    auto loss = model->forward(x).sum();
    loss.backward();
    auto norm = grad_norm(model);
    sgd_step(params, 0.01);
    for (auto& item : model->named_parameters()) {
      // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'model->named_parameters()' inside a loop: {{.*}} [nosync-launch-loop]
      // CHECK-MESSAGES: :[[@LINE-2]]:5: note: fix-it: the per-tensor update becomes one at::_foreach_* call{{.*}}
      item.value().grad().zero_();
    }
    // CHECK-FIXES: at::_foreach_zero_(nosync::kernels::grads_of(model->named_parameters().values()));
    // The items of named_parameters(), walked by index (a hand-written optimizer).
    auto items = model->named_parameters().items();
    for (size_t i = 0; i < items.size(); ++i) {
      // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'items' inside a loop: {{.*}} [nosync-launch-loop]
      items[i].value().mul_(0.5);
    }
    // Only metadata or flags: no kernels.
    int64_t count = 0;
    for (const auto& p : params) {
      count += p.numel();
      if (!p.grad().defined()) continue;
    }
    for (auto& p : model->parameters()) p.requires_grad_(true);
    for (auto& p : params) p.mutable_grad().reset();  // zero_grad(set_to_none): drops references only
    // A handful of tensors: two losses by a constant count, a std::array of
    // three. Written out, the same lines would launch the same kernels.
    constexpr int kLosses = 2;
    std::vector<torch::Tensor> losses{loss, loss * 2};
    for (int i = 0; i < kLosses; ++i) losses[i].mul_(0.5);
    std::array<torch::Tensor, 3> heads{x, x, x};
    for (auto& h : heads) h.add_(1);
    // Not a tensor list.
    std::vector<int> sizes{1, 2, 3};
    for (int s : sizes) count += s;
    (void)norm;
    (void)count;
  }
}

// In a template, an update's operand may wait for a template parameter
// (`grads` from a dependent call): the loop still launches per tensor.
template <typename GradFn> void leapfrog(std::vector<torch::Tensor>& momentum, GradFn grad_fn, int steps) {
  for (int s = 0; s < steps; ++s) {
    auto grads = grad_fn(momentum);
    for (size_t i = 0; i < momentum.size(); ++i)
      // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: loop over 'momentum' inside a loop: {{.*}} [nosync-launch-loop]
      momentum.at(i) = momentum.at(i) + grads.at(i) * 0.5;
  }
}

// A request loop over the batch's token tensors whose body builds host
// tensors only (the model runs on the CPU tokens): nothing launches on the GPU.
std::vector<torch::Tensor> generate(const std::vector<torch::Tensor>& inputs, int steps) {
  std::vector<torch::Tensor> out;
  for (int r = 0; r < 100; ++r)
    for (const auto& input : inputs) {
      const int64_t* tokens = input.data_ptr<int64_t>();
      std::vector<torch::Tensor> generated;
      for (int s = 0; s < steps; ++s) generated.push_back(torch::tensor(tokens[0] + s, torch::kLong));
      out.push_back(torch::stack(generated));
    }
  return out;
}

int main() {
  Net model;
  model->to(torch::kCUDA);
  // A one-off pass over the buffers in main(): runs once.
  for (auto& b : model->buffers()) b.fill_(0);
  train(model, torch::randn({8, 4}, torch::kCUDA));
  return 0;
}
