"""torch.ops.nosync.* and torch.classes.nosync.* from Python: load
libnosync_kernels.so, compare each op with torch on fresh random inputs, and
check the MetricAccumulator and PinnedStager classes against Python's own
arithmetic. CPU checks run everywhere; the CUDA checks need a GPU (exit 77 =
skipped, with a message, where there is none). With --cpu-only the CPU checks
are the whole test and passing them exits 0 (CI's cpu-labelled registration).

usage: python_smoke.py /path/to/libnosync_kernels.so [--cpu-only]
"""
import faulthandler
import gc
import math
import random
import sys
import weakref
from typing import Dict, List

try:
    import torch
except ImportError as e:  # e.g. a LibTorch-only venv without torch's Python deps
    print(f"[  SKIPPED ] this Python cannot import torch ({e}): torch's Python dependencies are not installed "
          "here (scripts/setup installs the wheel --no-deps, for LibTorch); runs on the GPU machine (tests/gpu/run)")
    sys.exit(77)

# A crash inside the library shows the Python line that called it.
faulthandler.enable()
cpu_only = "--cpu-only" in sys.argv[2:]
torch.ops.load_library(sys.argv[1])
ops = torch.ops.nosync
classes = torch.classes.nosync
rng = random.Random()  # fresh values every run (seeded from the OS)


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


# --- torch.classes.nosync: MetricAccumulator and PinnedStager ---


def raises(fn, *needles):
    """fn() must raise RuntimeError whose message contains every needle."""
    try:
        fn()
    except RuntimeError as e:
        for n in needles:
            assert n in str(e), f"error message lacks {n!r}: {e}"
        return
    raise AssertionError(f"no RuntimeError (wanted one mentioning {needles})")


class Reference:
    """What MetricAccumulator should report, in Python floats: sums in add
    order (as the device adds them, in double), means = sum / count, 0 for a
    name with no values since the last reset."""

    def __init__(self):
        self.sums, self.counts = {}, {}

    def add(self, name, x):
        self.sums[name] = self.sums.get(name, 0.0) + x
        self.counts[name] = self.counts.get(name, 0) + 1

    def means(self):
        return {k: self.sums[k] / self.counts[k] if self.counts[k] else 0.0 for k in self.sums}

    def reset(self):
        self.sums = {k: 0.0 for k in self.sums}
        self.counts = {k: 0 for k in self.counts}


def matches(got, want):
    return (isinstance(got, dict) and got.keys() == want.keys()
            and all(abs(got[k] - w) <= 1e-12 * max(1.0, abs(w)) for k, w in want.items()))


def same(got, want, what):
    assert matches(got, want), f"{what}: got {got}, want {want}"


def feed(m, ref, device, steps):
    """Adds fresh random values of several dtypes and shapes; the reference
    takes each value as the accumulator will see it (a float32 value rounded
    to float32 first). Values are made on the host, so building the
    reference never reads the device."""
    for _ in range(steps):
        loss = rng.uniform(-5.0, 5.0)
        m.add("loss", torch.tensor(loss, dtype=torch.float64).to(device))
        ref.add("loss", loss)
        lr = torch.tensor([rng.uniform(0.0, 1.0)], dtype=torch.float32)  # shape [1]
        m.add("lr", lr.to(device))
        ref.add("lr", float(lr[0]))
        correct = rng.randrange(0, 100)
        m.add("correct", torch.tensor([[correct]], dtype=torch.int64).to(device))  # shape [1, 1]
        ref.add("correct", float(correct))


