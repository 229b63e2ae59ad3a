#include "gpu_activity.h"
#include "fake_stack.h"

#include <gtest/gtest.h>

using namespace nosync::san;
using namespace nosync::san::testing;

namespace {
// n kernels of `dur` ns, one every `period` ns.
std::vector<KernelInterval> train(std::size_t n, std::uint64_t dur, std::uint64_t period, std::uint64_t t0 = 1000) {
  std::vector<KernelInterval> k;
  for (std::size_t i = 0; i < n; ++i) k.push_back({t0 + i * period, t0 + i * period + dur});
  return k;
}
}  // namespace

TEST(GpuActivity, BusyTimeIsTheUnionOfKernelIntervals) {
  GpuActivity a;
  std::vector<KernelInterval> k = {{0, 100}, {50, 150}, {300, 400}, {350, 380}};
  a.add(k.data(), k.size());
  GpuSummary s = a.summary();
  EXPECT_EQ(s.kernels, 4u);
  EXPECT_EQ(s.busy_ns, 250u);  // [0,150) + [300,400)
  EXPECT_EQ(s.span_ns, 400u);
  EXPECT_EQ(s.max_gap_ns, 150u);
  EXPECT_DOUBLE_EQ(s.busy_share(), 250.0 / 400.0);
}

TEST(GpuActivity, IncompleteRecordsAreIgnored) {
  GpuActivity a;
  std::vector<KernelInterval> k = {{100, 0}, {10, 20}};
  a.add(k.data(), k.size());
  EXPECT_EQ(a.summary().kernels, 1u);
}

TEST(GpuActivity, ManyShortKernelsOnAMostlyIdleGpuIsLaunchBound) {
  GpuActivity a;
  auto k = train(5000, 2000, 8000);  // 2 us kernels launched every 8 us: 25 % busy
  a.add(k.data(), k.size());
  GpuSummary s = a.summary();
  EXPECT_EQ(s.short_kernels, 5000u);
  EXPECT_NEAR(s.busy_share(), 0.25, 0.01);
  EXPECT_TRUE(is_launch_bound(s));
}

TEST(GpuActivity, BusyOrLongOrFewKernelsAreNotLaunchBound) {
  GpuActivity busy, longk, few;
  auto b = train(5000, 2000, 2500);   // 80 % busy
  auto l = train(5000, 50000, 200000);  // long kernels, idle but not launch-bound
  auto f = train(100, 2000, 8000);    // too few to judge
  busy.add(b.data(), b.size());
  longk.add(l.data(), l.size());
  few.add(f.data(), f.size());
  EXPECT_FALSE(is_launch_bound(busy.summary()));
  EXPECT_FALSE(is_launch_bound(longk.summary()));
  EXPECT_FALSE(is_launch_bound(few.summary()));
}

TEST(GpuActivity, EngineReportsOneLaunchBoundFindingWithTheIdleTime) {
  Options o;
  ASSERT_EQ(parse_options("mode=report:activity=1", o), "");
  TestEngine t(o);
  auto k = train(5000, 2000, 8000);
  t.engine->record_kernels(k.data(), k.size());
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.rule, nosync::rules::RuleId::LaunchBound);
  EXPECT_EQ(f.count, 5000u);
  EXPECT_EQ(f.total_ns, r.gpu.span_ns - r.gpu.busy_ns);
  const std::string text = write_text(r);
  EXPECT_NE(text.find("GPU mostly idle [nosync-launch-bound]: 5000 kernels (5000 under 5 us), GPU busy 25.0%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("SUMMARY: nosync-sanitizer: 0 host syncs at 0 sites, 0.0 us stalled; GPU launch-bound"),
            std::string::npos)
      << text;
  r.options.format = Format::Json;
  const std::string json = write_report(r);
  EXPECT_NE(json.find("\"rule\": \"nosync-launch-bound\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"gpu\": {\"kernels\": 5000, \"short_kernels\": 5000"), std::string::npos) << json;
}
