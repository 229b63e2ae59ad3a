// Host-to-device staging through a ring of pinned buffers. A copy from
// pageable memory makes the driver stage it itself and blocks the host; from
// pinned memory, non_blocking, it is one DMA that overlaps compute.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <nosync/kernels.h>

#include "device.h"

#include <cstring>

namespace nosync::kernels {

struct PinnedStager::Impl {
  struct Slot {
    at::Tensor pinned;  // bytes
    cudaEvent_t consumed = nullptr;  // recorded after the H2D copy that reads `pinned`
    bool used = false;
  };
  c10::Device device;
  std::vector<Slot> ring;
  size_t next = 0;

  Impl(c10::Device d, int slots)
      : device(detail::resolve_device(d)), ring(detail::checked_slots(slots, "PinnedStager: slots")) {
    // A non-CUDA device stages nothing: stage() is t.to(device) there.
    if (!device.is_cuda()) return;
    c10::cuda::CUDAGuard guard(device);
    for (auto& s : ring) C10_CUDA_CHECK(cudaEventCreateWithFlags(&s.consumed, cudaEventDisableTiming));
  }
  ~Impl() {
    for (auto& s : ring)
      if (s.consumed) cudaEventDestroy(s.consumed);
  }
};

PinnedStager::PinnedStager(c10::Device device, int slots) : impl_(std::make_unique<Impl>(device, slots)) {}
PinnedStager::~PinnedStager() = default;

at::Tensor PinnedStager::stage(const at::Tensor& cpu_tensor) {
  TORCH_CHECK(cpu_tensor.defined(), "PinnedStager::stage: expected a defined tensor");
  // What `cpu_tensor.to(device)` gives for anything there is nothing to
  // stage for: a tensor already on a device, or a CPU target.
  if (!impl_->device.is_cuda() || !cpu_tensor.device().is_cpu()) return cpu_tensor.to(impl_->device);
  at::Tensor dst = at::empty(cpu_tensor.sizes(), cpu_tensor.options().device(impl_->device));
  stage_into(cpu_tensor, dst);
  return dst;
}

void PinnedStager::stage_into(const at::Tensor& cpu_tensor, at::Tensor& dst) {
  TORCH_CHECK(cpu_tensor.defined() && cpu_tensor.device().is_cpu(),
              "PinnedStager::stage_into: expected a CPU tensor");
  Impl& m = *impl_;
  TORCH_CHECK(dst.defined() && dst.device() == m.device, "PinnedStager::stage_into: the destination must be on ",
              m.device);
  TORCH_CHECK(dst.sizes() == cpu_tensor.sizes() && dst.scalar_type() == cpu_tensor.scalar_type(),
              "PinnedStager::stage_into: the destination has shape ", dst.sizes(), " and dtype ", dst.scalar_type(),
              ", the source ", cpu_tensor.sizes(), " and ", cpu_tensor.scalar_type());
  if (!m.device.is_cuda()) {
    dst.copy_(cpu_tensor);
    return;
  }
  c10::cuda::CUDAGuard guard(m.device);
  const at::Tensor src = cpu_tensor.contiguous();
  const auto bytes = static_cast<int64_t>(src.nbytes());
  if (bytes == 0) return;

  Impl::Slot& s = m.ring[m.next];
  m.next = (m.next + 1) % m.ring.size();
  // The buffer's previous copy must have been read by the GPU before it is
  // overwritten. With `slots` buffers this waits only when the host runs that
  // many stagings ahead of the GPU.
  if (s.used) C10_CUDA_CHECK(cudaEventSynchronize(s.consumed));
  if (!s.pinned.defined() || s.pinned.numel() < bytes)
    s.pinned = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  std::memcpy(s.pinned.data_ptr(), src.const_data_ptr(), static_cast<size_t>(bytes));
  const at::Tensor staged = s.pinned.narrow(0, 0, bytes).view(src.scalar_type()).view(src.sizes());
  dst.copy_(staged, /*non_blocking=*/true);
  C10_CUDA_CHECK(cudaEventRecord(s.consumed, at::cuda::getCurrentCUDAStream(m.device.index()).stream()));
  s.used = true;
}

}  // namespace nosync::kernels
