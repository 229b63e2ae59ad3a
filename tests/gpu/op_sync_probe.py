#!/usr/bin/env python3
"""Which ops make the host wait for the GPU, measured rather than assumed.

Each op is called right after a ~150 ms kernel has been queued. An op that
reads the device back (a sync) returns only when that kernel is done; one that
only enqueues work returns in well under a millisecond. The catalog
(rules/include/nosync/ops.def) lists the first kind and leaves out the second:
this probe fails when an op it lists stops blocking, or one it leaves out
starts to (a new torch may change either).

Exit 0: every op behaved as the catalog says; 1: one did not; 77: no GPU.
"""
import sys
import time

try:
    import torch
except ImportError:
    print("op_sync_probe: SKIPPED: torch is not importable by", sys.executable)
    sys.exit(77)
if not torch.cuda.is_available():
    print("op_sync_probe: SKIPPED: no CUDA GPU on this machine")
    sys.exit(77)

SLEEP_CYCLES = int(3e8)  # ~150 ms on an H100/H200 at their clocks
BLOCKED_MS = 50.0        # a call that took longer waited for the queued kernel

x = torch.rand(4, 10, device="cuda")
ints = torch.randint(0, 8, (64,), device="cuda")

# (name, call, syncs according to the catalog)
OPS = [
    ("nonzero", lambda: torch.nonzero(x > 0.5), True),
    ("bincount", lambda: torch.bincount(ints), True),
    ("item", lambda: x.sum().item(), True),
    ("multinomial n=1", lambda: torch.multinomial(x, 1), False),
    ("multinomial n=3", lambda: torch.multinomial(x, 3), False),
    ("randperm 100", lambda: torch.randperm(100, device="cuda"), False),
    ("randperm 100000", lambda: torch.randperm(100000, device="cuda"), False),
    ("randperm long", lambda: torch.randperm(4096, dtype=torch.long, device="cuda"), False),
    ("add (control)", lambda: x + 1, False),
]


def host_ms(call):
    torch.cuda._sleep(SLEEP_CYCLES)
    start = time.perf_counter()
    call()
    took = (time.perf_counter() - start) * 1e3
    torch.cuda.synchronize()
    return took


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"host ms per call behind a queued ~150 ms kernel (3 runs; > {BLOCKED_MS:.0f} ms = waited)")
    wrong = []
    for name, call, syncs in OPS:
        call()  # warm: allocator, kernels loaded
        torch.cuda.synchronize()
        runs = [host_ms(call) for _ in range(3)]
        waited = sorted(runs)[1] > BLOCKED_MS
        verdict = "waits" if waited else "does not wait"
        ok = waited == syncs
        print(f"  {name:18s} {verdict:14s} catalog: {'sync' if syncs else 'no sync':8s} "
              f"{'ok' if ok else 'MISMATCH'}  runs: {', '.join(f'{r:.2f}' for r in runs)}")
        if not ok:
            wrong.append(name)
    if wrong:
        print("op_sync_probe: the catalog is wrong for: " + ", ".join(wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
