// DCGAN on synthetic 28x28 "rings", the dataset kept resident on the GPU.
// Generator and discriminator as in pytorch/examples (cpp/dcgan), plus an EMA
// copy of the generator for sampling, label smoothing/flipping, a NaN guard,
// periodic checkpoints with a PGM sample grid, and per-epoch timing.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kNoiseSize = 100;
constexpr int64_t kBatchSize = 64;
constexpr int64_t kNumberOfEpochs = 10;
constexpr int64_t kBatchesPerEpoch = 200;
constexpr int64_t kDatasetSize = 4096;
constexpr int64_t kLogInterval = 50;
constexpr int64_t kCheckpointEvery = 200;
constexpr int64_t kNumberOfSamplesPerCheckpoint = 16;
constexpr double kEmaDecay = 0.999;

struct DCGANGeneratorImpl : torch::nn::Module {
  explicit DCGANGeneratorImpl(int64_t noise_size)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, 256, 4).bias(false)),
        batch_norm1(256),
        conv2(torch::nn::ConvTranspose2dOptions(256, 128, 3).stride(2).padding(1).bias(false)),
        batch_norm2(128),
        conv3(torch::nn::ConvTranspose2dOptions(128, 64, 4).stride(2).padding(1).bias(false)),
        batch_norm3(64),
        conv4(torch::nn::ConvTranspose2dOptions(64, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));
    x = torch::relu(batch_norm2(conv2(x)));
    x = torch::relu(batch_norm3(conv3(x)));
    x = torch::tanh(conv4(x));
    return x;
  }

  torch::nn::ConvTranspose2d conv1, conv2, conv3, conv4;
  torch::nn::BatchNorm2d batch_norm1, batch_norm2, batch_norm3;
};
TORCH_MODULE(DCGANGenerator);

torch::nn::Sequential make_discriminator() {
  using namespace torch::nn;
  return Sequential(
      Conv2d(Conv2dOptions(1, 64, 4).stride(2).padding(1).bias(false)),
      LeakyReLU(LeakyReLUOptions().negative_slope(0.2)),
      Conv2d(Conv2dOptions(64, 128, 4).stride(2).padding(1).bias(false)),
      BatchNorm2d(128),
      LeakyReLU(LeakyReLUOptions().negative_slope(0.2)),
      Conv2d(Conv2dOptions(128, 256, 4).stride(2).padding(1).bias(false)),
      BatchNorm2d(256),
      LeakyReLU(LeakyReLUOptions().negative_slope(0.2)),
      Conv2d(Conv2dOptions(256, 1, 3).stride(1).padding(0).bias(false)),
      Sigmoid());
}

void weights_init(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  if (auto* conv = module.as<torch::nn::Conv2d>()) {
    torch::nn::init::normal_(conv->weight, 0.0, 0.02);
  } else if (auto* convt = module.as<torch::nn::ConvTranspose2d>()) {
    torch::nn::init::normal_(convt->weight, 0.0, 0.02);
  } else if (auto* bn = module.as<torch::nn::BatchNorm2d>()) {
    torch::nn::init::normal_(bn->weight, 1.0, 0.02);
    torch::nn::init::constant_(bn->bias, 0.0);
  }
}

// Rings of random radius and centre, in [-1, 1]; built once on the CPU.
torch::Tensor make_rings(int64_t n) {
  auto coords = torch::arange(28, torch::kFloat).sub(13.5);
  auto yy = coords.view({1, 28, 1}), xx = coords.view({1, 1, 28});
  auto cy = torch::randint(-4, 5, {n, 1, 1}).to(torch::kFloat);
  auto cx = torch::randint(-4, 5, {n, 1, 1}).to(torch::kFloat);
  auto radius = torch::rand({n, 1, 1}) * 6 + 4;
  auto dist = ((yy - cy).pow(2) + (xx - cx).pow(2)).sqrt();
  auto rings = torch::exp(-(dist - radius).pow(2) / 2.0);
  return (rings * 2 - 1).unsqueeze(1);
}

// Writes samples as one PGM grid. Only called at checkpoints and at the end.
void write_pgm_grid(const torch::Tensor& samples, const std::string& path) {
  const int64_t n = samples.size(0), cols = 8, rows = (n + cols - 1) / cols;
  auto pixels = ((samples.detach() + 1.0) * 127.5).clamp(0, 255).to(torch::kUInt8);  // expect-none: nosync-device-to-host
  auto padded = torch::zeros({rows * cols, 1, 28, 28}, pixels.options());
  padded.slice(0, 0, n).copy_(pixels);  // expect-none: nosync-device-to-host
  auto grid = padded.view({rows, cols, 28, 28}).permute({0, 2, 1, 3}).reshape({rows * 28, cols * 28});
  auto host = grid.contiguous().cpu();  // expect-note: nosync-device-to-host
  std::ofstream out(path, std::ios::binary);
  out << "P5\n" << host.size(1) << ' ' << host.size(0) << "\n255\n";  // expect-none: nosync-hidden-sync
  out.write(reinterpret_cast<const char*>(host.data_ptr<uint8_t>()), host.numel());
}

}  // namespace

