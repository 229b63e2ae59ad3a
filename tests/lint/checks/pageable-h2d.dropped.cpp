// Fixture for nosync-pageable-h2d in code the compiler dropped (see
// item.dropped.cpp): a `.to(...)` read from text is an upload when it names a
// device and does not ask for non_blocking; a dtype conversion is nothing.
#include <torch/torch.h>

void train(torch::nn::Linear& model, torch::Device device) {
  auto loader = make_loader("data/");
  // CHECK-MESSAGES: :[[@LINE-1]]:17: error: use of undeclared identifier 'make_loader' [clang-diagnostic-error]
  for (auto& batch : *loader) {
    auto x = batch.data.to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'to()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-pageable-h2d]
    auto y = batch.target.to(device, /*non_blocking=*/true);
    auto z = batch.data.to(torch::kFloat);
    auto w = batch.data.cuda();
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'cuda()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-pageable-h2d]
    // Made where the model output is: not read as an upload.
    auto target = torch::ones_like(model->forward(x)).to(device);
    auto v = torch::zeros({2}).to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:32: warning: 'to()' (in a statement that did not compile, read from its text) inside a loop: {{.*}} [nosync-pageable-h2d]
    model->forward(x + y + z + w + target + v);
  }
}
