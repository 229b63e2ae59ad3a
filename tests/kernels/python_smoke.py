"""torch.ops.nosync.* from Python: load libnosync_kernels.so and compare each
op with torch on fresh random inputs. CPU checks run everywhere; the CUDA
checks need a GPU (exit 77 = skipped, with a message, where there is none).

usage: python_smoke.py /path/to/libnosync_kernels.so
"""
import math
import sys

try:
    import torch
except ImportError as e:  # e.g. a LibTorch-only venv without torch's Python deps
    print(f"[  SKIPPED ] this Python cannot import torch ({e}); runs on the GPU machine (tests/gpu/run)")
    sys.exit(77)

torch.ops.load_library(sys.argv[1])
ops = torch.ops.nosync


def check(device, dtype, tol):
    ts = [torch.randn(n, device=device).to(dtype) for n in (0, 1, 17, 4096, 70001, 300)]
    ref = [t.double() for t in ts]
    total = sum(r.sum() for r in ref).item()
    scale = sum(r.abs().sum() for r in ref).item()
    norm = math.sqrt(sum((r * r).sum() for r in ref).item())
    numel = sum(t.numel() for t in ts)

    def close(got, want, s, what):
        got = float(got)
        assert abs(got - want) <= tol * s + 1e-12, f"{what} {device} {dtype}: got {got}, want {want}"

    out = ops.sum(ts)
    assert out.device.type == device and out.dim() == 0 and out.dtype == dtype
    close(out, total, scale, "sum")
    close(ops.mean(ts), total / numel, scale / numel, "mean")
    close(ops.l2_norm(ts), norm, norm, "l2_norm")
    per = ops.sum_per_tensor(ts).double().cpu()
    per_l2 = ops.l2_norm_per_tensor(ts).double().cpu()
    for i, r in enumerate(ref):
        close(per[i], r.sum().item(), r.abs().sum().item(), f"sum_per_tensor[{i}]")
        close(per_l2[i], r.norm().item(), r.norm().item(), f"l2_norm_per_tensor[{i}]")
    assert not ops.nonfinite_flag(ts).item()
    ts[3][5] = float("nan")
    flag = torch.zeros((), dtype=torch.int32, device=device)
    ops.nonfinite_flag(ts, flag)
    assert flag.item() == 1, "nonfinite_flag missed a NaN"
    ts[3][5] = 0.0

    # clip against torch.nn.utils.clip_grad_norm_ on twins
    params = [torch.nn.Parameter(torch.randn(n, device=device).to(dtype)) for n in (5, 1000, 70000)]
    twins = [torch.nn.Parameter(p.detach().clone()) for p in params]
    for p, q in zip(params, twins):
        p.grad = torch.randn_like(p) * 3
        q.grad = p.grad.clone()
    want = torch.nn.utils.clip_grad_norm_(twins, 0.5).item()
    got = ops.clip_grad_norm_(params, 0.5)
    assert got.device.type == device
    close(got, want, want, "clip_grad_norm_")
    for p, q in zip(params, twins):
        assert torch.allclose(p.grad.float(), q.grad.float(), rtol=tol * 50, atol=1e-6), "clip scaled differently"


for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 1e-2), (torch.float64, 1e-12)):
    check("cpu", dtype, tol)
print("torch.ops.nosync: CPU checks passed")
if not torch.cuda.is_available():
    print("[  SKIPPED ] CUDA part: no CUDA GPU on this machine; runs on the GPU machine (tests/gpu/run)")
    sys.exit(77)
for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 1e-2), (torch.float16, 2e-3), (torch.float64, 1e-12)):
    check("cuda", dtype, tol)
# capturable from Python too: warm up, capture, replay on new data
ts = [torch.randn(n, device="cuda") for n in (10, 100000, 3)]
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    ops.sum(ts)
s.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = ops.sum(ts)
for t in ts:
    t.copy_(torch.randn_like(t))
g.replay()
torch.cuda.synchronize()
want = sum(t.double().sum() for t in ts).item()
assert abs(out.item() - want) <= 2e-5 * sum(t.double().abs().sum() for t in ts).item(), "graph replay result"
print("torch.ops.nosync: CUDA checks passed")
