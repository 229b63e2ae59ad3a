// Fixture for nosync-pageable-h2d in templates. A trainer templated on its
// task has batches whose type depends on a template parameter: the compiler
// leaves `batch.data.to(device)` unresolved until instantiation, and a header
// linted alone has none. The check reads such calls from their text, like
// dropped code (DroppedCode.h: dependentCalls). Where an instantiation
// resolved the call, the matchers decide it with its types, once.
#include <torch/torch.h>

#include <vector>
// CHECK-FIXES: #include <nosync/kernels.h>

template <typename Task> class Trainer {
public:
  using Example = typename Task::Example;

  void train(torch::nn::Linear& model, torch::Device device, std::vector<Example>& batches) {
    for (auto& batch : batches) {
      auto data = batch.data.to(device);
      // CHECK-MESSAGES: :[[@LINE-1]]:30: warning: 'to()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-pageable-h2d]
      auto target = batch.target.to(device, /*non_blocking=*/true);
      auto half = batch.data.to(torch::kHalf);
      model->forward(data + target + half);
    }
  }
};

// Instantiated below: found once, on the instantiation's types.
template <typename Batch> void fit(torch::nn::Linear& model, torch::Device device, std::vector<Batch>& batches) {
  // CHECK-FIXES: nosync::kernels::PinnedStager data_stager(device);
  for (auto& batch : batches) {
    auto data = batch.to(device);
    // CHECK-FIXES: auto data = data_stager.stage(batch);
    // CHECK-MESSAGES: :[[@LINE-2]]:23: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    model->forward(data);
  }
}

void run(torch::nn::Linear& model, std::vector<torch::Tensor>& batches) {
  fit(model, torch::Device(torch::kCUDA), batches);
}

// A training pass nobody instantiates in this unit (a header's template): its
// step is read from the template's own calls, `loss.backward()` and
// `opt.zero_grad()` on types that wait for its parameters, so the unit
// trains...
template <typename Loader, typename Optimizer>
void train_epochs(torch::nn::Linear& model, Loader& loader, Optimizer& opt) {
  for (int epoch = 0; epoch < 10; ++epoch) {
    for (auto& batch : loader) {
      auto data = batch.data.to(torch::kCUDA);
      // CHECK-MESSAGES: :[[@LINE-1]]:30: warning: 'to()' (on a type that depends on a template parameter, read from its text) inside a loop: {{.*}} [nosync-pageable-h2d]
      auto loss = (model->forward(data) - batch.target).pow(2).mean();
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
  }
}

// ...and a loop that does not train, in a function main() calls once, is an
// evaluation pass: it runs once.
float evaluate(torch::nn::Linear& model, std::vector<torch::Tensor>& batches) {
  torch::Tensor total = torch::zeros({1});
  for (auto& batch : batches) {
    auto data = batch.to(torch::kCUDA);
    // CHECK-MESSAGES: :[[@LINE-1]]:23: remark: 'to()' to the GPU without non_blocking in one-off setup/export code: {{.*}} [nosync-pageable-h2d]
    total = total + model->forward(data).sum();
  }
  return total.sum().item<float>();
}

int main() {
  torch::nn::Linear model(3, 1);
  std::vector<torch::Tensor> batches;
  return evaluate(model, batches) > 0;
}
