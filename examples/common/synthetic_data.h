// Synthetic classification data shared by the hazard program and its fixed
// twin, so both see exactly the same batches for the same seed.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace examples {

struct Batch {
  torch::Tensor x;  // [batch, features], float, host memory
  torch::Tensor y;  // [batch], int64 class ids, host memory
};

// A learnable task: the class is the index of the largest of the first
// `classes` features, so the loss must fall when training works.
inline std::vector<Batch> make_dataset(int64_t batches, int64_t batch_size, int64_t features,
                                       int64_t classes, uint64_t seed,
                                       bool pinned = false) {
  torch::manual_seed(seed);
  std::vector<Batch> data;
  data.reserve(batches);
  for (int64_t b = 0; b < batches; ++b) {
    torch::Tensor x = torch::randn({batch_size, features});
    torch::Tensor y = x.narrow(1, 0, classes).argmax(1);
    if (pinned) {  // Tensor::to(options) ignores pinned_memory: pin explicitly
      x = x.pin_memory();
      y = y.pin_memory();
    }
    data.push_back({x, y});
  }
  return data;
}

}  // namespace examples
