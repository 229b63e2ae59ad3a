#include "engine.h"
#include "fake_stack.h"

#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

using namespace nosync::san;
using namespace nosync::san::testing;
using nosync::rules::RuleId;

namespace {
const char* kCpu = "/venv/torch/lib/libtorch_cpu.so";

std::vector<Frame> item_at(const char* file, int line, const char* fn = "train_step()") {
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("cudaStreamSynchronize", "/venv/nvidia/cu13/lib/libcudart.so.13"));
  f.push_back(lib("at::native::_local_scalar_dense_cuda(at::Tensor const&)", "/venv/torch/lib/libtorch_cuda.so"));
  f.push_back(lib("at::Tensor::item() const", kCpu));
  f.push_back(user(fn, file, line));
  f.push_back(user("main", "/work/app/train.cpp", 100));
  return f;
}

std::vector<Frame> sync_at(const char* file, int line) {
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("cudaDeviceSynchronize", "/venv/nvidia/cu13/lib/libcudart.so.13"));
  f.push_back(lib("torch::cuda::synchronize(long)", kCpu));
  f.push_back(user("train_step()", file, line));
  return f;
}

std::vector<Frame> barrier_at(const char* file, int line) {
  std::vector<Frame> f = observer_frames();
  f.push_back(lib("cudaStreamSynchronize", "/venv/nvidia/cu13/lib/libcudart.so.13"));
  f.push_back(lib("c10::cuda::CUDAStream::synchronize() const", "/venv/torch/lib/libc10_cuda.so"));
  f.push_back(lib("c10d::ProcessGroupNCCL::WorkNCCL::wait(std::chrono::milliseconds)",
                  "/venv/torch/lib/libtorch_cuda.so"));
  f.push_back(user("save_checkpoint()", file, line));
  return f;
}

Options opts(const std::string& text) {
  Options o;
  EXPECT_EQ(parse_options(text, o), "");
  return o;
}
}  // namespace

TEST(Engine, ReportGroupsPerUserLineSortedByTotalStall) {
  TestEngine t(opts("mode=report"));
  auto item = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  auto sync = t.symbolizer->stack(sync_at("/work/app/train.cpp", 50));
  for (int i = 0; i < 37; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", item, 1000 + i));
  for (int i = 0; i < 3; ++i) t.engine->record(event(ApiKind::DeviceSync, "cudaDeviceSynchronize", sync, 100000));
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 2u);
  const Finding& first = r.findings[0];
  EXPECT_EQ(first.rule, RuleId::ExplicitSync);
  EXPECT_EQ(first.line, 50);
  EXPECT_EQ(first.count, 3u);
  EXPECT_EQ(first.total_ns, 300000u);
  const Finding& second = r.findings[1];
  EXPECT_EQ(second.rule, RuleId::Item);
  EXPECT_EQ(second.file, "/work/app/train.cpp");
  EXPECT_EQ(second.line, 42);
  EXPECT_EQ(second.function, "train_step()");
  EXPECT_EQ(second.op, "at::Tensor::item");
  EXPECT_EQ(second.count, 37u);
  EXPECT_EQ(second.max_ns, 1036u);
  EXPECT_EQ(second.total_ns, 37u * 1000 + 36 * 37 / 2);
  EXPECT_EQ(second.apis.at("cudaStreamSynchronize"), 37u);
  EXPECT_EQ(t.output, "") << "report mode prints nothing before exit";
}

