// GPU correctness of nosync::kernels: random lists against float64
// references, edge sizes, > 2^31 elements, NaN/Inf placement, errors,
// bitwise determinism, CUDA-graph capture, metrics, staging, and no host sync.
// Every test skips visibly where no GPU exists. NOSYNC_KERNELS_QUICK=1 cuts the
// trial counts (used under compute-sanitizer).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <cupti.h>
#include <gtest/gtest.h>
#include <nosync/kernels.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <limits>

#include "reference.h"

namespace nk = nosync::kernels;
using namespace nosync::kernels::testing;

#define SKIP_WITHOUT_GPU()                                                                 \
  if (!torch::cuda::is_available())                                                        \
  GTEST_SKIP() << "no CUDA GPU on this machine; this test runs on the GPU machine "        \
                  "(tests/gpu/run)"

namespace {

const c10::Device kCuda(c10::kCUDA, 0);
const at::ScalarType kDtypes[] = {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int trials(int full) { return std::getenv("NOSYNC_KERNELS_QUICK") ? std::max(2, full / 8) : full; }

// Fills cached allocator blocks with NaN and frees them, so an output the ops
// allocate next most likely reuses poisoned memory: an element the kernels
// fail to write shows up as NaN, which no check accepts.
void poison_allocator() {
  std::vector<at::Tensor> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(at::full({128}, kNaN, at::TensorOptions().device(kCuda)));
  for (int i = 0; i < 8; ++i) blocks.push_back(at::full({1 << 16}, kNaN, at::TensorOptions().device(kCuda)));
}

void check_all_reductions(const std::vector<at::Tensor>& ts, at::ScalarType dt, const std::string& label) {
  const double abs_sum = ref_abs_sum(ts), sq = ref_sumsq(ts), s = ref_sum(ts);
  const int64_t n = total_numel(ts);
  poison_allocator();
  const at::Tensor sum = nk::sum(ts);
  poison_allocator();
  const at::Tensor mean = nk::mean(ts);
  poison_allocator();
  const at::Tensor l2 = nk::l2_norm(ts);
  poison_allocator();
  const at::Tensor per = nk::sum_per_tensor(ts);
  poison_allocator();
  const at::Tensor per_l2 = nk::l2_norm_per_tensor(ts);
  ASSERT_TRUE(sum.is_cuda());
  ASSERT_EQ(sum.scalar_type(), dt);
  ASSERT_EQ(sum.dim(), 0);
  EXPECT_TRUE(close(scalar_of(sum), s, abs_sum, dt, label + " sum"));
  if (n > 0) EXPECT_TRUE(close(scalar_of(mean), s / n, abs_sum / n, dt, label + " mean"));
  EXPECT_TRUE(close(scalar_of(l2), std::sqrt(sq), std::sqrt(sq), dt, label + " l2_norm"));
  ASSERT_EQ(per.numel(), static_cast<int64_t>(ts.size()));
  ASSERT_EQ(per_l2.numel(), static_cast<int64_t>(ts.size()));
  const at::Tensor per_h = per.to(at::kDouble).cpu(), per_l2_h = per_l2.to(at::kDouble).cpu();
  for (size_t i = 0; i < ts.size(); ++i) {
    const at::Tensor d = ts[i].to(at::kDouble);
    const double si = d.sum().item<double>(), ai = d.abs().sum().item<double>(),
                 qi = std::sqrt(d.square().sum().item<double>());
    EXPECT_TRUE(close(per_h[i].item<double>(), si, ai, dt, label + " sum_per_tensor[" + std::to_string(i) + "]"));
    EXPECT_TRUE(close(per_l2_h[i].item<double>(), qi, qi, dt, label + " l2_norm_per_tensor[" + std::to_string(i) + "]"));
  }
}

TEST(KernelsGpu, RandomListsMatchFloat64Reference) {
  SKIP_WITHOUT_GPU();
  for (int trial = 0; trial < trials(32); ++trial) {
    const at::ScalarType dt = kDtypes[trial % 4];
    auto ts = random_list(uniform_int(1, 120), dt, kCuda);
    if (trial % 5 == 0)  // a dense, non-contiguous tensor too
      ts.push_back(at::randn({4, 6, 5, 7}, at::TensorOptions().device(kCuda)).to(dt).contiguous(at::MemoryFormat::ChannelsLast));
    check_all_reductions(ts, dt, "trial " + std::to_string(trial));
    at::Tensor flag = at::full({}, 7, at::TensorOptions().dtype(at::kInt).device(kCuda));  // poisoned: must stay 7
    nk::nonfinite_flag(ts, flag);
    EXPECT_EQ(flag.item<int>(), 7) << "flag touched although every value is finite";
  }
}

TEST(KernelsGpu, EmptyListAndZeroSizeTensors) {
  SKIP_WITHOUT_GPU();
  std::vector<at::Tensor> none;
  EXPECT_EQ(nk::sum(none).item<float>(), 0.0f);
  EXPECT_EQ(nk::sum_per_tensor(none).numel(), 0);
  EXPECT_FALSE(nk::nonfinite_flag(none).item<bool>());
  EXPECT_EQ(nk::clip_grad_norm_(none, 1.0).item<float>(), 0.0f);
  const auto opts = at::TensorOptions().device(kCuda);
  std::vector<at::Tensor> zeros{at::empty({0}, opts), at::empty({3, 0}, opts)};
  poison_allocator();
  const at::Tensor s = nk::sum(zeros);
  EXPECT_TRUE(s.is_cuda());
  EXPECT_EQ(s.item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(nk::mean(zeros).item<float>()));
  EXPECT_EQ(nk::l2_norm(zeros).item<float>(), 0.0f);
  poison_allocator();
  const at::Tensor per = nk::sum_per_tensor(zeros).cpu();
  EXPECT_EQ(per[0].item<float>(), 0.0f);
  EXPECT_EQ(per[1].item<float>(), 0.0f);
  std::vector<at::Tensor> mixed{at::empty({0}, opts), at::randn({5}, opts), at::empty({0}, opts)};
  check_all_reductions(mixed, at::kFloat, "zero-size mix");
}

TEST(KernelsGpu, OneHugeTensor) {
  SKIP_WITHOUT_GPU();
  std::vector<at::Tensor> one{at::randn({300'000'017}, at::TensorOptions().device(kCuda))};
  const double s = one[0].sum(at::kDouble).item<double>(), a = one[0].abs().sum(at::kDouble).item<double>();
  const double q = at::linalg_vector_norm(one[0], 2, {}, false, at::kDouble).item<double>();
  poison_allocator();
  EXPECT_TRUE(close(scalar_of(nk::sum(one)), s, a, at::kFloat, "huge sum"));
  EXPECT_TRUE(close(scalar_of(nk::l2_norm(one)), q, q, at::kFloat, "huge l2"));
  EXPECT_TRUE(close(scalar_of(nk::l2_norm_per_tensor(one)[0]), q, q, at::kFloat, "huge l2 per tensor"));
}

TEST(KernelsGpu, FiveThousandTinyTensors) {
  SKIP_WITHOUT_GPU();
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    std::vector<at::Tensor> ts;
    for (int i = 0; i < 5000; ++i) ts.push_back(random_tensor(uniform_int(1, 1024), dt, kCuda));
    const at::Tensor flat = at::cat(std::vector<at::Tensor>(ts.begin(), ts.end())).to(at::kDouble);
    poison_allocator();
    const at::Tensor per = nk::sum_per_tensor(ts).to(at::kDouble).cpu();
    const at::Tensor per_l2 = nk::l2_norm_per_tensor(ts).to(at::kDouble).cpu();
    EXPECT_TRUE(close(scalar_of(nk::sum(ts)), flat.sum().item<double>(), flat.abs().sum().item<double>(), dt,
                      "5000 sum"));
    // Per-tensor references on the device in one go: segment sums by index.
    std::vector<int64_t> owner;
    for (size_t i = 0; i < ts.size(); ++i) owner.insert(owner.end(), static_cast<size_t>(ts[i].numel()), static_cast<int64_t>(i));
    const at::Tensor idx = at::tensor(owner, at::kLong).to(kCuda);
    const auto zeros = at::zeros({5000}, at::TensorOptions().dtype(at::kDouble).device(kCuda));
    const at::Tensor ref_s = zeros.index_add(0, idx, flat).cpu();
    const at::Tensor ref_a = zeros.index_add(0, idx, flat.abs()).cpu();
    const at::Tensor ref_q = zeros.index_add(0, idx, flat.square()).sqrt().cpu();
    int bad = 0;
    for (int i = 0; i < 5000 && bad < 5; ++i) {
      auto r1 = close(per[i].item<double>(), ref_s[i].item<double>(), ref_a[i].item<double>(), dt, "5000 sum_per_tensor[" + std::to_string(i) + "]");
      auto r2 = close(per_l2[i].item<double>(), ref_q[i].item<double>(), ref_q[i].item<double>(), dt, "5000 l2_per_tensor[" + std::to_string(i) + "]");
      EXPECT_TRUE(r1);
      EXPECT_TRUE(r2);
      bad += !r1 + !r2;
    }
  }
}

TEST(KernelsGpu, MoreThan2Pow31Elements) {
  SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 4099;  // 8.6 GB of fp32
  std::vector<at::Tensor> ts{at::rand({5}, at::TensorOptions().device(kCuda)),
                             at::rand({n}, at::TensorOptions().device(kCuda))};
  const double s1 = ts[1].sum(at::kDouble).item<double>();
  const double s0 = ts[0].sum(at::kDouble).item<double>();
  const double q1 = at::linalg_vector_norm(ts[1], 2, {}, false, at::kDouble).item<double>();
  poison_allocator();
  EXPECT_TRUE(close(scalar_of(nk::sum(ts)), s0 + s1, s0 + s1, at::kFloat, "2^31+ sum"));
  const at::Tensor per = nk::l2_norm_per_tensor(ts).cpu();
  EXPECT_TRUE(close(per[1].item<double>(), q1, q1, at::kFloat, "2^31+ l2 per tensor"));
  // Elements past 2^31 are scaled by clip and seen by the non-finite check.
  const int64_t probe = n - 3;
  const double before = ts[1][probe].item<double>();
  const at::Tensor norm = nk::clip_grad_norm_(ts, 1.0);
  const double coef = 1.0 / (norm.item<double>() + 1e-6);
  EXPECT_NEAR(ts[1][probe].item<double>(), before * coef, 1e-6 * std::abs(before * coef) + 1e-30);
  EXPECT_FALSE(nk::nonfinite_flag(ts).item<bool>());
  ts[1][probe] = kNaN;
  EXPECT_TRUE(nk::nonfinite_flag(ts).item<bool>());
}

TEST(KernelsGpu, NonfiniteFlagFindsNanAndInfAnywhere) {
  SKIP_WITHOUT_GPU();
  const double bad[] = {kNaN, kInf, -kInf};
  const at::ScalarType flag_types[] = {at::kBool, at::kInt, at::kFloat};
  for (int trial = 0; trial < trials(60); ++trial) {
    const at::ScalarType dt = kDtypes[trial % 4];
    auto ts = random_list(uniform_int(1, 30), dt, kCuda);
    ts.push_back(random_tensor(uniform_int(1, 200000), dt, kCuda));
    at::Tensor flag = at::zeros({}, at::TensorOptions().dtype(flag_types[trial % 3]).device(kCuda));
    nk::nonfinite_flag(ts, flag);
    ASSERT_EQ(flag.item<double>(), 0.0);
    size_t victim;
    do victim = static_cast<size_t>(uniform_int(0, static_cast<int64_t>(ts.size()) - 1));
    while (ts[victim].numel() == 0);
    const int64_t m = ts[victim].numel();
    // First, last, or anywhere: heads and tails of vector loops are separate code.
    const int64_t where = trial % 3 == 0 ? 0 : trial % 3 == 1 ? m - 1 : uniform_int(0, m - 1);
    ts[victim].view({-1})[where] = bad[trial % 3];
    nk::nonfinite_flag(ts, flag);
    EXPECT_EQ(flag.item<double>(), 1.0) << "trial " << trial << " dtype " << dt << " tensor " << victim
                                        << " of numel " << m << " at " << where;
    EXPECT_TRUE(nk::nonfinite_flag(ts).item<bool>());
    // The norm sees it too (NaN or Inf); nothing masks it.
    EXPECT_FALSE(std::isfinite(scalar_of(nk::l2_norm(ts))));
  }
}

TEST(KernelsGpu, ClearErrorsForMixedDevicesDtypesAndLayouts) {
  SKIP_WITHOUT_GPU();
  const auto opts = at::TensorOptions().device(kCuda);
  auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  std::vector<at::Tensor> devs{at::randn({3}, opts), at::randn({3}, opts), at::randn({3})};
  expect_error([&] { nk::sum(devs); }, "tensors[2] is on cpu but tensors[0] is on cuda:0");
  std::vector<at::Tensor> types{at::randn({3}, opts), at::randn({3}, opts).to(at::kBFloat16)};
  expect_error([&] { nk::l2_norm(types); }, "tensors[1] has dtype BFloat16 but tensors[0] has Float");
  const at::Tensor m = at::randn({64, 33}, opts);
  std::vector<at::Tensor> strided{m, m.narrow(1, 3, 10)};
  expect_error([&] { nk::sum_per_tensor(strided); }, "tensors[1] is neither contiguous nor dense");
  std::vector<at::Tensor> ints{at::ones({3}, opts.dtype(at::kLong))};
  expect_error([&] { nk::sum(ints); }, "tensors[0] has dtype Long");
  const at::Tensor sparse = at::randn({8, 8}, opts).to_sparse();
  std::vector<at::Tensor> layouts{at::randn({3}, opts), sparse};
  expect_error([&] { nk::sum(layouts); }, "tensors[1] has layout Sparse");
  at::Tensor cpu_flag = at::zeros({}, at::kBool);
  std::vector<at::Tensor> ok{at::randn({3}, opts)};
  expect_error([&] { nk::nonfinite_flag(ok, cpu_flag); }, "flag is on cpu");
  // A transposed (dense, permuted) tensor is accepted and summed correctly.
  std::vector<at::Tensor> perm{m.t()};
  check_all_reductions(perm, at::kFloat, "transposed");
}

// The plan cache finds a list by a hash of its (pointer, size) pairs, then
// compares the whole list: the same tensors in another order, or one tensor
// swapped for another of the same size, must get their own plan.
TEST(KernelsGpu, ReorderedOrSwappedListsGetTheirOwnPlan) {
  SKIP_WITHOUT_GPU();
  const auto opts = at::TensorOptions().device(kCuda);
  std::vector<at::Tensor> ts;
  for (int64_t n : {5, 70000, 1000, 3}) ts.push_back(at::randn({n}, opts));
  std::vector<at::Tensor> reversed(ts.rbegin(), ts.rend());
  std::vector<at::Tensor> swapped = ts;
  swapped[2] = at::randn({1000}, opts);
  for (const auto* list : {&ts, &reversed, &swapped, &ts}) {
    const at::Tensor got = nk::sum_per_tensor(*list).cpu();
    for (size_t i = 0; i < list->size(); ++i)
      EXPECT_NEAR(got[i].item<float>(), (*list)[i].sum().item<float>(), 1e-3 * (1 + (*list)[i].abs().sum().item<float>()))
          << "tensor " << i;
  }
}

TEST(KernelsGpu, BitwiseDeterministicRunToRun) {
  SKIP_WITHOUT_GPU();
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    std::vector<at::Tensor> ts;
    for (int i = 0; i < 300; ++i) ts.push_back(at::randn({random_numel()}, at::TensorOptions().device(kCuda)).to(dt));
    ts.push_back(at::randn({3'000'001}, at::TensorOptions().device(kCuda)).to(dt));
    const at::Tensor s0 = nk::sum(ts), l0 = nk::l2_norm(ts), p0 = nk::sum_per_tensor(ts), q0 = nk::l2_norm_per_tensor(ts);
    std::vector<at::Tensor> clones;  // same values, other addresses: a different plan, same partition
    for (auto& t : ts) clones.push_back(t.clone());
    for (int r = 0; r < trials(20); ++r) {
      const auto& list = r % 2 ? clones : ts;
      EXPECT_TRUE(at::equal(nk::sum(list), s0)) << "run " << r;
      EXPECT_TRUE(at::equal(nk::l2_norm(list), l0)) << "run " << r;
      EXPECT_TRUE(at::equal(nk::sum_per_tensor(list), p0)) << "run " << r;
      EXPECT_TRUE(at::equal(nk::l2_norm_per_tensor(list), q0)) << "run " << r;
    }
  }
}

