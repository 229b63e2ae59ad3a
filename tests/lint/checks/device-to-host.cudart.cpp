// Fixture for nosync-device-to-host in copies written with the CUDA runtime
// API, as TensorRT bindings do: cudaMemcpy to the host always waits;
// cudaMemcpyAsync waits when the destination is pageable memory the source
// shows (a std::vector's data(), a local array), not when it is pinned or
// not known.
#include <torch/torch.h>

#include <cuda_runtime_api.h>

#include <vector>

void read_outputs(void* device_out, float* pinned, cudaStream_t stream, int steps) {
  std::vector<float> scores(16);
  float logits[16];
  for (int step = 0; step < steps; ++step) {
    cudaMemcpyAsync(scores.data(), device_out, sizeof(logits), cudaMemcpyDeviceToHost, stream);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'cudaMemcpyAsync()' into pageable host memory inside a loop: {{.*}} [nosync-device-to-host]
    cudaMemcpy(logits, device_out, sizeof(logits), cudaMemcpyDeviceToHost);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'cudaMemcpy()' from the device to the host inside a loop: {{.*}} [nosync-device-to-host]
    cudaMemcpyAsync(pinned, device_out, sizeof(logits), cudaMemcpyDeviceToHost, stream);
    cudaMemcpy(device_out, logits, sizeof(logits), cudaMemcpyDeviceToDevice);
  }
}
