// A small LibTorch training program written the way people often write it,
// with the host syncs nosync exists to find. Synthetic data, no downloads.
//
//   train_hazards [--steps N] [--device cpu|cuda] [--seed S]
//
// Prints one line per logged step and a final "final_loss=" line.
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(int64_t width) {
    for (int i = 0; i < 2; ++i)
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, width)));
    head = register_module("head", torch::nn::Linear(width, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& l : layers) x = torch::relu(l->forward(x));
    return head->forward(x);
  }
  std::vector<torch::nn::Linear> layers;
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Mlp);

struct Options {
  int steps = 20;
  std::string device = "auto";
  uint64_t seed = 0;
};

static Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "train_hazards: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps") o.steps = std::stoi(value());
    else if (a == "--device") o.device = value();
    else if (a == "--seed") o.seed = std::stoull(value());
    else {
      std::cerr << "usage: train_hazards [--steps N] [--device cpu|cuda] [--seed S]\n";
      std::exit(2);
    }
  }
  return o;
}

int main(int argc, char** argv) {
  Options opt = parse_options(argc, argv);
  torch::manual_seed(opt.seed);
  torch::Device device = torch::kCPU;
  if (opt.device == "cuda" || (opt.device == "auto" && torch::cuda::is_available()))
    device = torch::Device(torch::kCUDA);

  const int64_t width = 256, batch = 512;
  Mlp model(width);
  model->to(device);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));

  double running_loss = 0.0;
  float loss_value = 0.0f;
  for (int step = 0; step < opt.steps; ++step) {
    // Pageable host batch copied every step.
    torch::Tensor x = torch::randn({batch, width});
    // A fixed rule makes the labels learnable: the class is the largest of the first 10 features.
    torch::Tensor y = x.narrow(1, 0, 10).argmax(1);
    x = x.to(device);
    y = y.to(device);

    optimizer.zero_grad();
    torch::Tensor logits = model->forward(x);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
    loss.backward();

    // NaN guard that forces the host to wait for the GPU.
    if (torch::isnan(loss).item<bool>()) {
      std::cerr << "nan loss at step " << step << "\n";
      return 1;
    }

    // Per-parameter launch loop to compute a gradient norm.
    torch::Tensor grad_sq = torch::zeros({}, device);
    for (auto& p : model->parameters()) grad_sq += p.grad().pow(2).sum();
    double grad_norm = std::sqrt(grad_sq.item<double>());

    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();

    loss_value = loss.item<float>();
    running_loss += loss_value;
    torch::Tensor accuracy = (logits.argmax(1) == y).to(torch::kFloat).mean().cpu();
    if (step % 5 == 0)
      std::cout << "step " << step << " loss " << loss_value << " grad_norm " << grad_norm
                << " acc " << accuracy.item<float>() << "\n";
  }
  std::cout << "final_loss=" << loss_value << " mean_loss=" << running_loss / std::max(1, opt.steps)
            << " device=" << device << "\n";
  return 0;
}