TEST(KernelsGpu, ClipMatchesTorchAndNeverSyncs) {
  SKIP_WITHOUT_GPU();
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    for (const double max_norm : {0.5, 1e9}) {
      std::vector<at::Tensor> params, twins;
      for (int i = 0; i < 200; ++i) {
        auto p = at::randn({random_numel()}, at::TensorOptions().device(kCuda)).to(dt).set_requires_grad(true);
        p.mutable_grad() = (at::randn_like(p) * 3);
        auto q = p.detach().clone().set_requires_grad(true);
        q.mutable_grad() = p.grad().clone();
        params.push_back(p);
        twins.push_back(q);
      }
      params.push_back(at::randn({3}, at::TensorOptions().device(kCuda).dtype(dt)).set_requires_grad(true));
      std::vector<at::Tensor> grads;
      for (auto& q : twins) grads.push_back(q.grad());
      const double exact = std::sqrt(ref_sumsq(grads));  // float64 truth
      const double want = torch::nn::utils::clip_grad_norm_(twins, max_norm);
      EXPECT_TRUE(close(want, exact, 2 * exact, dt, "torch's own clip norm vs float64"));
      std::vector<at::Tensor> before;
      for (auto& p : params) before.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
      poison_allocator();
      const at::Tensor got = nk::clip_grad_norm_(params, max_norm);
      EXPECT_TRUE(got.is_cuda());
      EXPECT_TRUE(close(scalar_of(got), exact, exact, dt, "clip norm"));
      for (size_t i = 0; i < twins.size(); ++i) {
        if (max_norm > 1e8)
          EXPECT_TRUE(at::equal(params[i].grad(), before[i])) << "no-clip must leave grads bitwise alone";
        else
          EXPECT_TRUE(at::allclose(params[i].grad().to(at::kFloat), twins[i].grad().to(at::kFloat),
                                   dt == at::kFloat ? 1e-5 : 1e-2, 1e-6))
              << "grad " << i;
      }
    }
  }
}

