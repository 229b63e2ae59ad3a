// Fixture for nosync-pageable-h2d in copies written with the CUDA runtime
// API: cudaMemcpy from the host always returns only once the copy is done;
// cudaMemcpyAsync does when the source is pageable memory the source code
// shows (a std::vector's data()), not when it is pinned or not known.
#include <torch/torch.h>

#include <cuda_runtime_api.h>

#include <vector>

void feed_inputs(void* device_in, const float* pinned, std::vector<float>& frame, cudaStream_t stream,
                 int steps) {
  for (int step = 0; step < steps; ++step) {
    cudaMemcpy(device_in, frame.data(), frame.size() * sizeof(float), cudaMemcpyHostToDevice);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'cudaMemcpy()' from the host to the device inside a loop: {{.*}} [nosync-pageable-h2d]
    cudaMemcpyAsync(device_in, &frame[0], frame.size() * sizeof(float), cudaMemcpyHostToDevice, stream);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'cudaMemcpyAsync()' from pageable host memory to the device inside a loop: {{.*}} [nosync-pageable-h2d]
    cudaMemcpyAsync(device_in, pinned, frame.size() * sizeof(float), cudaMemcpyHostToDevice, stream);
  }
}
