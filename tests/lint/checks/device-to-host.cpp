// Fixture for nosync-device-to-host: blocking copies to the CPU.
#include <torch/torch.h>

#include <vector>

std::vector<float> collect(torch::nn::Linear& model, const torch::Tensor& x, torch::Device device) {
  std::vector<float> out;
  auto pinned = torch::empty({8}, torch::TensorOptions().pinned_memory(true));
  auto host_buffer = torch::empty({8, 1});
  auto on_device = torch::ones({8, 1}, torch::kCUDA);
  for (int step = 0; step < 10; ++step) {
    auto pred = model->forward(x);
    auto a = pred.cpu();
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'cpu()' to the CPU inside a loop: copying a CUDA tensor to the CPU{{.*}}; accumulate on the device and copy once{{.*}} [nosync-device-to-host]
    // CHECK-MESSAGES: :[[@LINE-2]]:19: note: if the host needs the values this step, batch them into one copy (torch::stack({...}).cpu()){{.*}}
    auto b = pred.to(torch::kCPU);
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'to()' to the CPU inside a loop: {{.*}} [nosync-device-to-host]
    auto c = pred.to("cpu");
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'to()' to the CPU inside a loop: {{.*}} [nosync-device-to-host]
    auto d = pred.to(at::Device(at::kCPU));
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'to()' to the CPU inside a loop: {{.*}} [nosync-device-to-host]
    auto e = pred.to(torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCPU));
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'to()' to the CPU inside a loop: {{.*}} [nosync-device-to-host]
    host_buffer.copy_(pred);
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'copy_()' into a CPU tensor inside a loop: {{.*}} [nosync-device-to-host]
    host_buffer[0] = on_device[0];
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: assigning a GPU tensor into a CPU tensor ('dst[i] = src' copies) inside a loop: {{.*}} [nosync-device-to-host]
    // A module's output is where its input is: x is on the GPU (see main()).
    host_buffer[1] = pred[1];
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: assigning a GPU tensor into a CPU tensor ('dst[i] = src' copies) inside a loop: {{.*}} [nosync-device-to-host]
    // A source not known to be on the GPU: host data assembled on the host, as
    // often as not. Rebinding a name and filling with a scalar copy nothing.
    host_buffer[3] = model->weight[0];
    auto rebound = host_buffer;
    rebound = on_device;
    host_buffer[2] = 0.5;

    // Not copies to the host: dtype conversions, moves to the device, modules.
    auto f = pred.to(torch::kF32);
    auto g = pred.to(torch::TensorOptions().dtype(torch::kHalf));
    auto h = pred.to(device);
    model->to(torch::kCPU);
    // Already asynchronous (the reader must wait on an event; not a sync here).
    pinned.copy_(pred.view({8}), /*non_blocking=*/true);
    // Into a pinned buffer from an unknown source: likely host staging. (Not
    // from x: every call of collect() passes a CUDA tensor.)
    pinned.copy_(model->weight.view({-1}).repeat({3}).narrow(0, 0, 8));
    auto i = pred.to(torch::kCPU, /*non_blocking=*/true);
    // Host tensors: no copy at all; also those kept in a vector of host tensors.
    auto j = host_buffer.cpu();
    std::vector<torch::Tensor> host_rows(2, torch::zeros({4}));
    host_rows.push_back(torch::ones({4}));
    auto k = torch::cat(host_rows).to(torch::kCPU);
    // One element read: nosync-item reports it.
    out.push_back(pred.cpu().data_ptr<float>()[0]);
    (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)i, (void)j, (void)k, (void)rebound;
  }
  return out;
}

// A trainer keeps a CPU device beside the training one as a const member: a
// copy to it is a download.
struct Trainer {
  const torch::Device cpu = torch::kCPU;
  torch::nn::Linear policy{3, 1};

  std::vector<torch::Tensor> act(const std::vector<torch::Tensor>& observations) {
    std::vector<torch::Tensor> actions;
    for (const auto& obs : observations) {
      actions.push_back(policy->forward(obs).to(cpu));
      // CHECK-MESSAGES: :[[@LINE-1]]:46: warning: 'to()' to the CPU inside a loop: {{.*}} [nosync-device-to-host]
    }
    return actions;
  }
};

int main() {
  torch::nn::Linear model(3, 1);
  torch::Device device(torch::kCUDA);
  auto x = torch::randn({8, 3}, device);
  auto result = collect(model, x, device);
  // Exporting once at the end: low severity.
  auto weights = model->weight.cpu();
  // CHECK-MESSAGES: :[[@LINE-1]]:32: remark: 'cpu()' to the CPU in one-off setup/export code: {{.*}} [nosync-device-to-host]
  return result.empty() ? 1 : 0;
}