TEST(KernelsGpu, CudaGraphCaptureAndReplay) {
  SKIP_WITHOUT_GPU();
  const auto opts = at::TensorOptions().device(kCuda);
  std::vector<at::Tensor> ts, grads;
  for (int i = 0; i < 300; ++i) ts.push_back(at::randn({std::max<int64_t>(1, random_numel())}, opts));
  for (int i = 0; i < 50; ++i) grads.push_back(at::randn({uniform_int(1, 100000)}, opts));
  at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  at::Tensor flag = at::zeros({}, opts.dtype(at::kInt));
  at::Tensor s, l2, per, norm;
  {
    at::cuda::CUDAStreamGuard g(side);
    // Warm-up: plans are built and uploaded outside capture.
    (void)nk::sum(ts);
    (void)nk::l2_norm_per_tensor(ts);
    (void)nk::nonfinite_flag(ts, flag);
    (void)nk::clip_grad_norm_(grads, 1e9);
    side.synchronize();
    at::cuda::CUDAGraph graph;
    graph.capture_begin();
    s = nk::sum(ts);
    l2 = nk::l2_norm(ts);
    per = nk::l2_norm_per_tensor(ts);
    nk::nonfinite_flag(ts, flag);
    norm = nk::clip_grad_norm_(grads, 1.0);
    graph.capture_end();
    for (int round = 0; round < 3; ++round) {
      for (auto& t : ts) t.copy_(at::randn_like(t));
      for (auto& t : grads) t.copy_(at::randn_like(t));
      if (round == 2) ts[7].view({-1})[0] = kInf;
      std::vector<at::Tensor> grads_before;
      for (auto& t : grads) grads_before.push_back(t.clone());
      const double want_norm = std::sqrt(ref_sumsq(grads));
      flag.zero_();
      graph.replay();
      side.synchronize();
      if (round < 2) {
        EXPECT_TRUE(close(scalar_of(s), ref_sum(ts), ref_abs_sum(ts), at::kFloat, "graph sum"));
        EXPECT_TRUE(close(scalar_of(l2), std::sqrt(ref_sumsq(ts)), std::sqrt(ref_sumsq(ts)), at::kFloat, "graph l2"));
        const std::vector<at::Tensor> one{ts[3]};
        EXPECT_TRUE(close(per[3].item<double>(), std::sqrt(ref_sumsq(one)), std::sqrt(ref_sumsq(one)), at::kFloat,
                          "graph l2 per tensor"));
        EXPECT_EQ(flag.item<int>(), 0);
      } else {
        EXPECT_EQ(flag.item<int>(), 1) << "graph replay missed an Inf";
      }
      EXPECT_TRUE(close(scalar_of(norm), want_norm, want_norm, at::kFloat, "graph clip norm"));
      const double coef = 1.0 / (want_norm + 1e-6);
      EXPECT_TRUE(at::allclose(grads[0], grads_before[0] * coef, 1e-5, 1e-7)) << "graph clip scale";
    }
  }
  // A list first seen inside capture (gradients backward allocates in the
  // graph's pool) is planned there: the graph writes the plan itself. Used
  // eagerly before any replay, the plan is written outside the graph too.
  {
    at::cuda::CUDAStreamGuard g(side);
    std::vector<at::Tensor> fresh;
    for (int i = 0; i < 400; ++i) fresh.push_back(at::randn({uniform_int(1, 3000)}, opts));  // plan > 4 KB
    at::cuda::CUDAGraph graph;
    graph.capture_begin();
    at::Tensor captured_sum = nk::sum(fresh);
    graph.capture_end();
    const double want = ref_sum(fresh);
    const at::Tensor eager_sum = nk::sum(fresh);  // same list, outside the graph, before any replay
    EXPECT_TRUE(close(scalar_of(eager_sum), want, ref_abs_sum(fresh), at::kFloat, "eager sum of a capture-built plan"));
    for (auto& t : fresh) t.mul_(2);
    graph.replay();
    side.synchronize();
    EXPECT_TRUE(close(scalar_of(captured_sum), ref_sum(fresh), ref_abs_sum(fresh), at::kFloat,
                      "graph sum of a capture-built plan"));
    EXPECT_TRUE(at::equal(captured_sum, nk::sum(fresh))) << "graph and eager differ on the same plan";
  }
  // A plan written only by a graph that never runs (a capture abandoned over
  // a sync, say) is written again by the next capture that uses it.
  {
    at::cuda::CUDAStreamGuard g(side);
    std::vector<at::Tensor> fresh;
    for (int i = 0; i < 300; ++i) fresh.push_back(at::randn({uniform_int(1, 3000)}, opts));
    {
      at::cuda::CUDAGraph never_run;
      never_run.capture_begin();
      (void)nk::sum(fresh);
      never_run.capture_end();
    }
    at::cuda::CUDAGraph graph;
    graph.capture_begin();
    at::Tensor s2 = nk::sum(fresh);
    graph.capture_end();
    graph.replay();
    side.synchronize();
    EXPECT_TRUE(close(scalar_of(s2), ref_sum(fresh), ref_abs_sum(fresh), at::kFloat,
                      "second capture of a plan built in a graph that never ran"));
  }
}

