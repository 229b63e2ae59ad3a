// The CPU path of every op, against float64 references (runs in CI on the
// CPU box). The same checks run on the GPU in gpu_test.cpp.
#include <gtest/gtest.h>
#include <nosync/kernels.h>
#include <torch/torch.h>

#include <limits>

#include "reference.h"

namespace nk = nosync::kernels;
using namespace nosync::kernels::testing;

namespace {

const c10::Device kCpu(c10::kCPU);
const at::ScalarType kDtypes[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16};

TEST(KernelsCpu, RandomListsMatchFloat64Reference) {
  for (int trial = 0; trial < 24; ++trial) {
    const at::ScalarType dt = kDtypes[trial % 4];
    auto ts = random_list(uniform_int(1, 40), dt, kCpu);
    const double abs_sum = ref_abs_sum(ts);
    const at::Tensor s = nk::sum(ts);
    EXPECT_EQ(s.dim(), 0);
    EXPECT_EQ(s.scalar_type(), dt);
    EXPECT_TRUE(close(scalar_of(s), ref_sum(ts), abs_sum, dt, "sum"));
    const int64_t n = total_numel(ts);
    if (n > 0) EXPECT_TRUE(close(scalar_of(nk::mean(ts)), ref_sum(ts) / n, abs_sum / n, dt, "mean"));
    const double sq = ref_sumsq(ts);
    EXPECT_TRUE(close(scalar_of(nk::l2_norm(ts)), std::sqrt(sq), std::sqrt(sq), dt, "l2_norm"));
    const at::Tensor per = nk::sum_per_tensor(ts);
    const at::Tensor per_l2 = nk::l2_norm_per_tensor(ts);
    ASSERT_EQ(per.numel(), static_cast<int64_t>(ts.size()));
    ASSERT_EQ(per_l2.numel(), static_cast<int64_t>(ts.size()));
    for (size_t i = 0; i < ts.size(); ++i) {
      const std::vector<at::Tensor> one{ts[i]};
      EXPECT_TRUE(close(scalar_of(per[i]), ref_sum(one), ref_abs_sum(one), dt, "sum_per_tensor"));
      EXPECT_TRUE(close(scalar_of(per_l2[i]), std::sqrt(ref_sumsq(one)), std::sqrt(ref_sumsq(one)), dt,
                        "l2_norm_per_tensor"));
    }
    EXPECT_FALSE(nk::nonfinite_flag(ts).item<bool>());
  }
}

TEST(KernelsCpu, StridedViewsAreHandled) {
  at::Tensor m = at::randn({64, 33});
  std::vector<at::Tensor> ts{m.t(), m.narrow(1, 3, 10), at::randn({4, 8, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast)};
  EXPECT_TRUE(close(scalar_of(nk::sum(ts)), ref_sum(ts), ref_abs_sum(ts), at::kFloat, "sum of views"));
}

TEST(KernelsCpu, EmptyListAndZeroSizeTensors) {
  std::vector<at::Tensor> none;
  EXPECT_EQ(nk::sum(none).item<float>(), 0.0f);
  EXPECT_EQ(nk::l2_norm(none).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(nk::mean(none).item<float>()));
  EXPECT_EQ(nk::sum_per_tensor(none).numel(), 0);
  EXPECT_FALSE(nk::nonfinite_flag(none).item<bool>());
  EXPECT_EQ(nk::clip_grad_norm_(none, 1.0).item<float>(), 0.0f);

  std::vector<at::Tensor> zeros{at::empty({0}), at::randn({3}), at::empty({2, 0})};
  const at::Tensor per = nk::sum_per_tensor(zeros);
  EXPECT_EQ(per[0].item<float>(), 0.0f);
  EXPECT_EQ(per[2].item<float>(), 0.0f);
  // The engine accumulates in float64 and at::sum in float, so the two may differ in the last bits of a
  // three-element sum (CI saw 32 ulp): compare against the float64 reference with the dtype's tolerance.
  const std::vector<at::Tensor> middle{zeros[1]};
  EXPECT_TRUE(close(scalar_of(per[1]), ref_sum(middle), ref_abs_sum(middle), at::kFloat, "sum_per_tensor of a 3-vector"));
  std::vector<at::Tensor> only_empty{at::empty({0})};
  EXPECT_TRUE(std::isnan(nk::mean(only_empty).item<float>()));
}

TEST(KernelsCpu, NonfiniteFlagFindsNanAndInfAnywhere) {
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  for (int trial = 0; trial < 30; ++trial) {
    const at::ScalarType dt = kDtypes[trial % 4];
    auto ts = random_list(uniform_int(1, 10), dt, kCpu);
    ts.push_back(random_tensor(uniform_int(1, 5000), dt, kCpu));
    at::Tensor flag = at::zeros({}, at::kInt);
    nk::nonfinite_flag(ts, flag);
    ASSERT_EQ(flag.item<int>(), 0);
    size_t victim;
    do victim = static_cast<size_t>(uniform_int(0, static_cast<int64_t>(ts.size()) - 1));
    while (ts[victim].numel() == 0);
    ts[victim].view({-1})[uniform_int(0, ts[victim].numel() - 1)] = bad[trial % 3];
    nk::nonfinite_flag(ts, flag);
    EXPECT_EQ(flag.item<int>(), 1) << "trial " << trial;
    EXPECT_TRUE(nk::nonfinite_flag(ts).item<bool>());
  }
  // The flag accumulates: a clean list does not clear it.
  at::Tensor flag = at::ones({1}, at::kFloat);
  std::vector<at::Tensor> clean{at::randn({10})};
  nk::nonfinite_flag(clean, flag);
  EXPECT_EQ(flag.item<float>(), 1.0f);
}

TEST(KernelsCpu, ClipMatchesTorchClipGradNorm) {
  for (const double max_norm : {0.5, 1e6}) {
    std::vector<at::Tensor> params, twins;
    for (int i = 0; i < 20; ++i) {
      auto p = at::randn({uniform_int(1, 3000)}).set_requires_grad(true);
      p.mutable_grad() = at::randn_like(p) * 3;
      auto q = p.detach().clone().set_requires_grad(true);
      q.mutable_grad() = p.grad().clone();
      params.push_back(p);
      twins.push_back(q);
    }
    params.push_back(at::randn({3}).set_requires_grad(true));  // no grad: skipped
    const double want = torch::nn::utils::clip_grad_norm_(twins, max_norm);
    const at::Tensor got = nk::clip_grad_norm_(params, max_norm);
    EXPECT_TRUE(close(got.item<double>(), want, want, at::kFloat, "clip norm"));
    for (size_t i = 0; i < twins.size(); ++i)
      EXPECT_TRUE(at::allclose(params[i].grad(), twins[i].grad(), 1e-5, 1e-6)) << "grad " << i;
    EXPECT_FALSE(params.back().grad().defined());
  }
  // Gradients passed directly.
  std::vector<at::Tensor> grads{at::full({4}, 3.0), at::full({4}, 4.0)};  // norm 10
  const at::Tensor n = nk::clip_grad_norm_(grads, 5.0, 0.0);
  EXPECT_FLOAT_EQ(n.item<float>(), 10.0f);
  EXPECT_FLOAT_EQ(grads[0][0].item<float>(), 1.5f);
  EXPECT_FLOAT_EQ(grads[1][3].item<float>(), 2.0f);
}

TEST(KernelsCpu, PreparedListGivesTheListOpsResults) {
  auto ts = random_list(12, at::kFloat, kCpu);
  const nk::PreparedList prepared(ts);
  EXPECT_EQ(prepared.size(), 12);
  EXPECT_TRUE(at::equal(prepared.sum(), nk::sum(ts)));
  EXPECT_TRUE(at::equal(prepared.l2_norm_per_tensor(), nk::l2_norm_per_tensor(ts)));
  std::vector<at::Tensor> params{at::randn({5}).set_requires_grad(true), at::randn({3}).set_requires_grad(true)};
  params[0].mutable_grad() = at::full({5}, 2.0);
  const auto grads = nk::PreparedList::grads_of(params);  // params[1] has no grad: skipped
  EXPECT_EQ(grads.size(), 1);
  EXPECT_FLOAT_EQ(grads.clip_grad_norm_(1.0, 0.0).item<float>(), std::sqrt(20.0f));
  EXPECT_NEAR(params[0].grad()[0].item<float>(), 2.0 / std::sqrt(20.0), 1e-6);
}

// zero_grad() with set_to_none (LibTorch's default) gives parameters new
// gradient tensors after the next backward: a list prepared before would clip
// the old ones. It must refuse, naming the parameter, and keep working while
// gradients are zeroed in place.
TEST(KernelsCpu, PreparedGradsRefuseGradientsReplacedSinceTheyWerePrepared) {
  torch::nn::Linear model(4, 3);
  torch::optim::SGD opt(model->parameters(), 0.1);
  auto step = [&] { model->forward(at::randn({8, 4})).pow(2).sum().backward(); };
  step();
  const auto grads = nk::PreparedList::grads_of(model->parameters());
  EXPECT_NO_THROW(grads.clip_grad_norm_(1.0));
  opt.zero_grad(/*set_to_none=*/false);
  step();
  const at::Tensor want = at::stack({model->weight.grad().norm().pow(2), model->bias.grad().norm().pow(2)}).sum().sqrt();
  EXPECT_NEAR(grads.l2_norm().item<float>(), want.item<float>(), 1e-5);
  opt.zero_grad(/*set_to_none=*/true);
  step();
  try {
    grads.clip_grad_norm_(1.0);
    FAIL() << "a prepared list clipped gradients that were replaced";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gradient of tensors[0] was replaced or dropped"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(grads.sum(), c10::Error);
}

TEST(KernelsCpu, ClearErrorsNameTheOffendingTensor) {
  std::vector<at::Tensor> mixed{at::randn({3}), at::randn({3}).to(at::kHalf)};
  try {
    nk::sum(mixed);
    FAIL() << "mixed dtypes accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensors[1] has dtype Half"), std::string::npos) << e.what();
  }
  std::vector<at::Tensor> ints{at::randn({3}), at::ones({3}, at::kLong)};
  EXPECT_THROW(nk::l2_norm(ints), c10::Error);
  std::vector<at::Tensor> undefined{at::randn({3}), at::Tensor()};
  try {
    nk::sum(undefined);
    FAIL() << "undefined tensor accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensors[1] is an undefined tensor"), std::string::npos) << e.what();
  }
  at::Tensor bad_flag = at::zeros({2});
  std::vector<at::Tensor> one{at::randn({3})};
  EXPECT_THROW(nk::nonfinite_flag(one, bad_flag), c10::Error);
}