def check_classes_cpu():
    # A CPU accumulator has no readback to wait for: poll() is read(), the
    # current means, and never None (the C++ class's behaviour).
    m = classes.MetricAccumulator("cpu")
    assert m.poll() == {}, "poll() on a fresh CPU accumulator"
    ref = Reference()
    feed(m, ref, "cpu", 7)
    same(m.poll(), ref.means(), "cpu poll")
    same(m.read(), ref.means(), "cpu read")
    for i in range(20):  # more names than the initial capacity (8): the sums grow
        x = rng.uniform(0.0, 1.0)
        m.add(f"m{i}", torch.tensor(x, dtype=torch.float64))
        ref.add(f"m{i}", x)
    feed(m, ref, "cpu", 3)
    same(m.read(), ref.means(), "cpu read after growing")
    same(m.flush(), ref.means(), "cpu flush")
    ref.reset()
    same(m.read(), ref.means(), "cpu read after flush (names kept, values 0)")
    assert all(v == 0.0 for v in m.read().values())
    feed(m, ref, "cpu", 4)
    same(m.read(), ref.means(), "cpu read after flush and new values")
    m.reset()
    ref.reset()
    same(m.poll(), ref.means(), "cpu poll after reset")

    # a value that requires grad: counted, and its autograd graph not kept
    m = classes.MetricAccumulator("cpu", readback_slots=1)
    x = torch.randn(3, requires_grad=True)
    a = x * 2
    loss = (a * a).sum()
    want = float(loss.detach().double())
    alive = weakref.ref(a)
    m.add("loss", loss)
    del a, loss
    gc.collect()
    assert alive() is None, "add() kept the value's autograd graph (and its saved tensors) alive"
    assert abs(m.read()["loss"] - want) <= 1e-6 * abs(want)

    # errors: the C++ messages, as RuntimeError
    raises(lambda: m.add("loss", torch.ones(2)), 'MetricAccumulator::add("loss")', "one-element")
    raises(lambda: m.add("loss", torch.zeros((), device="meta")), "value is on meta but the accumulator is on cpu")
    raises(lambda: classes.MetricAccumulator("nonsense"), "device string")
    raises(lambda: classes.MetricAccumulator("cpu", 0), "readback_slots")
    raises(lambda: classes.MetricAccumulator("cpu", -1), "readback_slots")
    raises(lambda: classes.MetricAccumulator("cpu", 2**40), "readback_slots")
    assert torch.equal(classes.PinnedStager("cpu").stage(torch.arange(4.0)), torch.arange(4.0))  # t.to(cpu)
    raises(lambda: classes.PinnedStager("cpu", 0), "slots")

    # TorchScript: constructed, fed and read inside a scripted function
    @torch.jit.script
    def scripted(xs: List[torch.Tensor]) -> Dict[str, float]:
        m = torch.classes.nosync.MetricAccumulator("cpu")
        for x in xs:
            m.add("x", x)
        polled = m.poll()
        assert polled is not None
        return m.flush()

    xs = [rng.uniform(-1.0, 1.0) for _ in range(5)]
    ref = Reference()
    for x in xs:
        ref.add("x", x)
    same(scripted([torch.tensor(x, dtype=torch.float64) for x in xs]), ref.means(), "scripted")


def check_classes_cuda():
    for device in ("cuda", "cuda:0"):
        m = classes.MetricAccumulator(device, readback_slots=2 if device == "cuda" else 3)
        ref = Reference()
        feed(m, ref, "cuda", 5)
        assert m.poll() is None, "poll() returned values before any readback completed"
        snapshots = [ref.means()]  # the means at each poll(), i.e. what its readback copies
        torch.cuda.synchronize()
        polled = m.poll()
        assert polled is not None, "poll() after torch.cuda.synchronize() returned None"
        same(polled, snapshots[0], "cuda poll after synchronize")
        snapshots.append(ref.means())
        # a training loop: poll() never waits, and what it returns is the
        # means as they were at some earlier poll()
        for _ in range(30):
            feed(m, ref, "cuda", 1)
            polled = m.poll()
            assert polled is not None, "poll() lost the values it had already read back"
            assert any(matches(polled, s) for s in snapshots), f"cuda poll: {polled} is no earlier state"
            snapshots.append(ref.means())
        same(m.read(), ref.means(), "cuda read")
        same(m.poll(), ref.means(), "cuda poll right after read")  # read's values are the newest
        same(m.flush(), ref.means(), "cuda flush")
        ref.reset()
        same(m.read(), ref.means(), "cuda read after flush")
        m.poll()
        torch.cuda.synchronize()
        same(m.poll(), ref.means(), "cuda poll after flush")
        feed(m, ref, "cuda", 3)
        m.reset()
        ref.reset()
        same(m.read(), ref.means(), "cuda read after reset")
        raises(lambda: m.add("loss", torch.tensor(1.0)), "value is on cpu but the accumulator is on cuda:0")
        raises(lambda: m.add("loss", torch.ones(2, device="cuda")), "one-element")

    stager = classes.PinnedStager("cuda", slots=3)
    staged, originals = [], []
    src = torch.empty(257, 33)
    for i in range(12):
        src.normal_()  # the same CPU buffer, overwritten after every stage()
        originals.append(src.clone())
        staged.append(stager.stage(src))
        if i % 4 == 0:  # other dtypes, sizes and layouts through the same ring, empty included
            for t in (torch.randint(0, 100, (rng.randrange(0, 5000),), dtype=torch.int32),
                      torch.tensor(rng.uniform(-1.0, 1.0), dtype=torch.float64),
                      torch.rand(40, 7).t(),  # not contiguous
                      torch.rand(100) > 0.5):
                originals.append(t.clone())
                staged.append(stager.stage(t))
    for i, (s, o) in enumerate(zip(staged, originals)):
        assert s.device.type == "cuda" and s.dtype == o.dtype and s.shape == o.shape, f"staging {i}: {s.device} {s.dtype}"
        assert torch.equal(s.cpu(), o), f"staging {i}: values differ"
    on_device = torch.ones(3, device="cuda")
    assert torch.equal(stager.stage(on_device), on_device)  # already there: t.to(device)
    x = torch.rand(16)
    assert torch.equal(classes.PinnedStager("cuda:0").stage(x).cpu(), x)


for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 1e-2), (torch.float64, 1e-12)):
    check("cpu", dtype, tol)
print("torch.ops.nosync: CPU checks passed")
check_classes_cpu()
print("torch.classes.nosync: CPU checks passed")
if cpu_only:
    sys.exit(0)
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
check_classes_cuda()
print("torch.classes.nosync: CUDA checks passed")
