// Proves the toolchain end to end on a GPU: LibTorch runs on the device, and a
// CUPTI subscriber enabled for the single callback id cudaStreamSynchronize
// counts exactly the syncs that Tensor::item() causes.
#include <cupti.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>

namespace {

std::atomic<int> g_stream_syncs{0};

void CUPTIAPI count_stream_syncs(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite != CUPTI_API_ENTER) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020)
    g_stream_syncs.fetch_add(1, std::memory_order_relaxed);
}

// Subscribes for one runtime callback id only: enabling whole domains costs
// about 30 % on launch-bound loops (DESIGN.md).
class StreamSyncCounter {
 public:
  StreamSyncCounter() {
    ok_ = cuptiSubscribe(&sub_, count_stream_syncs, nullptr) == CUPTI_SUCCESS &&
          cuptiEnableCallback(1, sub_, CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020) == CUPTI_SUCCESS;
    g_stream_syncs = 0;
  }
  ~StreamSyncCounter() { cuptiUnsubscribe(sub_); }
  bool ok() const { return ok_; }
  int count() const { return g_stream_syncs.load(); }

 private:
  CUpti_SubscriberHandle sub_{};
  bool ok_ = false;
};

void skip_without_gpu() {}

}  // namespace

#define SKIP_WITHOUT_GPU()                                                                 \
  if (!torch::cuda::is_available())                                                        \
  GTEST_SKIP() << "no CUDA GPU on this machine; this test runs on the GPU machine "        \
                  "(tests/gpu/run)"

TEST(CuptiSyncCount, EachItemIsExactlyOneStreamSync) {
  SKIP_WITHOUT_GPU();
  torch::Tensor t = torch::randn({1 << 20}, torch::kCUDA);
  (void)t.sum().item<float>();  // warm-up: module load and allocator outside the count
  StreamSyncCounter counter;
  ASSERT_TRUE(counter.ok()) << "CUPTI subscription failed (is a profiler attached?)";
  constexpr int kN = 37;
  float acc = 0;
  for (int i = 0; i < kN; ++i) acc += t.sum().item<float>();
  std::printf("item() x %d -> cudaStreamSynchronize x %d (acc %g)\n", kN, counter.count(), acc);
  EXPECT_EQ(counter.count(), kN);
}

TEST(CuptiSyncCount, DeviceSideWorkCausesNoStreamSync) {
  SKIP_WITHOUT_GPU();
  torch::Tensor t = torch::randn({1 << 20}, torch::kCUDA);
  torch::Tensor acc = torch::zeros({}, torch::kCUDA);
  StreamSyncCounter counter;
  ASSERT_TRUE(counter.ok()) << "CUPTI subscription failed (is a profiler attached?)";
  for (int i = 0; i < 37; ++i) acc += t.sum();
  int during = counter.count();
  std::printf("sum() x 37 kept on device -> cudaStreamSynchronize x %d\n", during);
  EXPECT_EQ(during, 0);
  EXPECT_TRUE(torch::isfinite(acc).item<bool>());
}
