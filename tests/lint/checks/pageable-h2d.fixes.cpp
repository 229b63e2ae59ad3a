// Fixture for nosync-pageable-h2d's fix-it: `.to(device)` of host data in a
// loop goes through a nosync::kernels::PinnedStager declared before the loop.
#include <torch/torch.h>

#include <vector>
// CHECK-FIXES: #include <nosync/kernels.h>

void train(torch::nn::Linear& model, const std::vector<torch::Tensor>& inputs, torch::Device device) {
  // CHECK-FIXES: nosync::kernels::PinnedStager x_stager(device);
  for (size_t step = 0; step < 100; ++step) {
    torch::Tensor x = inputs[step % inputs.size()].to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:52: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-MESSAGES: :[[@LINE-2]]:52: note: fix-it: a nosync::kernels::PinnedStager declared before the loop stages the copy{{.*}}
    // CHECK-FIXES: torch::Tensor x = x_stager.stage(inputs[step % inputs.size()]);
    model->forward(x).sum().backward();
  }
}

void train_on(torch::nn::Linear& model, const std::vector<torch::Tensor>& inputs) {
  for (size_t step = 0; step < 100; ++step) {
    // Left as notes: a device chosen inside the loop, a copy that also
    // converts the dtype, and .cuda().
    torch::Device device(torch::kCUDA, static_cast<int>(step % 2));
    torch::Tensor x = inputs[step % inputs.size()].to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:52: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-MESSAGES: :[[@LINE-2]]:52: note: allocate the host tensor pinned once{{.*}}
    // CHECK-FIXES: torch::Tensor x = inputs[step % inputs.size()].to(device);
    torch::Tensor h = inputs[0].to(device, torch::kHalf);
    // CHECK-MESSAGES: :[[@LINE-1]]:33: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-FIXES: torch::Tensor h = inputs[0].to(device, torch::kHalf);
    torch::Tensor c = inputs[0].cuda();
    // CHECK-MESSAGES: :[[@LINE-1]]:33: warning: 'cuda()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-FIXES: torch::Tensor c = inputs[0].cuda();
    model->forward(x + h.to(torch::kFloat) + c).sum().backward();
  }
}