int main() {
  torch::manual_seed(1);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  std::cout << "CUDA devices: " << torch::cuda::device_count() << '\n';  // expect-none: nosync-explicit-sync

  DCGANGenerator generator(kNoiseSize);
  generator->apply(weights_init);
  generator->to(device);  // expect-none: nosync-pageable-h2d
  torch::nn::Sequential discriminator = make_discriminator();
  discriminator->apply(weights_init);
  discriminator->to(device);

  // The whole dataset fits on the device: copied once, then indexed per batch.
  torch::Tensor dataset = make_rings(kDatasetSize).to(device);

  DCGANGenerator ema_generator(kNoiseSize);
  ema_generator->to(device);
  auto g_params = generator->parameters();
  auto ema_params = ema_generator->parameters();
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < g_params.size(); ++i) {  // expect-none: nosync-launch-loop@+0..+2
      ema_params[i].copy_(g_params[i]);
    }
  }
  for (auto& p : ema_params) {  // expect-none: nosync-launch-loop@+0..+2
    p.requires_grad_(false);
  }

  torch::optim::Adam generator_optimizer(
      generator->parameters(), torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
  torch::optim::Adam discriminator_optimizer(
      discriminator->parameters(), torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));

  const auto long_opts = torch::TensorOptions().device(device).dtype(torch::kLong);
  torch::Tensor fixed_noise = torch::randn({kNumberOfSamplesPerCheckpoint, kNoiseSize, 1, 1}, device);
  std::vector<std::pair<float, float>> history;
  int64_t checkpoint_counter = 1;
  double label_smoothing = 0.9;

  for (int64_t epoch = 1; epoch <= kNumberOfEpochs; ++epoch) {
    const auto epoch_start = std::chrono::steady_clock::now();
    torch::Tensor last_g_loss;
    for (int64_t batch_index = 1; batch_index <= kBatchesPerEpoch; ++batch_index) {
      auto idx = torch::randint(kDatasetSize, {kBatchSize}, long_opts);
      torch::Tensor real_images = dataset.index_select(0, idx);

      // Train discriminator with real images: smoothed labels, 5% flipped.
      discriminator->zero_grad();
      torch::Tensor real_labels = torch::full({kBatchSize}, label_smoothing).to(device);  // expect: nosync-pageable-h2d
      auto flip = torch::rand({kBatchSize}, device) < 0.05;
      real_labels.masked_fill_(flip, 0.0);  // expect-none: nosync-hidden-sync
      torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
      torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
      // A discriminator that is too sure of the real images gets softer targets next step.
      label_smoothing = real_output.mean().item<float>() > 0.95f ? 0.8 : 0.9;  // expect: nosync-bool-condition
      d_loss_real.backward();

      // Train discriminator with fake images.
      torch::Tensor noise = torch::randn({kBatchSize, kNoiseSize, 1, 1}, device);
      torch::Tensor fake_images = generator->forward(noise);
      torch::Tensor fake_labels = torch::zeros({kBatchSize}, device);
      torch::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
      torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();

      torch::Tensor d_loss = d_loss_real + d_loss_fake;
      if (!torch::isfinite(d_loss).item<bool>()) {  // expect: nosync-bool-condition
        std::cerr << "non-finite discriminator loss, skipping batch\n";
        continue;
      }
      discriminator_optimizer.step();

      // Train generator against a frozen discriminator.
      for (auto& p : discriminator->parameters()) {
        p.set_requires_grad(false);
      }
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
      torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();
      last_g_loss = g_loss.detach();
      for (auto& p : discriminator->parameters()) {
        p.set_requires_grad(true);
      }

      {
        torch::NoGradGuard no_grad;
        for (size_t i = 0; i < g_params.size(); ++i) {  // expect: nosync-launch-loop@+0..+2
          ema_params[i].mul_(kEmaDecay).add_(g_params[i], 1.0 - kEmaDecay);
        }
      }

      history.emplace_back(d_loss.item().toFloat(), g_loss.item().toFloat());  // expect: nosync-item

      if (batch_index % kLogInterval == 0) {
        std::printf("\r[%2ld/%2ld][%3ld/%3ld] D_loss: %.4f | G_loss: %.4f | D(x): %.3f\n", epoch,
                    kNumberOfEpochs, batch_index, kBatchesPerEpoch,
                    d_loss.item<float>(),  // expect-note: nosync-item
                    g_loss.item<float>(),  // expect-note: nosync-item
                    real_output.mean().item<float>());  // expect-note: nosync-item
      }

      if (batch_index % kCheckpointEvery == 0) {
        torch::save(generator, "generator-checkpoint.pt");
        torch::save(generator_optimizer, "generator-optimizer-checkpoint.pt");
        torch::save(discriminator, "discriminator-checkpoint.pt");
        torch::save(discriminator_optimizer, "discriminator-optimizer-checkpoint.pt");
        torch::NoGradGuard no_grad;
        torch::Tensor samples = ema_generator->forward(fixed_noise);
        write_pgm_grid(samples, torch::str("dcgan-sample-", checkpoint_counter, ".pgm"));
        std::cout << "\n-> checkpoint " << ++checkpoint_counter << '\n';
      }
    }

    if (device.is_cuda()) {
      torch::cuda::synchronize();  // expect: nosync-explicit-sync
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    std::printf("epoch %ld took %.1f s\n", epoch, seconds);
    std::cout << "last G loss: " << last_g_loss << std::endl;  // expect: nosync-hidden-sync
  }

  // After training: summary statistics of the EMA generator, computed once.
  torch::NoGradGuard no_grad;
  ema_generator->eval();
  torch::Tensor final_samples = ema_generator->forward(torch::randn({256, kNoiseSize, 1, 1}, device));
  const float pixel_mean = final_samples.mean().item<float>();  // expect-note: nosync-item
  const float pixel_std = final_samples.std().item<float>();  // expect-note: nosync-item
  std::printf("final samples: mean %.3f std %.3f\n", pixel_mean, pixel_std);
  write_pgm_grid(final_samples.slice(0, 0, 64), "dcgan-final.pgm");

  double d_sum = 0.0, g_sum = 0.0;
  for (const auto& [d, g] : history) {
    d_sum += d;
    g_sum += g;
  }
  std::printf("mean D_loss %.4f, mean G_loss %.4f over %zu steps\n", d_sum / history.size(),
              g_sum / history.size(), history.size());
  return 0;
}
