// Real LibTorch hazards under the sanitizer, in-process (linked API): one
// test per hazard, each asserting the rule id, the exact count and this
// file's line. Built with -O0 -g so the line of each call is exact.
#include <nosync/sanitizer.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <thread>

using nosync::sanitizer::Finding;

namespace {

constexpr int kN = 7;

bool is_this_file(const std::string& f) {
  const char* me = "sanitizer_gpu_test.cpp";
  return f.size() >= std::strlen(me) && f.compare(f.size() - std::strlen(me), std::string::npos, me) == 0;
}

void print(const std::vector<Finding>& all) {
  for (const Finding& f : all)
    std::printf("  finding: %s %s:%d op=%s apis=[%s] count=%llu total=%.1fus fn=%s\n", f.rule.c_str(),
                f.file.c_str(), f.line, f.op.c_str(), f.apis.c_str(), static_cast<unsigned long long>(f.count),
                f.total_stall_ns / 1e3, f.function.c_str());
}

// "a=3,b=3" -> every API at the site was called exactly n times.
bool every_api_called(const std::string& apis, unsigned long long n) {
  std::size_t pos = 0;
  if (apis.empty()) return false;
  while (pos < apis.size()) {
    std::size_t comma = apis.find(',', pos);
    std::string one = apis.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (std::strtoull(one.substr(one.find('=') + 1).c_str(), nullptr, 10) != n) return false;
    pos = comma == std::string::npos ? apis.size() : comma + 1;
  }
  return true;
}

class SanitizerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available())
      GTEST_SKIP() << "no CUDA GPU on this machine; this suite runs on the GPU machine (tests/gpu/run)";
    ::setenv("NOSYNC_OPTIONS", "mode=report", /*overwrite=*/0);
    ASSERT_TRUE(nosync::sanitizer::start()) << "CUPTI subscription failed (profiler attached?)";
    // Warm-up outside the counts: context, allocator pools, kernel modules.
    torch::Tensor w = torch::randn({1024}, torch::kCUDA);
    (void)w.sum().item<float>();
    nosync::sanitizer::reset();
  }

  // The findings attributed to `line` of this file; prints everything seen.
  std::vector<Finding> at(int line) {
    std::vector<Finding> all = nosync::sanitizer::findings();
    std::printf("[%s] %zu finding(s)\n", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                all.size());
    print(all);
    std::vector<Finding> out;
    for (const Finding& f : all)
      if (is_this_file(f.file) && f.line == line) out.push_back(f);
    return out;
  }

  void expect_one(int line, const char* rule, unsigned long long per_api_count) {
    std::vector<Finding> f = at(line);
    ASSERT_EQ(f.size(), 1u) << "expected exactly one finding at sanitizer_gpu_test.cpp:" << line;
    EXPECT_EQ(f[0].rule, rule);
    EXPECT_TRUE(every_api_called(f[0].apis, per_api_count))
        << "apis [" << f[0].apis << "] should each be called " << per_api_count << " times";
    EXPECT_GT(f[0].total_stall_ns, 0u);
  }
};

}  // namespace

TEST_F(SanitizerGpu, ItemIsNosyncItemAtTheCallingLine) {
  torch::Tensor t = torch::randn({1 << 20}, torch::kCUDA);
  float acc = 0;
  const int line = __LINE__ + 1;
  for (int i = 0; i < kN; ++i) acc += t.sum().item<float>();
  expect_one(line, "nosync-item", kN);
  EXPECT_EQ(at(line)[0].op, "at::Tensor::item");
  EXPECT_TRUE(std::isfinite(acc));
}

TEST_F(SanitizerGpu, ItemBoolInABranchIsABoolCondition) {
  torch::Tensor t = torch::randn({1 << 16}, torch::kCUDA);
  int hits = 0;
  const int line = __LINE__ + 2;
  for (int i = 0; i < kN; ++i)
    if ((t.sum() > -1e9).item<bool>()) ++hits;
  expect_one(line, "nosync-bool-condition", kN);
  EXPECT_EQ(hits, kN);
}

TEST_F(SanitizerGpu, CpuIsDeviceToHost) {
  torch::Tensor t = torch::randn({1 << 20}, torch::kCUDA);
  double acc = 0;
  const int line = __LINE__ + 1;
  for (int i = 0; i < kN; ++i) acc += t.cpu().numel();
  expect_one(line, "nosync-device-to-host", kN);
  EXPECT_EQ(acc, static_cast<double>(kN) * (1 << 20));
}

TEST_F(SanitizerGpu, NonBlockingUploadFromPageableMemoryIsPageableH2D) {
  torch::Tensor host = torch::randn({1 << 22});  // pageable: the driver stages it
  torch::Tensor dev;
  const int line = __LINE__ + 1;
  for (int i = 0; i < kN; ++i) dev = host.to(torch::kCUDA, /*non_blocking=*/true);
  expect_one(line, "nosync-pageable-h2d", kN);
  EXPECT_EQ(dev.numel(), 1 << 22);
}