TEST(KernelsGpu, PreparedListMatchesListOpsBitwiseAndCaptures) {
  SKIP_WITHOUT_GPU();
  const auto opts = at::TensorOptions().device(kCuda);
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    auto ts = random_list(uniform_int(1, 200), dt, kCuda);
    const nk::PreparedList prepared(ts);
    ASSERT_EQ(prepared.size(), static_cast<int64_t>(ts.size()));
    poison_allocator();
    // Same partition, same addresses: the same bits as the list ops.
    EXPECT_TRUE(at::equal(prepared.sum(), nk::sum(ts)));
    EXPECT_TRUE(at::equal(prepared.l2_norm(), nk::l2_norm(ts)));
    EXPECT_TRUE(at::equal(prepared.sum_per_tensor(), nk::sum_per_tensor(ts)));
    EXPECT_TRUE(at::equal(prepared.l2_norm_per_tensor(), nk::l2_norm_per_tensor(ts)));
    if (total_numel(ts) > 0) EXPECT_TRUE(at::equal(prepared.mean(), nk::mean(ts)));
    EXPECT_TRUE(close(scalar_of(prepared.sum()), ref_sum(ts), ref_abs_sum(ts), dt, "prepared sum"));
    at::Tensor flag = at::zeros({}, opts.dtype(at::kBool));
    prepared.nonfinite_flag(flag);
    EXPECT_FALSE(flag.item<bool>());
  }
  // Gradients of parameters, clipped inside a graph captured with no warm-up,
  // on a stream other than the one the plan was uploaded on.
  std::vector<at::Tensor> params;
  for (int i = 0; i < 100; ++i) {
    params.push_back(at::randn({uniform_int(1, 90000)}, opts).set_requires_grad(true));
    params.back().mutable_grad() = at::randn_like(params.back());
  }
  const auto grads = nk::PreparedList::grads_of(params);
  at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  at::cuda::CUDAStreamGuard guard(side);
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  const at::Tensor norm = grads.clip_grad_norm_(0.25);
  graph.capture_end();
  for (int round = 0; round < 2; ++round) {
    std::vector<at::Tensor> g, before;
    for (auto& p : params) {
      p.grad().copy_(at::randn_like(p));  // in place: the prepared list stays valid
      g.push_back(p.grad());
      before.push_back(p.grad().clone());
    }
    const double want = std::sqrt(ref_sumsq(g));
    graph.replay();
    side.synchronize();
    EXPECT_TRUE(close(scalar_of(norm), want, want, at::kFloat, "prepared clip norm in graph"));
    EXPECT_TRUE(at::allclose(params[5].grad(), before[5] * (0.25 / (want + 1e-6)), 1e-5, 1e-7));
  }
}

