// Training utilities shared by several trainers, with their GoogleTest unit
// tests in the same file (as small projects often keep them). The utilities
// are library code: the trainers that call them live in other files.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace train_utils {

// Global L2 norm of a gradient list, one tensor at a time (predates _foreach_norm).
torch::Tensor global_grad_norm(const std::vector<torch::Tensor>& grads) {
  auto sq = torch::zeros({}, grads.front().options());
  for (const auto& g : grads) {  // expect: nosync-launch-loop@+0..+2
    sq += g.pow(2).sum();
  }
  return sq.sqrt();
}

// The same norm in two multi-tensor launches; the result stays on the device.
torch::Tensor foreach_grad_norm(const std::vector<torch::Tensor>& grads) {
  auto norms = torch::_foreach_norm(grads, 2);
  return torch::linalg_vector_norm(torch::stack(norms), 2, c10::nullopt, false, c10::nullopt);  // expect-none: nosync-hidden-sync
}

// Accuracy per class, for the epoch summary.
std::vector<float> per_class_accuracy(const torch::Tensor& pred, const torch::Tensor& labels, int64_t num_classes) {
  std::vector<float> acc;
  for (int64_t c = 0; c < num_classes; ++c) {
    auto hits = pred.eq(labels).masked_select(labels == c);  // expect: nosync-hidden-sync
    acc.push_back(hits.numel() > 0 ? hits.to(torch::kFloat).mean().item<float>() : 0.0f);  // expect: nosync-item
  }
  return acc;
}

// ZCA-style whitening of several feature groups (e.g. one per attention head).
std::vector<torch::Tensor> whiten_groups(const std::vector<torch::Tensor>& groups, double eps) {
  std::vector<torch::Tensor> out;
  for (const auto& x : groups) {  // expect: nosync-launch-loop@+0..+5
    auto xc = x - x.mean(0, /*keepdim=*/true);
    auto cov = xc.t().matmul(xc) / (x.size(0) - 1) + eps * torch::eye(x.size(1), x.options());
    auto chol = torch::linalg_cholesky(cov);  // expect: nosync-hidden-sync
    out.push_back(torch::linalg_solve_triangular(chol, xc.t(), /*upper=*/false).t());
  }
  return out;
}

// Single-group whitening without the host-side error check; info stays on the device.
std::pair<torch::Tensor, torch::Tensor> whiten(const torch::Tensor& x, double eps) {
  auto xc = x - x.mean(0, /*keepdim=*/true);
  auto cov = xc.t().matmul(xc) / (x.size(0) - 1) + eps * torch::eye(x.size(1), x.options());
  auto [chol, info] = torch::linalg_cholesky_ex(cov);  // expect-none: nosync-hidden-sync
  return {torch::linalg_solve_triangular(chol, xc.t(), /*upper=*/false).t(), info};
}

// Device-side running mean of a scalar loss; read() is the one host read.
class MetricTracker {
 public:
  explicit MetricTracker(torch::Device device) : sum_(torch::zeros({}, torch::TensorOptions().device(device))) {}
  void update(const torch::Tensor& value) {
    sum_ += value.detach();
    ++count_;
  }
  double read() const { return count_ == 0 ? 0.0 : sum_.item<double>() / count_; }  // expect-note: nosync-item

 private:
  torch::Tensor sum_;
  int64_t count_ = 0;
};

class EarlyStopping {
 public:
  explicit EarlyStopping(int patience, float min_delta = 0.0f) : patience_(patience), min_delta_(min_delta) {}
  // Returns true when training should stop.
  bool step(const torch::Tensor& val_loss) {
    if (val_loss.item<float>() < best_ - min_delta_) {  // expect-note: nosync-bool-condition
      best_ = val_loss.item<float>();  // expect-note: nosync-item
      bad_epochs_ = 0;
    } else {
      ++bad_epochs_;
    }
    return bad_epochs_ >= patience_;
  }

 private:
  int patience_, bad_epochs_ = 0;
  float min_delta_, best_ = std::numeric_limits<float>::infinity();
};

bool has_nonfinite(const torch::Tensor& t) {
  return !torch::isfinite(t).all().item<bool>();  // expect-note: nosync-item
}

// Checksum of host buffers, e.g. to verify a dataset shard after loading.
float checksum(const std::vector<std::vector<float>>& chunks) {
  float sum = 0.0f;
  for (const auto& c : chunks) {  // expect-none: nosync-launch-loop@+0..+3
    auto t = torch::from_blob(const_cast<float*>(c.data()), {static_cast<int64_t>(c.size())}, torch::kFloat);
    sum += t.sum().item<float>();  // expect-none: nosync-item
  }
  return sum;
}

