// Fixture for nosync-pageable-h2d: blocking host-to-device copies.
#include <torch/torch.h>
// CHECK-FIXES: #include <nosync/kernels.h>

#include <vector>

// The minibatch buffer comes from elsewhere: not known to be on the CPU,
// and in training code the GPU buffer a batch is assembled in. Host rows
// written into it are the same staged copy.
void fill_minibatch(torch::Tensor& minibatch, std::vector<float>& rows) {
  for (int64_t i = 0; i < minibatch.size(0); ++i) {
    auto row = torch::from_blob(rows.data() + 3 * i, {3});
    minibatch[i] = row;
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: assigning a host tensor into a GPU tensor ('dst[i] = src' copies) inside a loop: {{.*}} [nosync-pageable-h2d]
    minibatch.select(0, i).copy_(row);
    // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'copy_()' from host memory into a GPU tensor inside a loop: {{.*}} [nosync-pageable-h2d]
  }
}

// Frames kept as host tensors in a vector: their stack is on the CPU, and
// writing it into the observation buffer is the same staged copy.
void store_frames(torch::Tensor& observations, std::vector<float>& pixels) {
  std::vector<torch::Tensor> frames;
  for (int64_t i = 0; i < 4; ++i)
    frames.push_back(torch::from_blob(pixels.data() + 3 * i, {3}));
  for (int64_t step = 0; step < 8; ++step)
    observations.select(0, step).copy_(torch::stack(frames, 0));
    // CHECK-MESSAGES: :[[@LINE-1]]:34: warning: 'copy_()' from host memory into a GPU tensor inside a loop: {{.*}} [nosync-pageable-h2d]
}

void train(torch::nn::Linear& model, torch::Device device, const torch::Tensor& batch, const torch::Tensor& labels) {
  auto staging = torch::empty({8, 3}, torch::TensorOptions().pinned_memory(true));
  auto on_gpu = torch::zeros({8, 3}, torch::TensorOptions().device(torch::kCUDA));
  // CHECK-FIXES: nosync::kernels::PinnedStager x_stager(device);
  for (int step = 0; step < 100; ++step) {
    auto x = batch.to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'to()' to the GPU without non_blocking inside a loop: a host-to-device copy from pageable memory is staged{{.*}}; stage through pinned memory{{.*}} [nosync-pageable-h2d]
    // CHECK-MESSAGES: :[[@LINE-2]]:20: note: fix-it: a nosync::kernels::PinnedStager declared before the loop{{.*}}
    // CHECK-FIXES: auto x = x_stager.stage(batch);
    auto y = labels.cuda();
    // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'cuda()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    auto ones = torch::ones({8, 1}).to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:37: warning: 'ones(...).to()' builds the tensor on the CPU and copies it inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-FIXES: auto ones = torch::ones({8, 1}, device);
    auto idx = torch::arange(8, torch::kLong).to(torch::kCUDA);
    // CHECK-MESSAGES: :[[@LINE-1]]:47: warning: 'arange(...).to()' builds the tensor on the CPU and copies it inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-FIXES: auto idx = torch::arange(8, at::TensorOptions(torch::kLong).device(torch::kCUDA));
    auto noise = torch::randn({8, 1}).to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:39: warning: 'randn(...).to()' builds the tensor on the CPU and copies it inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-MESSAGES: :[[@LINE-2]]:39: note: create it on the device: pass the device in the factory's options (randn(..., torch::TensorOptions().device(device))){{.*}}
    auto host = torch::rand({8, 3});
    auto z = host.to(device, /*non_blocking=*/true);
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'to()' to the GPU from pageable memory inside a loop: {{.*}} [nosync-pageable-h2d]
    on_gpu.copy_(host);
    // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'copy_()' from host memory into a GPU tensor inside a loop: {{.*}} [nosync-pageable-h2d]
    on_gpu[0] = host[0];
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: assigning a host tensor into a GPU tensor ('dst[i] = src' copies) inside a loop: {{.*}} [nosync-pageable-h2d]
    // Host to host, a scalar fill, and rebinding a name: no upload.
    staging[1] = host[1];
    on_gpu[1] = 0.0;

    // The recommended pattern: pinned staging + non_blocking.
    staging.copy_(batch);
    auto fast = staging.to(device, /*non_blocking=*/true);
    on_gpu.copy_(staging, /*non_blocking=*/true);
    // Not host-to-device: dtype changes, moves to the CPU, GPU tensors, modules.
    auto half = x.to(torch::kHalf);
    auto back = on_gpu.to(torch::kCPU);
    auto again = on_gpu.to(device);
    model->to(device);
    // A tensor of no elements moves no bytes.
    auto reset = torch::tensor({}).to(device);
    auto one = torch::tensor({1.0}).to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:37: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    auto out = model->forward(x) + ones + noise + y.to(torch::kFloat) + idx.to(torch::kFloat) + z + fast;
    // A *_like factory is made where its argument is: a model output's twin
    // is already on the device; a host tensor's twin is uploaded.
    auto target = torch::ones_like(out).to(device);
    auto host_twin = torch::zeros_like(host).to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:46: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    // A tensor's options carry its device: to(options) of a host tensor is an
    // upload; of a tensor whose place is unknown, an alignment (as to(t.device())).
    auto gpu_options = on_gpu.options();
    auto host_up = host.to(gpu_options);
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    auto aligned = out.to(gpu_options);
    (void)half, (void)back, (void)again, (void)out, (void)target, (void)host_twin, (void)host_up, (void)aligned;
  }
}

