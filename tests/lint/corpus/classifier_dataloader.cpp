// Digit-style image classifier on a synthetic dataset: custom Dataset,
// DataLoader with workers, SGD + StepLR, per-epoch validation, weight export.
// Structure follows the LibTorch MNIST example (pytorch/examples, cpp/mnist).
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr int64_t kImageSize = 28;
constexpr int64_t kNumClasses = 10;
constexpr int64_t kTrainBatchSize = 64;
constexpr int64_t kTestBatchSize = 1000;
constexpr size_t kNumEpochs = 6;
constexpr size_t kLogInterval = 10;

// Synthetic "digits": every class is a bright square at its own position, plus noise.
class BlobDataset : public torch::data::datasets::Dataset<BlobDataset> {
 public:
  BlobDataset(int64_t size, uint64_t seed) {
    torch::manual_seed(seed);
    targets_ = torch::randint(kNumClasses, {size}, torch::kLong);
    images_ = torch::randn({size, 1, kImageSize, kImageSize}) * 0.3;
    for (int64_t c = 0; c < kNumClasses; ++c) {
      auto idx = (targets_ == c).nonzero().squeeze(1);  // expect-none: nosync-hidden-sync
      int64_t row = 2 + (c / 5) * 12, col = 2 + (c % 5) * 5;
      auto block = images_.index_select(0, idx);
      block.slice(2, row, row + 8).slice(3, col, col + 4).add_(1.0);
      images_.index_copy_(0, idx, block);
    }
  }

  torch::data::Example<> get(size_t index) override {
    return {images_[index], targets_[index]};
  }

  torch::optional<size_t> size() const override {
    return static_cast<size_t>(targets_.size(0));
  }

 private:
  torch::Tensor images_, targets_;
};

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, kNumClasses) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

// Host-side running mean (not a tensor): its item() is plain arithmetic.
struct RunningAverage {
  double total = 0.0;
  int64_t count = 0;
  void update(double v) { total += v; ++count; }
  double item() const { return count > 0 ? total / static_cast<double>(count) : 0.0; }
};

template <typename DataLoader>
void train(size_t epoch, Net& model, torch::Device device, DataLoader& data_loader,
           torch::optim::Optimizer& optimizer, size_t dataset_size, RunningAverage& meter) {
  model->train();
  size_t batch_idx = 0;
  auto correct = torch::zeros({}, torch::TensorOptions().device(device).dtype(torch::kLong));
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device);  // expect: nosync-pageable-h2d
    auto targets = batch.target.to(device);  // expect: nosync-pageable-h2d
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = torch::nll_loss(output, targets);
    AT_ASSERT(!std::isnan(loss.template item<float>()));  // expect: nosync-bool-condition
    loss.backward();
    optimizer.step();

    meter.update(loss.template item<double>());  // expect: nosync-item
    correct += output.argmax(1).eq(targets).sum();
    if (meter.item() > 5.0) {  // expect-none: nosync-item, nosync-bool-condition
      std::fprintf(stderr, "loss is diverging (%.3f)\n", meter.item());
    }

    if (batch_idx++ % kLogInterval == 0) {
      std::printf("\rTrain Epoch: %zu [%5zu/%5zu] Loss: %.4f", epoch,
                  batch_idx * batch.data.size(0), dataset_size,
                  loss.template item<float>());  // expect-note: nosync-item
    }
  }
  std::printf("\nTrain accuracy: %.3f\n",
              correct.item<int64_t>() / static_cast<double>(dataset_size));  // expect: nosync-item
}

template <typename DataLoader>
double test(Net& model, torch::Device device, DataLoader& data_loader, size_t dataset_size,
            std::vector<std::vector<int64_t>>& confusion) {
  torch::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device);  // expect: nosync-pageable-h2d
    auto targets = batch.target.to(device);  // expect: nosync-pageable-h2d
    auto output = model->forward(data);
    test_loss += torch::nll_loss(output, targets, /*weight=*/{}, torch::Reduction::Sum)
                     .template item<float>();  // expect: nosync-item@-1
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();  // expect: nosync-item

    // Confusion matrix on the host: one copy per batch, then plain CPU reads.
    torch::Tensor pred_cpu = pred.to(torch::kCPU);  // expect: nosync-device-to-host
    torch::Tensor target_cpu = batch.target;
    auto p = pred_cpu.accessor<int64_t, 1>();
    auto t = target_cpu.accessor<int64_t, 1>();
    for (int64_t i = 0; i < p.size(0); ++i) {
      confusion[t[i]][p[i]] += 1;
    }
  }
  test_loss /= dataset_size;
  const double accuracy = static_cast<double>(correct) / dataset_size;
  std::printf("Test set: Average loss: %.4f | Accuracy: %.3f\n", test_loss, accuracy);
  return accuracy;
}