TEST(KernelsGpu, MetricAccumulatorReadsBackLate) {
  SKIP_WITHOUT_GPU();
  nk::MetricAccumulator m(kCuda);
  const auto opts = at::TensorOptions().device(kCuda);
  double loss = 0;
  int64_t correct = 0;
  std::optional<nk::MetricAccumulator::Values> polled;
  for (int step = 1; step <= 50; ++step) {
    const at::Tensor l = at::rand({}, opts);
    const at::Tensor c = at::randint(0, 10, {}, opts.dtype(at::kLong));
    loss += l.item<double>();  // reference only
    correct += c.item<int64_t>();
    m.add("loss", l);
    m.add("correct", c.reshape({1}));
    auto p = m.poll();
    if (p) polled = p;
  }
  torch::cuda::synchronize();
  auto p = m.poll();  // harvests the readbacks that have now landed
  ASSERT_TRUE(p.has_value() || polled.has_value()) << "poll() never returned values";
  const auto v = m.read();
  EXPECT_NEAR(v.at("loss"), loss / 50, 1e-9);
  EXPECT_NEAR(v.at("correct"), static_cast<double>(correct) / 50, 1e-9);
  if (p) EXPECT_LE(p->at("loss"), 1.0);  // a mean of values in [0, 1)
  const auto f = m.flush();
  EXPECT_NEAR(f.at("loss"), loss / 50, 1e-9);
  EXPECT_EQ(m.read().at("loss"), 0.0);
  EXPECT_THROW(m.add("loss", at::rand({1})), c10::Error);  // CPU value for a CUDA accumulator
}