// The usual way to pick the device: the CPU unless CUDA is there. A device
// variable that is ever set to CUDA is the GPU.
void train_picked(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  torch::Device picked = torch::kCPU;
  if (torch::cuda::is_available()) {
    picked = torch::kCUDA;
  }
  torch::Device cpu_only = torch::kCPU;
  // CHECK-FIXES: nosync::kernels::PinnedStager x_stager(picked);
  for (const auto& batch : batches) {
    auto x = batch.to(picked);
    // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-FIXES: auto x = x_stager.stage(batch);
    auto y = batch.to(cpu_only);
    model->forward(x);
    (void)y;
  }
}

// Helpers of the file are placed by what they return: make_window builds its
// tensor on the CPU; where model_output's result lives the file does not say.
torch::Tensor make_window(int n) { return torch::ones({n, n}) / (n * n); }
torch::Tensor model_output(torch::nn::Linear& model, const torch::Tensor& x) { return model->forward(x); }

void blur(torch::nn::Linear& model, const torch::Tensor& img, const torch::Tensor& x) {
  for (int step = 0; step < 10; ++step) {
    torch::Tensor window = make_window(3);
    // The `window` read here still holds make_window's CPU tensor.
    window = window.to(img.device());
    // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    torch::Tensor out = model_output(model, x);
    out = out.to(img.device());
    (void)window, (void)out;
  }
}

// A tensor already moved to `device`, and a module's output on it, are there:
// moving them again copies nothing.
void predict(torch::nn::Linear& model, torch::nn::LSTM& lstm, const torch::Tensor& x, torch::Device device) {
  for (int step = 0; step < 10; ++step) {
    torch::Tensor in = x.to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    torch::Tensor again = in.to(device);
    torch::Tensor out = model(in).to(device);
    auto state = std::get<1>(lstm->forward(in.unsqueeze(0)));
    torch::Tensor hidden = std::get<0>(state).to(device);
    (void)again, (void)out, (void)hidden;
  }
}

// torch::tensor of host values with a device in its options gathers them on
// the host and copies them up (a braced list of one value too); with a dtype
// only, or the CPU, they stay there.
void decode_tokens(const std::vector<int64_t>& ids, torch::Device device) {
  for (int step = 0; step < 10; ++step) {
    auto tokens = torch::tensor(ids, torch::dtype(torch::kLong).device(device));
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'tensor(...)' with a device gathers the values on the host and copies them to the GPU from pageable memory inside a loop: {{.*}} [nosync-pageable-h2d]
    auto eot = torch::tensor({int64_t{50256}}, device);
    // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: 'tensor(...)' with a device {{.*}} inside a loop: {{.*}} [nosync-pageable-h2d]
    auto host_ids = torch::tensor(ids, torch::kLong);
    auto cpu_ids = torch::tensor(ids, torch::TensorOptions().device(torch::kCPU));
    // One scalar (not a list) is at::scalar_tensor: filled on the device, no copy.
    auto loss_sum = torch::tensor(0.0f, device);
    auto bias = torch::tensor(static_cast<double>(step), torch::dtype(torch::kFloat).device(device));
    // No values at all: nothing to gather or copy.
    auto none = torch::tensor({}, torch::TensorOptions().device(device));
    (void)tokens, (void)eot, (void)host_ids, (void)cpu_ids, (void)loss_sum, (void)bias, (void)none;
  }
}

// A module's output is made where the module's weights are: moving it to
// the device the module was moved to copies nothing, wherever `frames` is.
void score(torch::nn::Linear& model, const torch::Tensor& frames, torch::Device device) {
  for (int i = 0; i < 10; ++i) {
    auto logits = model->forward(frames).select(0, 0).to(device);
    (void)logits;
  }
}