TEST(Engine, EachUniqueStackIsSymbolizedOnce) {
  TestEngine t(opts("mode=warn"));
  auto item = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  for (int i = 0; i < 100; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", item));
  t.engine->build_report();
  t.engine->build_report();
  EXPECT_EQ(t.symbolizer->calls.load(), 1);
}

TEST(Engine, WarnModePrintsOneLinePerNewSite) {
  TestEngine t(opts("mode=warn"));
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  auto b = t.symbolizer->stack(item_at("/work/app/eval.cpp", 7, "evaluate()"));
  for (int i = 0; i < 5; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", b));
  std::size_t lines = 0;
  for (char c : t.output) lines += c == '\n';
  EXPECT_EQ(lines, 2u) << t.output;
  EXPECT_NE(t.output.find("==4242==WARNING: nosync-sanitizer: nosync-item at /work/app/train.cpp:42 in train_step()"),
            std::string::npos)
      << t.output;
  EXPECT_NE(t.output.find("/work/app/eval.cpp:7"), std::string::npos) << t.output;
}

TEST(Engine, ErrorModeReportsAndCallsTheFatalHandlerAtTheFirstSync) {
  TestEngine t(opts("mode=error"));
  int fatal = 0;
  t.engine->set_fatal_handler([&fatal] { ++fatal; });
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));
  EXPECT_EQ(fatal, 1);
  EXPECT_NE(t.output.find("==4242==ERROR: nosync-sanitizer: host sync [nosync-item]"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("SUMMARY: nosync-sanitizer: nosync-item /work/app/train.cpp:42 in train_step()"),
            std::string::npos)
      << t.output;
  EXPECT_NE(t.output.find("==4242==ABORTING"), std::string::npos);
  EXPECT_FALSE(t.engine->finish()) << "no second report after the error report";
}

TEST(Engine, ErrorModeCountsACollectiveWaitAndStopsAtTheNextRealSync) {
  TestEngine t(opts("mode=error"));
  int fatal = 0;
  t.engine->set_fatal_handler([&fatal] { ++fatal; });
  auto barrier = t.symbolizer->stack(barrier_at("/work/app/train.cpp", 30));
  for (int i = 0; i < 3; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", barrier));
  EXPECT_EQ(fatal, 0) << "a collective wait is a note: counted, no abort\n" << t.output;
  auto item = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", item));
  EXPECT_EQ(fatal, 1);
  EXPECT_NE(t.output.find("host sync [nosync-item]"), std::string::npos) << t.output;
  Report r = t.engine->build_report();
  const auto collective = std::find_if(r.findings.begin(), r.findings.end(),
                                       [](const Finding& f) { return f.rule == RuleId::CollectiveWait; });
  ASSERT_NE(collective, r.findings.end());
  EXPECT_EQ(collective->count, 3u);
}

TEST(Engine, NotesAloneDoNotMakeTheRunFail) {
  // finish() is what exitcode= acts on: a run whose only findings are a
  // collective's waits (a note) is reported, but it did not fail.
  TestEngine t(opts("mode=report"));
  auto barrier = t.symbolizer->stack(barrier_at("/work/app/train.cpp", 30));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", barrier));
  EXPECT_FALSE(t.engine->finish());
  EXPECT_NE(t.output.find("nosync-collective-wait"), std::string::npos) << t.output;

  TestEngine u(opts("mode=report"));
  auto item = u.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  u.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", item));
  auto u_barrier = u.symbolizer->stack(barrier_at("/work/app/train.cpp", 30));
  u.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", u_barrier));
  EXPECT_TRUE(u.engine->finish());
}

TEST(Engine, MinStallThresholdCountsButDoesNotReport) {
  TestEngine t(opts("mode=report:min_stall_us=50"));
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  for (int i = 0; i < 10; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a, 10000));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a, 60000));
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].count, 1u);
  EXPECT_EQ(r.totals.blocking, 11u);
  EXPECT_EQ(r.totals.below_threshold, 10u);
  EXPECT_FALSE(t.engine->wants_stack(event(ApiKind::StreamSync, "s", a, 10000)));
  EXPECT_TRUE(t.engine->wants_stack(event(ApiKind::StreamSync, "s", a, 60000)));
}

TEST(Engine, QueriesAndNonBlockingCopiesAreCountedNotReported) {
  TestEngine t(opts("mode=report"));
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::EventQuery, "cudaEventQuery", a));
  SyncEvent pinned = event(ApiKind::MemcpyAsync, "cudaMemcpyAsync", a);
  pinned.direction = Direction::HostToDevice;
  pinned.src = MemKind::Pinned;
  EXPECT_FALSE(t.engine->wants_stack(pinned));
  t.engine->record(pinned);
  Report r = t.engine->build_report();
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.totals.queries, 1u);
  EXPECT_EQ(r.totals.intercepted, 2u);
  EXPECT_EQ(r.totals.blocking, 0u);
}

TEST(Engine, SuppressedSitesAreLeftOutAndCounted) {
  Suppressions s;
  ASSERT_EQ(s.parse("src:*/eval.cpp\n"), "");
  TestEngine t(opts("mode=warn"), std::move(s));
  auto a = t.symbolizer->stack(item_at("/work/app/eval.cpp", 7));
  auto b = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  for (int i = 0; i < 4; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", b));
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].line, 42);
  EXPECT_EQ(r.totals.suppressed, 4u);
  ASSERT_EQ(r.suppressions.size(), 1u);
  EXPECT_EQ(r.suppressions[0].hits, 4u);
  EXPECT_EQ(t.output.find("eval.cpp"), std::string::npos) << "suppressed sites print no warning: " << t.output;
}