// torch::kCUDA carries no index while tensors on it say cuda:0.
TEST(KernelsGpu, StatefulHelpersAcceptACudaDeviceWithoutIndex) {
  SKIP_WITHOUT_GPU();
  nk::MetricAccumulator m(c10::Device(c10::kCUDA));
  m.add("x", at::full({}, 3.0, at::TensorOptions().device(kCuda)));
  EXPECT_EQ(m.read().at("x"), 3.0);
  nk::PinnedStager stager(c10::Device(c10::kCUDA));
  const at::Tensor src = at::rand({16});
  const at::Tensor dst = stager.stage(src);
  EXPECT_EQ(dst.device(), kCuda);
  EXPECT_TRUE(at::equal(dst.cpu(), src));
}

TEST(KernelsGpu, PinnedStagerCopiesWithoutAliasing) {
  SKIP_WITHOUT_GPU();
  nk::PinnedStager stager(kCuda, 3);
  std::vector<at::Tensor> staged, originals;
  at::Tensor src = at::empty({257, 33});
  for (int i = 0; i < 20; ++i) {
    src.normal_();  // the same CPU buffer, overwritten after every stage()
    originals.push_back(src.clone());
    staged.push_back(stager.stage(src));
    if (i % 7 == 0) {  // other dtypes and sizes through the same ring, empty included
      const at::Tensor ints = at::randint(0, 100, {uniform_int(0, 5000)}, at::kInt);
      originals.push_back(ints.clone());
      staged.push_back(stager.stage(ints));
    }
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    EXPECT_TRUE(staged[i].is_cuda());
    EXPECT_TRUE(at::equal(staged[i].cpu(), originals[i])) << "staging " << i;
  }
}

