// nosync::kernels against the LibTorch ways of doing the same thing, side by
// side in one process on one GPU, next to the goals of issue 4.
//
// For each set: wall time per call (host timer over many back-to-back calls,
// then one sync: host work and GPU work, whichever bounds), host time per call
// (the enqueue alone), GPU time per call (the op captured in a CUDA graph and
// replayed, timed with events: kernels only), and achieved bandwidth from the
// GPU time. The read and copy ceilings are measured in the same run.
// Writes $NOSYNC_RESULTS_DIR/kernels.md and kernels.json.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nosync/kernels.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "ops_impl.h"
#include "plan_cache.h"
#include "tensor_list.h"

namespace nk = nosync::kernels;

namespace {

using Clock = std::chrono::steady_clock;
const c10::Device kCuda(c10::kCUDA, 0);

struct Timing {
  double wall_us = 0, host_us = 0, gpu_us = -1;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Wall and host time per call over enough calls to take ~60 ms (3 at least).
Timing time_calls(const std::function<void()>& f) {
  f();
  f();
  torch::cuda::synchronize();
  auto t0 = Clock::now();
  f();
  torch::cuda::synchronize();
  const double one = seconds_since(t0);
  const int n = static_cast<int>(std::clamp(0.06 / std::max(one, 1e-7), 3.0, 3000.0));
  Timing t;
  t0 = Clock::now();
  for (int i = 0; i < n; ++i) f();
  t.host_us = seconds_since(t0) * 1e6 / n;
  torch::cuda::synchronize();
  t.wall_us = seconds_since(t0) * 1e6 / n;
  return t;
}

// GPU time per call: the op captured once into a graph, replayed n times.
double gpu_time_us(const std::function<void()>& f) {
  at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  at::cuda::CUDAStreamGuard guard(side);
  f();  // warm-up on the capture stream
  side.synchronize();
  at::cuda::CUDAGraph graph;
  graph.capture_begin();
  f();
  graph.capture_end();
  graph.replay();
  side.synchronize();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, side.stream());
  graph.replay();
  cudaEventRecord(b, side.stream());
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  const int n = static_cast<int>(std::clamp(60.0 / std::max<double>(ms, 1e-4), 5.0, 2000.0));
  cudaEventRecord(a, side.stream());
  for (int i = 0; i < n; ++i) graph.replay();
  cudaEventRecord(b, side.stream());
  cudaEventSynchronize(b);
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e3 / n;
}

struct Row {
  std::string set, op, impl;
  Timing t;
  double bytes = 0;  // moved per call (for bandwidth)
  std::string goal, verdict;
};

std::string fmt(double v, int prec = 1) {
  if (v < 0) return "—";
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(prec);
  o << v;
  return o.str();
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

TEST(KernelsBench, SideBySide) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU on this machine; the benchmark runs on the GPU machine";
  torch::NoGradGuard no_grad;
  const auto f32 = at::TensorOptions().device(kCuda);
  std::vector<Row> rows;

  // Ceilings, measured now: a big read (torch.sum) and a big copy.
  const at::Tensor big = at::randn({int64_t{1} << 29}, f32);  // 2 GiB
  at::Tensor big_dst = at::empty_like(big);
  const double big_bytes = static_cast<double>(big.nbytes());
  const double read_us = gpu_time_us([&] { (void)big.sum(); });
  const double copy_us = gpu_time_us([&] { big_dst.copy_(big); });
  const double read_bw = big_bytes / read_us * 1e-3, copy_bw = 2 * big_bytes / copy_us * 1e-3;  // GB/s
  big_dst = at::Tensor();

  struct Set {
    std::string name;
    int64_t count, numel;
    at::ScalarType dtype;
  };
  const std::vector<Set> sets{{"5000x1k fp32", 5000, 1000, at::kFloat},
                              {"2000x64k fp32", 2000, 65536, at::kFloat},
                              {"148x800k fp32", 148, 800000, at::kFloat},
                              {"2000x64k bf16", 2000, 65536, at::kBFloat16}};
  std::string plan_miss;
  for (const Set& s : sets) {
    std::vector<at::Tensor> ts, params;  // params: the same tensors as .grad() of parameters
    for (int64_t i = 0; i < s.count; ++i) {
      ts.push_back(at::randn({s.numel}, f32).to(s.dtype));
      params.push_back(at::empty({s.numel}, f32.dtype(s.dtype)).requires_grad_());
      params.back().mutable_grad() = ts.back();
    }
    const double bytes = static_cast<double>(s.count * s.numel * at::elementSize(s.dtype));
    const bool large = s.numel >= 65536;
    auto add = [&](const std::string& op, const std::string& impl, const std::function<void()>& f, bool graphable,
                   double moved) {
      Row r{s.name, op, impl, time_calls(f), moved, "", ""};
      if (graphable) r.t.gpu_us = gpu_time_us(f);
      rows.push_back(r);
      return rows.size() - 1;
    };

    // Plan build cost: the first call with a list never seen (cache cleared).
    nosync::kernels::detail::clear_plan_cache();
    torch::cuda::synchronize();
    auto t0 = Clock::now();
    (void)nk::sum(ts);
    const double miss_host = seconds_since(t0) * 1e6;
    // Host cost of the validation + gather pass alone (part of every call).
    (void)nosync::kernels::detail::gather("bench", ts);
    t0 = Clock::now();
    for (int i = 0; i < 200; ++i) (void)nosync::kernels::detail::gather("bench", ts);
    const double gather_us = seconds_since(t0) * 1e6 / 200;
    // The same pass plus the plan lookup (exact compare of the list with the
    // cached one): everything a list call does before it allocates and launches.
    t0 = Clock::now();
    for (int i = 0; i < 200; ++i) (void)nosync::kernels::detail::resolve(nosync::kernels::detail::gather("bench", ts));
    const double resolve_us = seconds_since(t0) * 1e6 / 200;
    // The same pass over parameters, selecting each one's .grad() (clip_grad_norm_'s list): three more heap
    // objects per tensor to reach (AutogradMeta, the gradient's TensorImpl and StorageImpl).
    using nosync::kernels::detail::Select;
    (void)nosync::kernels::detail::gather("bench", params, Select::kGradsOrTensors);
    t0 = Clock::now();
    for (int i = 0; i < 200; ++i) (void)nosync::kernels::detail::gather("bench", params, Select::kGradsOrTensors);
    const double gather_grads_us = seconds_since(t0) * 1e6 / 200;
    plan_miss += "| " + s.name + " | " + fmt(miss_host) + " | " + fmt(gather_us, 2) + " | " + fmt(resolve_us, 2) +
                 " | " + fmt(gather_grads_us, 2) + " |\n";

    // sum
    const size_t ns = add("sum", "nosync::kernels::sum", [&] { (void)nk::sum(ts); }, true, bytes);
    const nk::PreparedList prepared(ts);
    const auto prepared_grads = nk::PreparedList::grads_of(params);
    const size_t nsp = add("sum", "nosync PreparedList::sum", [&] { (void)prepared.sum(); }, true, bytes);
    add("sum", "C++ loop acc += t.sum()", [&] {
      at::Tensor acc = at::zeros({}, f32.dtype(s.dtype));
      for (const auto& t : ts) acc += t.sum();
    }, false, bytes);
    add("sum", "_foreach_norm(1) + stack + sum", [&] { (void)at::stack(at::_foreach_norm(ts, 1)).sum(); }, true, bytes);
    add("sum", "cat + sum", [&] { (void)at::cat(ts).sum(); }, true, 3 * bytes);
    if (large) {
      // Not a contender: the read ceiling at this set's size, for judging the
      // ops above (the 2 GiB ceiling amortises start-up and tail further).
      const at::Tensor one = at::randn({s.count * s.numel}, f32).to(s.dtype);
      add("sum", "torch sum of one tensor of the same bytes (reference)", [&] { (void)one.sum(); }, true, bytes);
    }
    if (s.count == 5000) {
      for (size_t i : {ns, nsp}) {
        rows[i].goal = "wall ≤ 25 µs";
        rows[i].verdict = rows[i].t.wall_us <= 25 ? "met" : "MISSED";
      }
    }
    if (large) {
      const double bw = bytes / rows[ns].t.gpu_us * 1e-3;
      rows[ns].goal = "≥ 90 % of read BW (" + fmt(0.9 * read_bw, 0) + " GB/s)";
      rows[ns].verdict = (bw >= 0.9 * read_bw ? "met (" : "MISSED (") + fmt(100 * bw / read_bw, 0) + " %)";
    }
    add("sum_per_tensor", "nosync::kernels::sum_per_tensor", [&] { (void)nk::sum_per_tensor(ts); }, true, bytes);

    // l2 norm
    const size_t nl = add("l2_norm", "nosync::kernels::l2_norm", [&] { (void)nk::l2_norm(ts); }, true, bytes);
    const size_t fl = add("l2_norm", "_foreach_norm(2) + stack + norm",
                          [&] { (void)at::linalg_vector_norm(at::stack(at::_foreach_norm(ts, 2)), 2); }, true, bytes);
    const size_t nlp = add("l2_norm", "nosync PreparedList::l2_norm", [&] { (void)prepared.l2_norm(); }, true, bytes);
    for (size_t i : {nl, nlp}) {
      const double speed = rows[fl].t.wall_us / rows[i].t.wall_us;
      rows[i].goal = "≥ 2.5× _foreach_norm(2)";
      rows[i].verdict = (speed >= 2.5 ? "met (" : "MISSED (") + fmt(speed, 2) + "×)";
    }
    add("l2_norm_per_tensor", "nosync::kernels::l2_norm_per_tensor", [&] { (void)nk::l2_norm_per_tensor(ts); }, true,
        bytes);
    add("l2_norm_per_tensor", "_foreach_norm(2) + stack", [&] { (void)at::stack(at::_foreach_norm(ts, 2)); }, true,
        bytes);
    add("nonfinite_flag", "nosync::kernels::nonfinite_flag", [&] { (void)nk::nonfinite_flag(ts); }, true, bytes);
    add("nonfinite_flag", "_foreach_norm(2) + stack + isfinite.all", [&] {
      (void)at::isfinite(at::stack(at::_foreach_norm(ts, 2))).all();
    }, true, bytes);

    // clip: max_norm 1e-30 so that every call really scales, for both
    // implementations: the coefficient 1e-30 / (norm + 1e-6) stays < 1 even
    // once the values have shrunk to zero. (With max_norm 1e-3, as in the first
    // recorded run, fp32 converges to a coefficient of exactly 1 after a few
    // calls, and nosync then skips the writes while torch still multiplies.)
    const size_t nc = add("clip_grad_norm_", "nosync::kernels::clip_grad_norm_", [&] {
      (void)nk::clip_grad_norm_(params, 1e-30);
    }, true, 3 * bytes);
    const size_t ncp = add("clip_grad_norm_", "nosync PreparedList::clip_grad_norm_", [&] {
      (void)prepared_grads.clip_grad_norm_(1e-30);
    }, true, 3 * bytes);
    add("clip_grad_norm_", "torch::nn::utils::clip_grad_norm_ (C++)", [&] {
      (void)torch::nn::utils::clip_grad_norm_(params, 1e-30);
    }, false, 3 * bytes);
    if (s.count == 5000 || s.numel == 800000) {
      const double goal = s.count == 5000 ? 60 : 360;
      if (s.dtype == at::kFloat) {
        for (size_t i : {nc, ncp}) {
          rows[i].goal = "wall ≤ " + fmt(goal, 0) + " µs";
          rows[i].verdict = rows[i].t.wall_us <= goal ? "met" : "MISSED";
        }
      }
    }
  }

  // Report.
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::ostringstream md;
  md << "## nosync::kernels benchmark\n\n"
     << "- GPU: " << prop.name << " (" << prop.multiProcessorCount << " SMs), CUDA driver API " << driver
     << ", runtime " << runtime << "\n"
     << "- read ceiling (torch sum of 2 GiB fp32): " << fmt(read_bw, 0) << " GB/s; copy ceiling (2 GiB, r+w): "
     << fmt(copy_bw, 0) << " GB/s\n"
     << "- wall = host timer over back-to-back calls + one sync, per call; host = enqueue only; GPU = CUDA-graph "
        "replay timed with events (— where the op syncs or is a per-tensor loop); BW from GPU time\n\n"
     << "| set | op | implementation | wall µs | host µs | GPU µs | GB/s (GPU) | goal | verdict |\n"
     << "|---|---|---|---:|---:|---:|---:|---|---|\n";
  std::ostringstream js;
  js << "{\n  \"gpu\": \"" << prop.name << "\", \"driver\": " << driver << ", \"runtime\": " << runtime
     << ",\n  \"read_bw_gbs\": " << read_bw << ", \"copy_bw_gbs\": " << copy_bw << ",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double bw = r.t.gpu_us > 0 ? r.bytes / r.t.gpu_us * 1e-3 : -1;
    md << "| " << r.set << " | " << r.op << " | " << r.impl << " | " << fmt(r.t.wall_us) << " | " << fmt(r.t.host_us)
       << " | " << fmt(r.t.gpu_us) << " | " << fmt(bw, 0) << " | " << r.goal << " | " << r.verdict << " |\n";
    js << "    {\"set\": \"" << r.set << "\", \"op\": \"" << r.op << "\", \"impl\": \"" << r.impl
       << "\", \"wall_us\": " << r.t.wall_us << ", \"host_us\": " << r.t.host_us << ", \"gpu_us\": " << r.t.gpu_us
       << ", \"gbs\": " << bw << ", \"goal\": \"" << r.goal << "\", \"verdict\": \"" << r.verdict << "\"}"
       << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
  md << "\nHost cost: first call with a new list (plan built and uploaded, no sync), and the validate+gather pass "
        "that every call makes, alone and with the plan lookup; the last column is that pass over parameters, "
        "selecting their gradients (clip_grad_norm_):\n\n| set | first call µs | gather µs | gather + lookup µs "
        "| gather grads µs |\n|---|---:|---:|---:|---:|\n"
     << plan_miss;
  std::printf("%s", md.str().c_str());
  const std::string dir = env_or("NOSYNC_RESULTS_DIR", ".");
  std::ofstream(dir + "/kernels.md") << md.str();
  std::ofstream(dir + "/kernels.json") << js.str();
}

}  // namespace
