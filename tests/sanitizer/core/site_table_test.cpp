#include "site_table.h"
#include "fake_stack.h"

#include <thread>

#include <gtest/gtest.h>

using namespace nosync::san;
using namespace nosync::san::testing;

TEST(SiteTable, SameStackAggregatesCountTotalAndMax) {
  SiteTable t(16);
  std::vector<std::uintptr_t> pcs = {0x10, 0x20, 0x30};
  auto a = t.add(event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs, 100), 48);
  auto b = t.add(event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs, 700), 48);
  auto c = t.add(event(ApiKind::StreamSync, "cudaStreamSynchronize", pcs, 200), 48);
  EXPECT_TRUE(a.is_new);
  EXPECT_FALSE(b.is_new);
  EXPECT_EQ(a.site, c.site);
  SiteStats s = t.stats(a.site);
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.total_ns, 1000u);
  EXPECT_EQ(s.max_ns, 700u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(SiteTable, DifferentStackOrApiIsADifferentSite) {
  SiteTable t(16);
  std::vector<std::uintptr_t> p1 = {0x10, 0x20}, p2 = {0x10, 0x24};
  auto a = t.add(event(ApiKind::StreamSync, "s", p1), 48);
  auto b = t.add(event(ApiKind::StreamSync, "s", p2), 48);
  auto c = t.add(event(ApiKind::EventSync, "e", p1), 48);
  EXPECT_NE(a.site, b.site);
  EXPECT_NE(a.site, c.site);
  EXPECT_EQ(t.size(), 3u);
}

TEST(SiteTable, DepthLimitsWhatDistinguishesSites) {
  SiteTable t(16);
  std::vector<std::uintptr_t> p1 = {0x10, 0x20, 0x30}, p2 = {0x10, 0x20, 0x99};
  auto a = t.add(event(ApiKind::StreamSync, "s", p1), 2);
  auto b = t.add(event(ApiKind::StreamSync, "s", p2), 2);
  EXPECT_EQ(a.site, b.site);
  EXPECT_EQ(a.site->pcs.size(), 2u);
}

TEST(SiteTable, MemoryIsBoundedByMaxSitesAndNothingIsLost) {
  SiteTable t(8);
  std::uint64_t total = 0;
  for (std::uintptr_t i = 0; i < 1000; ++i) {
    std::vector<std::uintptr_t> pcs = {0x1000 + i};
    t.add(event(ApiKind::StreamSync, "s", pcs, 5), 48);
    total += 5;
  }
  EXPECT_EQ(t.size(), 8u);
  EXPECT_EQ(t.overflowed_calls(), 992u);
  std::uint64_t sum = 0, calls = 0;
  for (Site* s : t.sites()) {
    sum += t.stats(s).total_ns;
    calls += t.stats(s).count;
  }
  EXPECT_EQ(calls, 1000u);
  EXPECT_EQ(sum, total);
  EXPECT_TRUE(t.sites().back()->overflow);
}

TEST(SiteTable, SixteenThreadsLoseNoCounts) {
  SiteTable t(64);
  constexpr int kThreads = 16, kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&t, i] {
      // Half the traffic on a stack all threads share, half on a private one.
      std::vector<std::uintptr_t> shared = {0xAAA0, 0xBBB0};
      std::vector<std::uintptr_t> mine = {0xC000 + static_cast<std::uintptr_t>(i) * 16};
      for (int k = 0; k < kPerThread; ++k)
        t.add(event(ApiKind::StreamSync, "s", (k & 1) ? shared : mine, 3), 48);
    });
  for (auto& th : threads) th.join();
  std::uint64_t calls = 0, ns = 0;
  for (Site* s : t.sites()) {
    calls += t.stats(s).count;
    ns += t.stats(s).total_ns;
  }
  EXPECT_EQ(t.size(), 1u + kThreads);
  EXPECT_EQ(calls, static_cast<std::uint64_t>(kThreads) * kPerThread);
  EXPECT_EQ(ns, 3ull * kThreads * kPerThread);
}