// --- no host sync: CUPTI counts every blocking runtime call during the ops ---
std::atomic<int> g_blocking{0};
void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER) ++g_blocking;
}

TEST(KernelsGpu, WarmOpsMakeNoBlockingCudaCall) {
  SKIP_WITHOUT_GPU();
  const auto opts = at::TensorOptions().device(kCuda);
  std::vector<at::Tensor> ts;
  for (int i = 0; i < 1000; ++i) ts.push_back(at::randn({uniform_int(1, 70000)}, opts));
  at::Tensor flag = at::zeros({}, opts.dtype(at::kBool));
  auto run_all = [&] {
    (void)nk::sum(ts);
    (void)nk::mean(ts);
    (void)nk::l2_norm(ts);
    (void)nk::sum_per_tensor(ts);
    (void)nk::l2_norm_per_tensor(ts);
    nk::nonfinite_flag(ts, flag);
    (void)nk::clip_grad_norm_(ts, 1.0);
  };
  run_all();  // warm-up: plans uploaded
  torch::cuda::synchronize();
  CUpti_SubscriberHandle sub;
  ASSERT_EQ(cuptiSubscribe(&sub, on_api, nullptr), CUPTI_SUCCESS) << "CUPTI busy (profiler attached?)";
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020})
    ASSERT_EQ(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id), CUPTI_SUCCESS);
  g_blocking = 0;
  for (int i = 0; i < 5; ++i) run_all();
  const int seen = g_blocking.load();
  cuptiUnsubscribe(sub);
  EXPECT_EQ(seen, 0) << "syncs or copies during warm ops";
  torch::cuda::synchronize();
}

}  // namespace
