// The CUPTI adapter driven with fabricated callback data (no GPU, no
// subscription): which ids count, runtime/driver de-duplication, timing,
// queries, and the per-thread state reset on resubscription.
#include "cupti_adapter.h"
#include "engine.h"

#include <thread>

#include <gtest/gtest.h>

using namespace nosync::san;

namespace {

class NoSymbols : public Symbolizer {
 public:
  std::vector<Frame> symbolize(const std::uintptr_t* pcs, std::size_t n) override {
    std::vector<Frame> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(Frame{pcs[i], "", "", 0, "", 0});
    return out;
  }
};

struct Harness {
  Harness() {
    Options o;
    EXPECT_EQ(parse_options("mode=report", o), "");
    engine = std::make_unique<Engine>(o, std::make_unique<NoSymbols>());
    engine->set_writer([](const std::string&) {});
    detail::attach_engine_for_testing(engine.get());
  }
  ~Harness() { detail::attach_engine_for_testing(nullptr); }

  // One API call: ENTER, `inside` (nested calls), EXIT.
  template <class Inside>
  void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name, Inside inside,
            const void* params = nullptr) {
    std::uint64_t correlation = 0;
    CUpti_CallbackData data{};
    data.functionName = name;
    data.functionParams = params;
    data.correlationData = &correlation;
    data.callbackSite = CUPTI_API_ENTER;
    detail::callback_for_testing()(nullptr, domain, cbid, &data);
    inside();
    data.callbackSite = CUPTI_API_EXIT;
    detail::callback_for_testing()(nullptr, domain, cbid, &data);
  }
  void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name) {
    call(domain, cbid, name, [] {});
  }

  std::unique_ptr<Engine> engine;
};

constexpr auto kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto kDrv = CUPTI_CB_DOMAIN_DRIVER_API;

}  // namespace

TEST(CuptiAdapter, RuntimeCallAndTheDriverCallInsideItCountOnce) {
  Harness h;
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize_v3020", [&] {
    h.call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize");
  });
  Totals t = h.engine->totals();
  EXPECT_EQ(t.blocking, 1u);
  EXPECT_EQ(t.intercepted, 1u);
  Report r = h.engine->build_report();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].apis.count("cudaStreamSynchronize"), 1u) << "named by the runtime API, no suffix";
  EXPECT_EQ(r.findings[0].rule, nosync::rules::RuleId::ExplicitSync);
}

TEST(CuptiAdapter, DriverCallsOutsideTheRuntimeAreCounted) {
  Harness h;
  h.call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize");
  h.call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize");
  EXPECT_EQ(h.engine->totals().blocking, 2u);
}

TEST(CuptiAdapter, HostTimeBetweenEnterAndExitIsTheStall) {
  Harness h;
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize_v3020",
         [] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); });
  EXPECT_GE(h.engine->totals().blocking_ns, 3000000u);
  EXPECT_LT(h.engine->totals().blocking_ns, 3000000000u);
}

TEST(CuptiAdapter, QueriesAreCountedNotStalls) {
  Harness h;
  for (int i = 0; i < 3; ++i) h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery");
  Totals t = h.engine->totals();
  EXPECT_EQ(t.queries, 3u);
  EXPECT_EQ(t.blocking, 0u);
}

TEST(CuptiAdapter, UnwatchedIdsAreIgnored) {
  Harness h;
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel");
  h.call(CUPTI_CB_DOMAIN_RESOURCE, 1, "resource");
  EXPECT_EQ(h.engine->totals().intercepted, 0u);
}

TEST(CuptiAdapter, CopyDirectionComesFromTheParameters) {
  Harness h;
  // Without a driver no pointer can be classified, so the host side is
  // "unknown" and an async copy is not judged blocking; a synchronous
  // device-to-host copy blocks whatever the memory.
  int host = 0;
  cudaMemcpy_v3020_params sync{&host, reinterpret_cast<void*>(0x1000), sizeof host, cudaMemcpyDeviceToHost};
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", [] {}, &sync);
  cudaMemcpyAsync_v3020_params async{&host, reinterpret_cast<void*>(0x1000), sizeof host, cudaMemcpyDeviceToHost,
                                     nullptr};
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, "cudaMemcpyAsync", [] {}, &async);
  Totals t = h.engine->totals();
  EXPECT_EQ(t.intercepted, 2u);
  EXPECT_EQ(t.blocking, 1u);
  Report r = h.engine->build_report();
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, nosync::rules::RuleId::DeviceToHost);
  EXPECT_EQ(r.findings[0].bytes, sizeof host);
}

TEST(CuptiAdapter, FreeingANullPointerIsNotAWait) {
  Harness h;
  // cuBLAS's cudaFree(0) at handle creation: "no operation is performed".
  cudaFree_v3020_params null_free{nullptr};
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", [] {}, &null_free);
  cuMemFree_v2_params null_drv{0};
  h.call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree", [] {}, &null_drv);
  EXPECT_EQ(h.engine->totals().blocking, 0u);
  cudaFree_v3020_params real{reinterpret_cast<void*>(0x1000)};
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", [] {}, &real);
  cudaFreeHost_v3020_params host{reinterpret_cast<void*>(0x2000)};
  h.call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, "cudaFreeHost", [] {}, &host);
  EXPECT_EQ(h.engine->totals().intercepted, 4u);
  EXPECT_EQ(h.engine->totals().blocking, 2u);
}

TEST(CuptiAdapter, ResubscribingResetsAThreadLeftInsideARuntimeCall) {
  Harness h;
  // ENTER of a runtime call whose EXIT never arrives (unsubscribed meanwhile).
  std::uint64_t correlation = 0;
  CUpti_CallbackData enter{};
  enter.callbackSite = CUPTI_API_ENTER;
  enter.correlationData = &correlation;
  detail::callback_for_testing()(nullptr, kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &enter);
  h.call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize");
  EXPECT_EQ(h.engine->totals().blocking, 0u) << "still inside the runtime call: de-duplicated";
  detail::attach_engine_for_testing(h.engine.get());  // what a resubscription does
  h.call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize");
  EXPECT_EQ(h.engine->totals().blocking, 1u);
}
