// Fixture for nosync-explicit-sync: explicit device/stream/event synchronizes.
#include <torch/torch.h>

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

namespace {

void step(torch::Tensor& x) {
  x.mul_(2);
  torch::cuda::synchronize();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'torch::cuda::synchronize()' in 'step', which is called from a loop: an explicit device, stream or event synchronize{{.*}}; remove it, or order work{{.*}} [nosync-explicit-sync]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: note: remove it: {{.*}}time with CUDA events{{.*}}
}

// Not a synchronize of CUDA's: a user's own function of the same name.
namespace mylib {
void synchronize() {}
}  // namespace mylib

}  // namespace

void train(torch::Tensor x) {
  auto stream = c10::cuda::getCurrentCUDAStream();
  for (int i = 0; i < 100; ++i) {
    step(x);
    stream.synchronize();
    // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'CUDAStream::synchronize()' inside a loop: {{.*}} [nosync-explicit-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:12: note: order the streams on the device instead: {{.*}}cudaStreamWaitEvent{{.*}}
    cudaDeviceSynchronize();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'cudaDeviceSynchronize()' inside a loop: {{.*}} [nosync-explicit-sync]
    cudaStreamSynchronize(stream.stream());
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'cudaStreamSynchronize()' inside a loop: {{.*}} [nosync-explicit-sync]
    c10::cuda::device_synchronize();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'c10::cuda::device_synchronize()' inside a loop: {{.*}} [nosync-explicit-sync]
    at::cuda::CUDAEvent done;
    done.record(stream);
    done.synchronize();
    // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: 'CUDAEvent::synchronize()' inside a loop: {{.*}} [nosync-explicit-sync]
    // CHECK-MESSAGES: :[[@LINE-2]]:10: note: order the streams on the device instead: {{.*}}
    mylib::synchronize();
  }
  // After the loop of a train() that main() calls once: low severity.
  torch::cuda::synchronize();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: remark: 'torch::cuda::synchronize()' in one-off setup/export code: {{.*}} [nosync-explicit-sync]
}

// A CUDA-graph capture runs once per graph, even where a loop reaches it
// (captured lazily on the first step): the synchronizes around its warm-up
// are one-off; the replay is what runs every step.
void capture_step(std::unique_ptr<at::cuda::CUDAGraph>& graph, torch::Tensor& x) {
  torch::cuda::synchronize();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: remark: 'torch::cuda::synchronize()' in one-off setup/export code: {{.*}} [nosync-explicit-sync]
  graph = std::make_unique<at::cuda::CUDAGraph>();
  graph->capture_begin();
  x.mul_(2);
  graph->capture_end();
}

void run_steps(torch::Tensor& x) {
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  for (int step = 0; step < 10; ++step) {
    if (!graph)
      capture_step(graph, x);
    graph->replay();
  }
}

// An entry point nothing here calls (a serving engine's per-step
// execute_model(), a framework's callback): its callers are elsewhere, so
// its synchronize is reported like a sync in any code of unknown heat.
void execute_model(at::cuda::CUDAStream stream) {
  stream.synchronize();
  // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: 'CUDAStream::synchronize()': an explicit {{.*}} [nosync-explicit-sync]
}

int main() {
  train(torch::ones({4}, torch::kCUDA));
  return 0;
}
