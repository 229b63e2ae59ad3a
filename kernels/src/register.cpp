// torch.ops.nosync.*: the list ops as torch operators, so Python (and
// TorchScript) can call them after torch.ops.load_library("libnosync_kernels.so").
// One implementation serves CPU and CUDA (the ops route by device
// themselves), hence the CompositeExplicitAutograd key. The ops do not
// record autograd history: they are for metrics, checks and clipping.
#include <nosync/kernels.h>
#include <torch/library.h>

namespace {

at::Tensor& nonfinite_flag_into(at::TensorList tensors, at::Tensor& flag) {
  return nosync::kernels::nonfinite_flag(tensors, flag);
}
at::Tensor nonfinite_flag_new(at::TensorList tensors) { return nosync::kernels::nonfinite_flag(tensors); }
at::Tensor clip(at::TensorList tensors, double max_norm, double eps) {
  return nosync::kernels::clip_grad_norm_(tensors, max_norm, eps);
}

}  // namespace

TORCH_LIBRARY(nosync, m) {
  m.def("sum(Tensor[] tensors) -> Tensor");
  m.def("sum_per_tensor(Tensor[] tensors) -> Tensor");
  m.def("mean(Tensor[] tensors) -> Tensor");
  m.def("l2_norm(Tensor[] tensors) -> Tensor");
  m.def("l2_norm_per_tensor(Tensor[] tensors) -> Tensor");
  m.def("nonfinite_flag(Tensor[] tensors) -> Tensor");
  m.def("nonfinite_flag.flag(Tensor[] tensors, Tensor(a!) flag) -> Tensor(a!)");
  m.def("clip_grad_norm_(Tensor(a!)[] tensors, float max_norm, float eps=1e-06) -> Tensor");
}

TORCH_LIBRARY_IMPL(nosync, CompositeExplicitAutograd, m) {
  m.impl("sum", &nosync::kernels::sum);
  m.impl("sum_per_tensor", &nosync::kernels::sum_per_tensor);
  m.impl("mean", &nosync::kernels::mean);
  m.impl("l2_norm", &nosync::kernels::l2_norm);
  m.impl("l2_norm_per_tensor", &nosync::kernels::l2_norm_per_tensor);
  m.impl("nonfinite_flag", &nonfinite_flag_new);
  m.impl("nonfinite_flag.flag", &nonfinite_flag_into);
  m.impl("clip_grad_norm_", &clip);
}
