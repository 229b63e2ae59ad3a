"""Python hazards, one per scenario, for the sanitizer (CUDA_INJECTION64_PATH)
and for torch's own sync debug mode. Prints one JSON line per scenario:
with --sanitizer LIB, the findings the injected sanitizer attributes to that
scenario (read through its C API with ctypes: reset before, findings after);
with --debug-mode, how many warnings torch.cuda.set_sync_debug_mode("warn")
raised.

    python3 hazards.py --sanitizer /path/libnosync_sanitizer.so | --debug-mode
"""
import ctypes
import json
import sys
import warnings

import torch

N = 5
DEBUG = "--debug-mode" in sys.argv


def item(t):
    for _ in range(N):
        t.sum().item()


def bool_condition(t):
    for _ in range(N):
        if t.sum() > -1e9:
            pass


def cpu(t):
    for _ in range(N):
        t.cpu()


def pageable_h2d(t):
    host = torch.randn(1 << 22)
    for _ in range(N):
        host.to("cuda", non_blocking=True)


def explicit_sync(t):
    for _ in range(N):
        torch.cuda.synchronize()


def nonzero(t):
    for _ in range(N):
        (t > 0).nonzero()


def empty_cache(t):
    for _ in range(N):
        x = torch.empty(16 << 20, device="cuda")
        del x
        torch.cuda.empty_cache()


def sync_free(t):
    pinned = torch.randn(1 << 20).pin_memory()
    total = torch.zeros((), device="cuda")
    for _ in range(N):
        total += pinned.to("cuda", non_blocking=True).sum()


class CFinding(ctypes.Structure):
    _fields_ = [("rule", ctypes.c_char * 48), ("file", ctypes.c_char * 512), ("line", ctypes.c_int),
                ("function", ctypes.c_char * 256), ("op", ctypes.c_char * 96), ("apis", ctypes.c_char * 256),
                ("count", ctypes.c_uint64), ("total_stall_ns", ctypes.c_uint64), ("max_stall_ns", ctypes.c_uint64)]


def sanitizer_findings(lib):
    n = lib.nosync_sanitizer_findings(None, 0)
    arr = (CFinding * max(n, 1))()
    n = lib.nosync_sanitizer_findings(ctypes.cast(arr, ctypes.c_void_p), n)
    return [{"rule": f.rule.decode(), "op": f.op.decode(), "apis": f.apis.decode(), "count": f.count,
             "function": f.function.decode()} for f in arr[:n]]


SCENARIOS = [item, bool_condition, cpu, pageable_h2d, explicit_sync, nonzero, empty_cache, sync_free]


def main():
    if not torch.cuda.is_available():
        print("[  SKIPPED ] no CUDA GPU")
        return 77
    t = torch.randn(1 << 20, device="cuda")
    t.sum().item()  # warm-up
    lib = None
    if "--sanitizer" in sys.argv:
        # Same path as CUDA_INJECTION64_PATH: the loader hands back the injected copy.
        lib = ctypes.CDLL(sys.argv[sys.argv.index("--sanitizer") + 1])
        lib.nosync_sanitizer_findings.restype = ctypes.c_size_t
        lib.nosync_sanitizer_findings.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        if not lib.nosync_sanitizer_active():
            print("sanitizer not active in this process", flush=True)
            return 1
    for scenario in SCENARIOS:
        if lib is not None:
            for _ in range(2):  # warm-up: allocator blocks and kernels of this scenario
                scenario(t)
            torch.cuda.synchronize()
            lib.nosync_sanitizer_reset()
            scenario(t)
            print(json.dumps({"scenario": scenario.__name__, "findings": sanitizer_findings(lib)}), flush=True)
            continue
        scenario(t)  # warm-up outside the debug mode
        if DEBUG:
            torch.cuda.set_sync_debug_mode("warn")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                scenario(t)
            torch.cuda.set_sync_debug_mode(0)
            hits = sum("synchronizing" in str(w.message) for w in caught)
        else:
            hits = None
        print(json.dumps({"scenario": scenario.__name__, "debug_mode_warnings": hits}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