TEST(Engine, RegionCountsOnlyItsOwnSyncsAndDescribesThem) {
  TestEngine t(opts("mode=report"));
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));  // before: not counted
  std::uint64_t token = t.engine->region_begin();
  EXPECT_TRUE(t.engine->wants_stack(event(ApiKind::StreamSync, "s", a, 0)));
  for (int i = 0; i < 2; ++i) t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a, 500));
  RegionResult r = t.engine->region_end(token);
  EXPECT_EQ(r.syncs, 2u);
  EXPECT_EQ(r.stall_ns, 1000u);
  EXPECT_NE(r.description.find("2 x nosync-item at /work/app/train.cpp:42"), std::string::npos) << r.description;
  std::uint64_t clean = t.engine->region_begin();
  EXPECT_EQ(t.engine->region_end(clean).syncs, 0u);
}

TEST(Engine, FinishWritesOncePerProcessAndForkedChildrenStayQuietWithoutFindings) {
  TestEngine t(opts("mode=report"));
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));
  EXPECT_TRUE(t.engine->finish());
  std::string once = t.output;
  EXPECT_NE(once.find("SUMMARY: nosync-sanitizer: 1 host syncs at 1 site"), std::string::npos) << once;
  EXPECT_FALSE(t.engine->finish());
  EXPECT_EQ(t.output, once);
  // The child of a fork starts empty: the parent's sites are not reported twice.
  t.engine->before_fork();
  t.engine->after_fork_child();
  t.engine->set_pid_source([] { return 4343; });
  EXPECT_FALSE(t.engine->finish());
  EXPECT_EQ(t.output, once);
}

TEST(Engine, SixteenThreadsRecordConcurrentlyWithoutLostCounts) {
  TestEngine t(opts("mode=warn"));
  constexpr int kThreads = 16, kPerThread = 5000;
  std::vector<std::vector<std::uintptr_t>> stacks;
  for (int i = 0; i < 4; ++i) stacks.push_back(t.symbolizer->stack(item_at("/work/app/train.cpp", 10 + i)));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < kPerThread; ++k)
        t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", stacks[(i + k) % 4], 2));
    });
  for (auto& th : threads) th.join();
  Report r = t.engine->build_report();
  ASSERT_EQ(r.findings.size(), 4u);
  std::uint64_t calls = 0;
  for (const Finding& f : r.findings) {
    calls += f.count;
    EXPECT_EQ(f.count, static_cast<std::uint64_t>(kThreads) * kPerThread / 4);
  }
  EXPECT_EQ(calls, static_cast<std::uint64_t>(kThreads) * kPerThread);
  EXPECT_EQ(r.totals.blocking_ns, 2ull * kThreads * kPerThread);
  EXPECT_EQ(t.symbolizer->calls.load(), 4) << "one symbolization per site even under contention";
}

TEST(Engine, WithJsonReportsLiveLinesStayOutOfTheLogFile) {
  TestEngine t(opts("mode=warn:format=json"));
  std::string live;
  t.engine->set_live_writer([&live](const std::string& s) { live += s; });
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));
  EXPECT_NE(live.find("WARNING: nosync-sanitizer: nosync-item at /work/app/train.cpp:42"), std::string::npos);
  EXPECT_EQ(t.output, "") << "nothing but the JSON document goes to the report destination";
  t.engine->finish();
  EXPECT_EQ(t.output.rfind("{", 0), 0u) << t.output;
}

TEST(Engine, WithoutSymbolizationFramesKeepOnlyAddresses) {
  TestEngine t(opts("mode=report:symbolize=0"));
  auto a = t.symbolizer->stack(item_at("/work/app/train.cpp", 42));
  t.engine->record(event(ApiKind::StreamSync, "cudaStreamSynchronize", a));
  Report r = t.engine->build_report();
  EXPECT_EQ(t.symbolizer->calls.load(), 0);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, RuleId::ExplicitSync) << "no frames: the API decides";
  EXPECT_EQ(r.findings[0].frames.size(), a.size());
}
