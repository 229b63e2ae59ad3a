// Command line shared by the example training programs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

namespace examples {

struct TrainOptions {
  int steps = 40;
  std::string device = "auto";
  uint64_t seed = 0;
  int64_t depth = 72;  // 72 blocks -> 292 parameter tensors
  int64_t width = 256;
  int64_t batch = 256;
  int log_every = 10;
  bool assert_sync_free = false;  // train_fixed, train_graphed
  bool plant_sync = false;        // train_graphed only: an item() inside the captured step
};

inline void usage_and_exit(const char* prog, int code) {
  std::cerr << "usage: " << prog
            << " [--steps N] [--device cpu|cuda|auto] [--seed S] [--depth D] [--width W]"
               " [--batch B] [--log-every K]\n";
  std::exit(code);
}

inline TrainOptions parse_train_options(int argc, char** argv) {
  TrainOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") usage_and_exit(argv[0], 0);
    if (i + 1 >= argc) {
      std::cerr << argv[0] << ": " << a << " needs a value\n";
      usage_and_exit(argv[0], 2);
    }
    std::string v = argv[++i];
    try {
      if (a == "--steps") o.steps = std::stoi(v);
      else if (a == "--device") o.device = v;
      else if (a == "--seed") o.seed = std::stoull(v);
      else if (a == "--depth") o.depth = std::stoll(v);
      else if (a == "--width") o.width = std::stoll(v);
      else if (a == "--batch") o.batch = std::stoll(v);
      else if (a == "--log-every") o.log_every = std::stoi(v);
      else if (a == "--assert-sync-free") o.assert_sync_free = std::stoi(v) != 0;
      else if (a == "--plant-sync") o.plant_sync = std::stoi(v) != 0;
      else usage_and_exit(argv[0], 2);
    } catch (const std::exception&) {
      std::cerr << argv[0] << ": bad value '" << v << "' for " << a << "\n";
      std::exit(2);
    }
  }
  if (o.device != "cpu" && o.device != "cuda" && o.device != "auto") usage_and_exit(argv[0], 2);
  if (o.steps < 1 || o.log_every < 1) usage_and_exit(argv[0], 2);
  return o;
}

inline torch::Device pick_device(const TrainOptions& o) {
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    std::cerr << "error: --device cuda but no CUDA GPU is available\n";
    std::exit(2);
  }
  if (o.device == "cuda" || (o.device == "auto" && torch::cuda::is_available())) return torch::kCUDA;
  return torch::kCPU;
}

constexpr int64_t kFeatures = 64;
constexpr int64_t kClasses = 10;
constexpr int64_t kDatasetBatches = 16;  // cycled; small enough to build fast

}  // namespace examples