// A host staging tensor filled row by row, then moved to the device after
// the loop: the rows are host-to-host copies (the loop never sees the
// reassignment); the move is the upload.
torch::Tensor stack_rows(std::vector<std::vector<float>>& rows, torch::Device device) {
  auto options = torch::TensorOptions().dtype(torch::kFloat);
  torch::Tensor stacked = torch::empty({static_cast<int64_t>(rows.size()), 3}, options);
  for (size_t i = 0; i < rows.size(); ++i)
    stacked[i] = torch::from_blob(rows[i].data(), {3}, options).clone();
  stacked = stacked.to(device);
  // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'to()' to the GPU without non_blocking: {{.*}} [nosync-pageable-h2d]
  return stacked;
}

// A module's own to(Device), moving its plain tensors with its parameters:
// setup, like the model->to(device) it stands for, whoever calls it.
struct PolicyImpl : torch::nn::Module {
  torch::Tensor low_ = torch::full({2}, -1.0);
  void to(torch::Device device) {
    torch::nn::Module::to(device);
    low_ = low_.to(device);
    // CHECK-MESSAGES: :[[@LINE-1]]:17: remark: 'to()' to the GPU without non_blocking in one-off setup/export code: {{.*}} [nosync-pageable-h2d]
  }
};

int main() {
  torch::Device device(torch::kCUDA);
  torch::nn::Linear model(3, 1);
  model->to(device);
  // Setup data moved once in main(): low severity.
  auto batch = torch::randn({8, 3}).to(device);
  // CHECK-MESSAGES: :[[@LINE-1]]:37: remark: 'randn(...).to()' builds the tensor on the CPU and copies it in one-off setup/export code: {{.*}} [nosync-pageable-h2d]
  model->forward(batch);
  // train() is given host tensors: its uploads are real.
  train(model, device, torch::randn({8, 3}), torch::zeros({8, 1}));
  torch::nn::LSTM lstm(1, 4);
  predict(model, lstm, torch::randn({8, 3}), device);
  decode_tokens({1, 2, 3}, device);
  return 0;
}

// x.to(other) goes where `other` is, with its dtype: a CPU factory sent to a
// tensor not known to be on the CPU is an upload, made on the device with
// other's options instead. Between two CPU tensors, or from a tensor we cannot
// place, it is not. The same holds for other's options given to a factory.
void ray_bundle(const torch::Tensor& pose, const torch::Tensor& grid, int64_t width) {
  auto host_grid = torch::zeros({width});
  for (int frame = 0; frame < 90; ++frame) {
    auto ii = torch::arange(width).to(pose);
    // CHECK-MESSAGES: :[[@LINE-1]]:36: warning: 'arange(...).to()' builds the tensor on the CPU and copies it inside a loop: {{.*}} [nosync-pageable-h2d]
    // CHECK-FIXES: auto ii = torch::arange(width, pose.options());
    auto jitter = torch::rand({width}).to(pose);
    // CHECK-MESSAGES: :[[@LINE-1]]:40: warning: 'rand(...).to()' builds the tensor on the CPU and copies it inside a loop: {{.*}} [nosync-pageable-h2d]
    auto on_host = torch::arange(width).to(host_grid);
    auto aligned = grid.to(pose);
    // Values gathered from a host vector with another tensor's options go
    // where that tensor is.
    std::vector<float> legal(width, 1.f);
    auto mask = torch::tensor(legal, pose.options());
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'tensor(...)' with a device {{.*}} inside a loop: {{.*}} [nosync-pageable-h2d]
    auto host_mask = torch::tensor(legal, host_grid.options());
    // Options that set only a dtype (torch::dtype is c10's) leave a factory
    // on the CPU; a window function is a factory like arange.
    auto lengths = torch::tensor({width}, torch::dtype(torch::kInt32)).to(pose.device());
    // CHECK-MESSAGES: :[[@LINE-1]]:72: warning: 'to()' to the GPU without non_blocking inside a loop: {{.*}} [nosync-pageable-h2d]
    auto window = torch::hann_window(400, true, torch::TensorOptions().dtype(torch::kFloat32)).to(pose.device());
    // CHECK-MESSAGES: :[[@LINE-1]]:96: warning: 'hann_window(...).to()' builds the tensor on the CPU and copies it inside a loop: {{.*}} [nosync-pageable-h2d]
    (void)ii, (void)jitter, (void)on_host, (void)aligned, (void)mask, (void)host_mask, (void)lengths, (void)window;
  }
}