TEST(KernelsCpu, MetricAccumulatorAveragesNamedValues) {
  nk::MetricAccumulator m(kCpu);
  double loss = 0;
  for (int i = 0; i < 10; ++i) {
    const double v = static_cast<double>(uniform_int(0, 1000)) / 7.0;
    loss += v;
    m.add("loss", at::scalar_tensor(v));
    m.add("correct", at::scalar_tensor(int64_t{i}, at::kLong));
  }
  auto polled = m.poll();
  ASSERT_TRUE(polled.has_value());
  auto v = m.read();
  EXPECT_NEAR(v.at("loss"), loss / 10, 1e-5);
  EXPECT_NEAR(v.at("correct"), 4.5, 1e-12);
  EXPECT_NEAR(polled->at("loss"), loss / 10, 1e-5);
  auto f = m.flush();
  EXPECT_NEAR(f.at("loss"), loss / 10, 1e-5);
  EXPECT_EQ(m.read().at("loss"), 0.0);  // reset by flush
  EXPECT_THROW(m.add("loss", at::ones({2})), c10::Error);
}

// add() must not tie the sums into the value's autograd graph: an in-place
// add of a value that requires grad would keep every step's graph alive.
TEST(KernelsCpu, MetricAccumulatorDetachesValuesThatRequireGrad) {
  nk::MetricAccumulator m(kCpu);
  std::weak_ptr<torch::autograd::Node> graph;
  {
    const at::Tensor w = at::ones({3}).set_requires_grad(true);
    const at::Tensor loss = (w * 2).sum();  // 6, with a grad_fn
    graph = loss.grad_fn();
    ASSERT_FALSE(graph.expired());
    m.add("loss", loss);
  }
  EXPECT_TRUE(graph.expired()) << "the accumulator keeps the value's autograd graph alive";
  EXPECT_EQ(m.read().at("loss"), 6.0);
}

TEST(KernelsCpu, StatefulHelpersRejectBadArguments) {
  auto message_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const c10::Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message_of([] { nk::MetricAccumulator m(kCpu, -1); }).find("readback_slots must be >= 1, got -1"),
            std::string::npos);
  EXPECT_NE(message_of([] { nk::MetricAccumulator m(kCpu, 0); }).find("readback_slots must be >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(message_of([] { nk::PinnedStager s(kCpu, -5); }).find("slots must be >= 1, got -5"), std::string::npos);
  // On a CPU device the stager is t.to(device): the fix-its that stage
  // copies run in CPU builds too.
  nk::PinnedStager cpu_stager(kCpu);
  const at::Tensor t = at::arange(6, at::kFloat);
  EXPECT_TRUE(cpu_stager.stage(t).equal(t));
  at::Tensor into = at::zeros({6});
  cpu_stager.stage_into(t, into);
  EXPECT_TRUE(into.equal(t));
  nk::MetricAccumulator m(kCpu);
  EXPECT_NE(message_of([&] { m.add("z", at::ones({}, at::kComplexFloat)); }).find("has dtype ComplexFloat"),
            std::string::npos);
}

}  // namespace