void save_tensor_csv(const torch::Tensor& t, const std::string& path) {
  auto host = t.detach().to(torch::kCPU).contiguous().view(-1);  // expect-note: nosync-device-to-host
  std::ofstream out(path);
  out << host << '\n';  // expect-none: nosync-hidden-sync
}

}  // namespace train_utils

namespace {

torch::Device test_device() { return torch::cuda::is_available() ? torch::kCUDA : torch::kCPU; }

TEST(TrainUtils, ForeachGradNormMatchesReference) {
  const auto opts = torch::TensorOptions().device(test_device());
  std::vector<torch::Tensor> grads = {torch::ones({3}, opts), torch::full({4}, 2.0, opts)};
  auto norm = train_utils::foreach_grad_norm(grads);
  EXPECT_NEAR(norm.item<float>(), std::sqrt(19.0f), 1e-5);  // expect-note: nosync-item
  auto reference = torch::cat({grads[0], grads[1]}).norm();
  EXPECT_TRUE(torch::allclose(norm, reference));  // expect-note: nosync-bool-condition
}

TEST(TrainUtils, WhitenGivesIdentityCovariance) {
  auto x = torch::randn({512, 4}, torch::TensorOptions().device(test_device()).dtype(torch::kDouble));
  auto [w, info] = train_utils::whiten(x, 1e-6);
  ASSERT_EQ(info.item<int>(), 0);  // expect-note: nosync-item
  auto cov = w.t().matmul(w) / (w.size(0) - 1);
  auto eye = torch::eye(4, cov.options());
  EXPECT_TRUE(cov.allclose(eye, 1e-3, 1e-3)) << cov;  // expect-note: nosync-bool-condition, nosync-hidden-sync
}

TEST(TrainUtils, NonfiniteDetection) {
  const auto opts = torch::TensorOptions().device(test_device());
  EXPECT_FALSE(train_utils::has_nonfinite(torch::ones({8}, opts)));
  auto bad = torch::ones({8}, opts);
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(train_utils::has_nonfinite(bad));
}

TEST(TrainUtils, EarlyStoppingWaitsForPatience) {
  const auto opts = torch::TensorOptions().device(test_device());
  train_utils::EarlyStopping stopper(2);
  std::vector<bool> decisions;
  for (float loss : {1.0f, 0.9f, 0.95f, 0.97f}) {
    decisions.push_back(stopper.step(torch::tensor(loss, opts)));
  }
  EXPECT_EQ(decisions, (std::vector<bool>{false, false, false, true}));
}

TEST(TrainUtils, SavesCsv) {
  const std::string path = ::testing::TempDir() + "train_utils_save.csv";
  train_utils::save_tensor_csv(torch::arange(6, torch::TensorOptions().device(test_device())).view({2, 3}), path);
  std::ifstream in(path);
  EXPECT_TRUE(in.good());
}

TEST(TrainUtils, ChecksumOfHostBuffers) {
  std::vector<std::vector<float>> chunks = {{1.0f, 2.0f}, {3.5f}};
  EXPECT_FLOAT_EQ(train_utils::checksum(chunks), 6.5f);
}

class MetricTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    losses_ = torch::linspace(0.0, 1.0, 11).to(test_device());  // expect-note: nosync-pageable-h2d
  }
  torch::Tensor losses_;
};

TEST_F(MetricTrackerTest, AveragesOnDevice) {
  train_utils::MetricTracker tracker(test_device());
  for (int64_t i = 0; i < losses_.size(0); ++i) {
    tracker.update(losses_[i]);
    EXPECT_GE(losses_[i].item<float>(), 0.0f);  // expect-note: nosync-item
  }
  EXPECT_NEAR(tracker.read(), 0.5, 1e-6);
  if (test_device().is_cuda()) {
    torch::cuda::synchronize();  // expect-note: nosync-explicit-sync
  }
  std::cout << "losses: " << losses_ << '\n';  // expect-note: nosync-hidden-sync
}

TEST(TrainUtils, CountsPerClass) {
  auto labels = torch::tensor({0, 1, 1, 2, 2, 2}, torch::kLong).to(test_device());  // expect-note: nosync-pageable-h2d
  auto counts = torch::bincount(labels, /*weights=*/{}, /*minlength=*/3);
  const std::vector<int64_t> expected = {1, 2, 3};
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_EQ(counts[c].item<int64_t>(), expected[c]);  // expect-note: nosync-item
  }
}

}  // namespace
