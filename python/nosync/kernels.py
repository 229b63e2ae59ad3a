"""nosync's multi-tensor kernels from Python: thin wrappers over
torch.ops.nosync.* (libnosync_kernels.so, loaded on first import). Outputs
stay on the tensors' device and nothing syncs; CPU tensors take the CPU path.

    total = nosync.kernels.sum(tensors)                 # one launch for the whole list
    norm = nosync.kernels.clip_grad_norm_(model.parameters(), 1.0)   # device tensor, no sync
    bad = nosync.kernels.nonfinite_flag(grads)          # device flag, read it late
    metrics = nosync.kernels.MetricAccumulator("cuda")  # device sums, late pinned readback
"""
import torch

from . import _libs

_path = _libs.kernels_path()
if not _path:
    raise ImportError("nosync.kernels: libnosync_kernels.so is not in this install (the build had no CUDA "
                      "toolkit or LibTorch?); set NOSYNC_KERNELS_LIB to a built copy")
torch.ops.load_library(_path)
ops = torch.ops.nosync


def _list(tensors):
    return [t for t in tensors]


def sum(tensors):
    """Sum of every element of every tensor, as a 0-dim tensor (fp32 accumulation)."""
    return ops.sum(_list(tensors))


def sum_per_tensor(tensors):
    return ops.sum_per_tensor(_list(tensors))


def mean(tensors):
    return ops.mean(_list(tensors))


def l2_norm(tensors):
    """L2 norm over all the tensors together (as torch.nn.utils.clip_grad_norm_'s total norm)."""
    return ops.l2_norm(_list(tensors))


def l2_norm_per_tensor(tensors):
    return ops.l2_norm_per_tensor(_list(tensors))


def nonfinite_flag(tensors, flag=None):
    """A device flag (0-dim) that is nonzero if any element is NaN or Inf; no sync."""
    tensors = _list(tensors)
    return ops.nonfinite_flag(tensors) if flag is None else ops.nonfinite_flag.flag(tensors, flag)


def clip_grad_norm_(parameters, max_norm, eps=1e-6):
    """torch.nn.utils.clip_grad_norm_ without the sync: scales the gradients
    in place and returns the total norm as a device tensor. Takes parameters
    (their .grad is clipped) or the gradient tensors themselves."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = []
    for p in parameters:
        g = p.grad if p.requires_grad else p  # a parameter (possibly without a grad yet) or a gradient
        if g is not None:
            grads.append(g)
    return ops.clip_grad_norm_(grads, float(max_norm), float(eps))


def MetricAccumulator(device="cuda", readback_slots=3):
    """Named scalars summed on the device: add(name, value), poll() never waits, read(), flush(), reset()."""
    return torch.classes.nosync.MetricAccumulator(str(device), readback_slots)


def PinnedStager(device="cuda", slots=4):
    """stage(cpu_tensor): copy through a ring of pinned buffers, non_blocking to the device (on a CPU device: t.to(device))."""
    return torch.classes.nosync.PinnedStager(str(device), slots)