// Robustness probe, once per epoch: iterative FGSM steps until batch accuracy falls to 50%.
int64_t attack_steps_needed(Net& model, torch::Tensor images, const torch::Tensor& targets, double eps) {
  model->eval();
  int64_t steps = 0;
  auto accuracy = [&] { return model->forward(images).argmax(1).eq(targets).to(torch::kFloat).mean(); };  // expect-none: nosync-device-to-host
  while (steps < 20 && accuracy().item<float>() > 0.5f) {  // expect: nosync-bool-condition
    images = images.detach().requires_grad_(true);
    auto loss = torch::nll_loss(model->forward(images), targets);
    auto grad = torch::autograd::grad({loss}, {images})[0];
    images = (images + eps * grad.sign()).clamp(-3.0, 3.0);
    ++steps;
  }
  return steps;
}

// One-off export after training: raw float32 weights, one tensor after another.
void export_weights(Net& model, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& pair : model->named_parameters()) {  // expect-note: nosync-launch-loop
    auto w = pair.value().detach().to(torch::kCPU).contiguous();  // expect-note: nosync-device-to-host
    const int64_t n = w.numel();
    out.write(pair.key().c_str(), static_cast<std::streamsize>(pair.key().size() + 1));
    out.write(reinterpret_cast<const char*>(&n), sizeof(n));
    out.write(reinterpret_cast<const char*>(w.data_ptr<float>()), n * sizeof(float));
  }
}

}  // namespace

int main() {
  torch::manual_seed(1);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);

  Net model;
  model->to(device);  // expect-none: nosync-pageable-h2d
  int64_t num_params = 0;
  for (const auto& p : model->parameters()) {  // expect-none: nosync-launch-loop@+0..+2
    num_params += p.numel();
  }
  std::cout << "parameters: " << num_params << '\n';

  auto train_dataset = BlobDataset(6000, 1)
                           .map(torch::data::transforms::Normalize<>(0.0, 1.0))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(train_dataset), torch::data::DataLoaderOptions().batch_size(kTrainBatchSize).workers(2));

  auto test_dataset = BlobDataset(1000, 2)
                          .map(torch::data::transforms::Normalize<>(0.0, 1.0))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  torch::optim::StepLR scheduler(optimizer, /*step_size=*/2, /*gamma=*/0.5);
  std::vector<std::vector<int64_t>> confusion(kNumClasses, std::vector<int64_t>(kNumClasses, 0));
  RunningAverage meter;
  double best_accuracy = 0.0;

  for (size_t epoch = 1; epoch <= kNumEpochs; ++epoch) {
    train(epoch, model, device, *train_loader, optimizer, train_dataset_size, meter);
    const double accuracy = test(model, device, *test_loader, test_dataset_size, confusion);
    auto probe = torch::randn({64, 1, kImageSize, kImageSize}, torch::TensorOptions().device(device));
    auto probe_labels = model->forward(probe).argmax(1).detach();
    std::printf("FGSM steps to 50%% accuracy: %ld\n", attack_steps_needed(model, probe, probe_labels, 0.05));
    scheduler.step();
    if (accuracy > best_accuracy) {
      best_accuracy = accuracy;
      torch::save(model, "classifier_best.pt");  // expect-maybe: nosync-hidden-sync, nosync-device-to-host
    }
  }

  // One-off look at a few predictions after training.
  model->eval();
  torch::NoGradGuard no_grad;
  auto sample = torch::randn({8, 1, kImageSize, kImageSize}, torch::TensorOptions().device(device));
  auto probs = torch::softmax(model->forward(sample), /*dim=*/1);
  std::cout << "sample probabilities:\n" << probs << '\n';  // expect-note: nosync-hidden-sync
  auto top = std::get<1>(probs.max(/*dim=*/1)).cpu();  // expect-note: nosync-device-to-host
  for (int64_t i = 0; i < top.size(0); ++i) {
    std::cout << top[i].item<int64_t>() << (i + 1 < top.size(0) ? ' ' : '\n');  // expect-none: nosync-item
  }
  std::cout << "confusion[0][0] = " << confusion[0][0] << ", best accuracy " << best_accuracy << '\n';

  export_weights(model, "classifier_weights.bin");
  return 0;
}
