// Device-side metric sums with late, event-guarded readback through pinned
// memory. Replaces `running_loss += loss.item<double>()`, which waits for the
// GPU every step, with one small add kernel per value.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <nosync/kernels.h>

#include "device.h"

#include <unordered_map>

namespace nosync::kernels {

struct MetricAccumulator::Impl {
  // One readback in flight: a pinned copy of the sums, the counts at that
  // time (known on the host, never copied), and the event that says it landed.
  struct Readback {
    at::Tensor host;  // pinned double[capacity]
    std::vector<int64_t> counts;
    cudaEvent_t done = nullptr;
    bool in_flight = false;
    uint64_t ticket = 0;
  };

  c10::Device device;
  std::vector<std::string> names;
  std::unordered_map<std::string, size_t> index;
  at::Tensor sums;               // double[capacity] on the device
  std::vector<at::Tensor> views;  // 0-d view of sums[i]: add() launches exactly one kernel
  std::vector<int64_t> counts;
  std::vector<Readback> ring;
  uint64_t issued = 0;
  uint64_t latest_ticket = 0;
  std::optional<Values> latest;

  Impl(c10::Device d, int slots)
      : device(detail::resolve_device(d)), ring(detail::checked_slots(slots, "MetricAccumulator: readback_slots")) {
    grow(8);
    if (device.is_cuda()) {
      c10::cuda::CUDAGuard guard(device);
      for (auto& r : ring) C10_CUDA_CHECK(cudaEventCreateWithFlags(&r.done, cudaEventDisableTiming));
    }
  }
  ~Impl() {
    for (auto& r : ring)
      if (r.done) cudaEventDestroy(r.done);
  }

  void grow(int64_t capacity) {
    at::Tensor bigger = at::zeros({capacity}, at::TensorOptions().dtype(at::kDouble).device(device));
    if (sums.defined()) bigger.narrow(0, 0, sums.numel()).copy_(sums);
    sums = bigger;
    views.clear();
    for (int64_t i = 0; i < capacity; ++i) views.push_back(sums.select(0, i));
  }

  size_t slot_of(const std::string& name) {
    auto it = index.find(name);
    if (it != index.end()) return it->second;
    const size_t i = names.size();
    if (static_cast<int64_t>(i) == sums.numel()) grow(sums.numel() * 2);
    names.push_back(name);
    counts.push_back(0);
    index.emplace(name, i);
    return i;
  }

  Values values_of(const double* s, const std::vector<int64_t>& c) const {
    Values v;
    for (size_t i = 0; i < c.size(); ++i)
      v[names[i]] = c[i] == 0 ? 0.0 : s[i] / static_cast<double>(c[i]);
    return v;
  }

  // Enqueues a copy of the sums into r's pinned buffer and records r's event.
  void start(Readback& r) {
    if (!r.host.defined() || r.host.numel() < sums.numel())
      r.host = at::empty({sums.numel()}, at::TensorOptions().dtype(at::kDouble).pinned_memory(true));
    r.host.narrow(0, 0, sums.numel()).copy_(sums, /*non_blocking=*/true);
    r.counts = counts;
    c10::cuda::CUDAGuard guard(device);
    C10_CUDA_CHECK(cudaEventRecord(r.done, at::cuda::getCurrentCUDAStream(device.index()).stream()));
    r.in_flight = true;
    r.ticket = ++issued;
  }

  void harvest(Readback& r) {
    r.in_flight = false;
    if (r.ticket > latest_ticket) {
      latest_ticket = r.ticket;
      latest = values_of(r.host.const_data_ptr<double>(), r.counts);
    }
  }
};

MetricAccumulator::MetricAccumulator(c10::Device device, int readback_slots)
    : impl_(std::make_unique<Impl>(device, readback_slots)) {}
MetricAccumulator::~MetricAccumulator() = default;

void MetricAccumulator::add(const std::string& name, const at::Tensor& value) {
  TORCH_CHECK(value.defined() && value.numel() == 1, "MetricAccumulator::add(\"", name,
              "\"): expected a one-element tensor, got ", value.defined() ? value.sizes() : at::IntArrayRef{});
  TORCH_CHECK(!value.is_complex(), "MetricAccumulator::add(\"", name, "\"): value has dtype ", value.scalar_type(),
              "; expected a real, integer or bool value");
  TORCH_CHECK(value.device() == impl_->device, "MetricAccumulator::add(\"", name, "\"): value is on ", value.device(),
              " but the accumulator is on ", impl_->device);
  const size_t i = impl_->slot_of(name);
  // Detached: an in-place add of a value that requires grad would make the
  // sums part of every step's autograd graph and keep those graphs alive.
  const at::Tensor v = value.detach();
  impl_->views[i].add_(v.dim() == 0 ? v : v.reshape({}));
  ++impl_->counts[i];
}

std::optional<MetricAccumulator::Values> MetricAccumulator::poll() {
  if (!impl_->device.is_cuda()) return read();
  Impl& m = *impl_;
  c10::cuda::CUDAGuard guard(m.device);
  bool free_slot = false;
  for (auto& r : m.ring) {
    if (r.in_flight) {
      const cudaError_t st = cudaEventQuery(r.done);  // never blocks
      if (st == cudaSuccess) m.harvest(r);
      else if (st == cudaErrorNotReady) (void)cudaGetLastError();  // not an error: clear it
      else C10_CUDA_CHECK(st);
    }
    free_slot = free_slot || !r.in_flight;
  }
  if (free_slot) {
    for (auto& r : m.ring)
      if (!r.in_flight) {
        m.start(r);
        break;
      }
  }
  return m.latest;
}

MetricAccumulator::Values MetricAccumulator::read() {
  Impl& m = *impl_;
  if (!m.device.is_cuda()) return m.values_of(m.sums.const_data_ptr<double>(), m.counts);
  // Reuse a ring slot: wait for it if busy (it is older than this read anyway).
  Impl::Readback& r = m.ring[0];
  c10::cuda::CUDAGuard guard(m.device);
  if (r.in_flight) {
    C10_CUDA_CHECK(cudaEventSynchronize(r.done));
    m.harvest(r);
  }
  m.start(r);
  C10_CUDA_CHECK(cudaEventSynchronize(r.done));  // the one wait
  m.harvest(r);
  return *m.latest;
}

MetricAccumulator::Values MetricAccumulator::flush() {
  Values v = read();
  reset();
  return v;
}

void MetricAccumulator::reset() {
  impl_->sums.zero_();
  std::fill(impl_->counts.begin(), impl_->counts.end(), 0);
}

}  // namespace nosync::kernels