TEST_F(SanitizerGpu, TorchCudaSynchronizeIsExplicitSync) {
  torch::Tensor t = torch::randn({1 << 20}, torch::kCUDA);
  const int line = __LINE__ + 1;
  for (int i = 0; i < kN; ++i) { t.mul_(1.0001); torch::cuda::synchronize(); }
  expect_one(line, "nosync-explicit-sync", kN);
  EXPECT_EQ(at(line)[0].op, "torch::cuda::synchronize");
}

TEST_F(SanitizerGpu, NonzeroIsAHiddenSync) {
  torch::Tensor t = torch::randn({1 << 16}, torch::kCUDA);
  std::int64_t found = 0;
  const int line = __LINE__ + 1;
  for (int i = 0; i < kN; ++i) found += (t > 0).nonzero().size(0);
  expect_one(line, "nosync-hidden-sync", kN);
  EXPECT_GT(found, 0);
}

TEST_F(SanitizerGpu, EmptyCacheFreesAreAllocatorSyncs) {
  {
    // Three 64 MiB blocks, each its own cached segment once released.
    std::vector<torch::Tensor> big;
    for (int i = 0; i < 3; ++i) big.push_back(torch::empty({16 << 20}, torch::kCUDA));
  }
  const int line = __LINE__ + 1;
  c10::cuda::CUDACachingAllocator::emptyCache();
  std::vector<Finding> f = at(line);
  ASSERT_FALSE(f.empty());
  std::uint64_t frees = 0;
  for (const Finding& x : f) {
    EXPECT_EQ(x.rule, "nosync-allocator-sync") << x.apis;
    if (x.apis.find("cudaFree=") != std::string::npos)
      frees += std::strtoull(x.apis.substr(x.apis.find("cudaFree=") + 9).c_str(), nullptr, 10);
  }
  // The warm-up's small-pool segment is cached too, so at least our three.
  EXPECT_GE(frees, 3u);
}

TEST_F(SanitizerGpu, SyncFreeStepHasNoFindings) {
  // The fixed pattern: pinned staging, non_blocking uploads, device-side
  // accumulation; nothing is read back inside the step.
  torch::Tensor pinned = torch::randn({1 << 20}).pin_memory();
  torch::Tensor weights = torch::randn({1 << 20}, torch::kCUDA);
  torch::Tensor total = torch::zeros({}, torch::kCUDA);
  auto step = [&] {
    torch::Tensor batch = pinned.to(torch::kCUDA, /*non_blocking=*/true);
    total += (batch * weights).sum();
  };
  step();  // warm-up: allocator blocks for batch and temporaries
  nosync::sanitizer::reset();
  EXPECT_NO_HOST_SYNC(for (int i = 0; i < 50; ++i) step());
  std::vector<Finding> all = nosync::sanitizer::findings();
  print(all);
  EXPECT_TRUE(all.empty());
  nosync_counters c = nosync::sanitizer::counters();
  EXPECT_EQ(c.blocking, 0u);
  EXPECT_GE(c.intercepted, 50u) << "the 50 pinned cudaMemcpyAsync calls were seen and judged non-blocking";
  EXPECT_TRUE(std::isfinite(total.item<float>()));  // read back once, after the step
}

TEST_F(SanitizerGpu, SyncFreeScopeThrowsNamingTheSite) {
  torch::Tensor t = torch::randn({1024}, torch::kCUDA);
  std::string what;
  const int line = __LINE__ + 3;
  try {
    nosync::sanitizer::SyncFreeScope scope("step");
    (void)t.sum().item<float>();
  } catch (const nosync::sanitizer::HostSyncError& e) {
    what = e.what();
  }
  std::printf("HostSyncError: %s\n", what.c_str());
  EXPECT_EQ(what.rfind("step: ", 0), 0u) << what;
  EXPECT_NE(what.find(" host sync"), std::string::npos) << what;
  EXPECT_NE(what.find("nosync-item at "), std::string::npos) << what;
  EXPECT_NE(what.find("sanitizer_gpu_test.cpp:" + std::to_string(line)), std::string::npos) << what;
}

TEST_F(SanitizerGpu, SixteenThreadsSyncingLoseNoCounts) {
  constexpr int kThreads = 16, kPerThread = 20;
  std::vector<std::thread> threads;
  std::vector<torch::Tensor> ts;
  for (int i = 0; i < kThreads; ++i) ts.push_back(torch::randn({4096}, torch::kCUDA));
  const int line = __LINE__ + 3;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < kPerThread; ++k) (void)ts[i].sum().item<float>();
    });
  for (auto& th : threads) th.join();
  expect_one(line, "nosync-item", kThreads * kPerThread);
}
