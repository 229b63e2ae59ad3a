// Fixture for nosync-item: reading tensor elements on the host.
#include <torch/torch.h>

#include <cstdint>
#include <iostream>

namespace {

// Not a tensor: its item() is the user's own and never syncs.
struct Meter {
  float item() const { return value; }
  float value = 0;
};

float read_loss(const torch::Tensor& loss) {
  return loss.item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: 'item()' in 'read_loss', which is called from a loop: Tensor::item() copies a device scalar to the host{{.*}}; keep the value on the device {{.*}} [nosync-item]
}

template <typename T>
T read_as(const torch::Tensor& t) {
  return t.template item<T>();
  // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'item()' in 'read_as', which is called from a loop: {{.*}} [nosync-item]
}

// Never called from a loop in this file: the catalog's default severity.
float unknown_caller(const torch::Tensor& t) {
  return t.item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'item()': Tensor::item() copies {{.*}} [nosync-item]
}

}  // namespace

void train(torch::nn::Linear& model, const torch::Tensor& x, const torch::Tensor& y) {
  float running = 0;
  float buffer[4] = {1, 2, 3, 4};
  for (int step = 0; step < 100; ++step) {
    auto loss = torch::mse_loss(model->forward(x), y);
    running += loss.item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    // CHECK-MESSAGES: :[[@LINE-2]]:21: note: accumulate on the device instead: keep a tensor accumulator (acc += loss.detach()) and call .item() once after the loop
    double as_double = loss.item().toDouble();
    // CHECK-MESSAGES: :[[@LINE-1]]:29: warning: 'item().toDouble()' inside a loop: {{.*}} [nosync-item]
    // CHECK-FIXES: double as_double = loss.item<double>();
    int64_t as_long = loss.item().toLong();
    // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item().toLong()' inside a loop: {{.*}} [nosync-item]
    // CHECK-FIXES: int64_t as_long = loss.item<int64_t>();
    torch::Scalar scalar = loss.item();
    // CHECK-MESSAGES: :[[@LINE-1]]:33: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    float chained = loss
                        .mean()
                        .item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    float first = loss.cpu().data_ptr<float>()[0];
    // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'cpu()' to read one element inside a loop: {{.*}} [nosync-item]
    // CHECK-MESSAGES: :[[@LINE-2]]:24: note: this copies the whole tensor to read one element{{.*}}
    float deref = *loss.to(torch::kCPU).data_ptr<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: 'to()' to read one element inside a loop: {{.*}} [nosync-item]
    running += read_loss(loss) + read_as<float>(loss);

    // Throttled logging is low severity; the second read of the same value in
    // the statement is a duplicate note, not a second finding.
    if (step % 10 == 0) {
      std::cout << loss.item<float>() << " " << loss.item<float>() << "\n";
      // CHECK-MESSAGES: :[[@LINE-1]]:25: remark: 'item()' in throttled code (runs every N-th iteration): {{.*}} [nosync-item]
      // CHECK-MESSAGES: :[[@LINE-2]]:54: note: 'item()' synchronizes on 'loss' again in this statement; read it once into a local and reuse it
    }

    // Tensors provably on the CPU: no sync, no finding.
    auto host = torch::zeros({4});
    running += host.sum().item<float>();
    auto typed = torch::ones({2}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCPU));
    running += typed.max().item<float>();
    auto blob = torch::from_blob(buffer, {4});
    running += blob.mean().item<float>();
    // A host copy made here of a value that may be on the GPU: the read is the
    // sync, reported once, as an item read (not also as a device-to-host copy).
    running += loss.cpu().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:27: warning: 'item()' inside a loop: {{.*}} [nosync-item]
    // Moved to the GPU later: no longer provably on the CPU.
    auto moved = torch::zeros({4});
    moved = moved.to(torch::kCUDA);
    running += moved.sum().item<float>();
    // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: 'item()' inside a loop: {{.*}} [nosync-item]

    // Not a tensor.
    Meter meter;
    running += meter.item();
    // Decides control flow: reported by nosync-bool-condition instead.
    if (loss.item<float>() > 1e3f) break;
  }
  std::cout << running << "\n";
}

int main() {
  torch::nn::Linear model(3, 1);
  auto x = torch::randn({8, 3}, torch::kCUDA);
  // main() outside its loops runs once: low severity.
  std::cout << x.norm().item<float>() << "\n";
  // CHECK-MESSAGES: :[[@LINE-1]]:25: remark: 'item()' in one-off setup/export code: {{.*}} [nosync-item]
  train(model, x, x.sum(1));
  return 0;
}
