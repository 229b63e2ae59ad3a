// PreparedList: the gather, validation and plan upload of a list done once,
// so each later call is just workspace + output allocation and the launches.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <nosync/kernels.h>

#include "ops_impl.h"
#include "plan_cache.h"

namespace nosync::kernels {

namespace detail {

struct PreparedState {
  std::vector<at::Tensor> tensors;  // the selected tensors, kept alive
  c10::Device device{c10::kCPU};
  at::ScalarType dtype = at::kFloat;
  std::shared_ptr<UploadedPlan> plan;  // CUDA lists only
  // grads_of(): for each tensor taken as a parameter's .grad(), its index in
  // `tensors` and the parameter's index in the caller's list.
  std::vector<std::pair<int32_t, int32_t>> param_grads;

  // A parameter's gradient is referenced by the parameter and by this list.
  // When only this list is left holding it, the parameter has let it go:
  // zero_grad() with set_to_none (LibTorch's default) or a new .grad(). The
  // list would then clip last step's gradients and leave this step's alone,
  // silently, so it refuses. One reference count read per gradient.
  void check_grads_still_held() const {
    for (const auto& [k, param] : param_grads) {
      if (C10_UNLIKELY(tensors[static_cast<size_t>(k)].use_count() == 1))
        TORCH_CHECK(false, "nosync::kernels::PreparedList: the gradient of tensors[", param,
                    "] was replaced or dropped since the list was prepared (zero_grad() sets gradients to none by "
                    "default). Zero them in place (zero_grad(/*set_to_none=*/false)), prepare again after "
                    "backward(), or call nosync::kernels::clip_grad_norm_(params) each step");
    }
  }

  // The device plan on the current stream. The upload was enqueued on the
  // stream current at construction; any other stream waits for it on the
  // device (an external-event node when capturing), which costs no host time.
  Resolved resolve() const {
    Resolved r;
    r.device = device;
    r.dtype = dtype;
    r.count = static_cast<int64_t>(tensors.size());
    r.stream = at::cuda::getCurrentCUDAStream(device.index()).stream();
    if (r.stream != plan->upload_stream) {
      cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
      C10_CUDA_CHECK(cudaStreamIsCapturing(r.stream, &st));
      C10_CUDA_CHECK(cudaStreamWaitEvent(r.stream, plan->uploaded,
                                         st == cudaStreamCaptureStatusNone ? 0 : cudaEventWaitExternal));
    }
    r.plan = plan->device_plan();
    return r;
  }
};

namespace {

std::shared_ptr<PreparedState> prepare(at::TensorList list, Select select) {
  const Gathered g = gather("nosync::kernels::PreparedList", list, select);
  auto s = std::make_shared<PreparedState>();
  s->device = g.device;
  s->dtype = g.dtype;
  // Keep the selected tensors themselves (for grads: the gradient tensors).
  for (int64_t i = 0; i < static_cast<int64_t>(list.size()); ++i) {
    const at::Tensor& t = list[i];
    if (select == Select::kTensors) {
      s->tensors.push_back(t);
    } else {
      const bool has_meta = t.unsafeGetTensorImpl()->autograd_meta() != nullptr;
      const at::Tensor& gr = has_meta ? t.unsafeGetTensorImpl()->grad() : t;
      if (gr.defined()) {
        if (has_meta) s->param_grads.emplace_back(static_cast<int32_t>(s->tensors.size()), static_cast<int32_t>(i));
        s->tensors.push_back(gr);
      } else if (!t.requires_grad()) {
        s->tensors.push_back(t);
      }
    }
  }
  TORCH_INTERNAL_ASSERT(static_cast<int64_t>(s->tensors.size()) == g.count);
  if (g.is_cuda() && !g.empty()) {
    c10::cuda::CUDAGuard guard(g.device);
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream(g.device.index()).stream();
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &st));
    TORCH_CHECK(st == cudaStreamCaptureStatusNone,
                "nosync::kernels::PreparedList: construct it outside CUDA-graph capture (it uploads its plan)");
    s->plan = upload_plan(*g.slots, g.elem_size(), g.device, stream);
  }
  return s;
}

}  // namespace
}  // namespace detail

PreparedList::PreparedList(std::shared_ptr<const detail::PreparedState> s) : state_(std::move(s)) {}
PreparedList::PreparedList(at::TensorList tensors) : state_(detail::prepare(tensors, detail::Select::kTensors)) {}
PreparedList PreparedList::grads_of(at::TensorList params_or_grads) {
  return PreparedList(detail::prepare(params_or_grads, detail::Select::kGradsOrTensors));
}

int64_t PreparedList::size() const { return static_cast<int64_t>(state_->tensors.size()); }

// CUDA lists go straight to the engine; CPU and empty lists take the list ops,
// whose per-call pass costs nothing that matters there.
#define NOSYNC_PREPARED_OP(call_cuda, call_list)                               \
  state_->check_grads_still_held();                                            \
  if (state_->plan) return detail::cuda_path::call_cuda;                       \
  return call_list;

at::Tensor PreparedList::sum() const {
  NOSYNC_PREPARED_OP(total(state_->resolve(), detail::Kind::kSum), kernels::sum(state_->tensors))
}
at::Tensor PreparedList::mean() const {
  NOSYNC_PREPARED_OP(total(state_->resolve(), detail::Kind::kMean), kernels::mean(state_->tensors))
}
at::Tensor PreparedList::l2_norm() const {
  NOSYNC_PREPARED_OP(total(state_->resolve(), detail::Kind::kL2), kernels::l2_norm(state_->tensors))
}
at::Tensor PreparedList::sum_per_tensor() const {
  NOSYNC_PREPARED_OP(per_tensor(state_->resolve(), detail::Kind::kSum), kernels::sum_per_tensor(state_->tensors))
}
at::Tensor PreparedList::l2_norm_per_tensor() const {
  NOSYNC_PREPARED_OP(per_tensor(state_->resolve(), detail::Kind::kL2),
                     kernels::l2_norm_per_tensor(state_->tensors))
}
at::Tensor PreparedList::clip_grad_norm_(double max_norm, double eps) const {
  NOSYNC_PREPARED_OP(clip(state_->resolve(), max_norm, eps),
                     kernels::clip_grad_norm_(state_->tensors, max_norm, eps))
}
#undef NOSYNC_PREPARED_OP

at::Tensor& PreparedList::nonfinite_flag(at::Tensor& flag) const {
  state_->check_grads_still_held();
  if (!state_->plan) return kernels::nonfinite_flag(state_->tensors, flag);
  TORCH_CHECK(flag.defined() && flag.numel() == 1 && flag.device() == state_->device &&
                  (flag.scalar_type() == at::kBool || flag.scalar_type() == at::kInt ||
                   flag.scalar_type() == at::kFloat),
              "PreparedList::nonfinite_flag: flag must be a one-element Bool/Int/Float tensor on ", state_->device);
  detail::cuda_path::nonfinite_into(state_->resolve(), flag);
  return flag;
}

}  // namespace nosync::kernels
