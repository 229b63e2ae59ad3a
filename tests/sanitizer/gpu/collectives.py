"""torch.distributed over NCCL under the injected sanitizer: which waits are
the collective's own (nosync-collective-wait) and which stay the user's.

One process, world size 1: NCCL refuses two ranks on one GPU, and a
one-rank group still runs the real ProcessGroupNCCL and NCCL code paths
(communicator setup, all-reduce, the barrier's stream synchronize). The
two-GPU DDP run is issue 7's, for a machine with two GPUs.

    CUDA_INJECTION64_PATH=LIB NOSYNC_OPTIONS=mode=report python3 collectives.py --sanitizer LIB

Each scenario runs twice as warm-up, then once between a reset and a read of
the sanitizer's findings (its C API, through ctypes). Every check prints ok
or FAIL; exit 1 if any failed. With --only barrier (used for the error-mode
run) it sets up and runs that scenario alone, with no sync of its own, and
asserts nothing itself: the caller checks that the process was not aborted.
Prints "[  SKIPPED ]" where no GPU or no NCCL backend exists.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

from driver_checks import check, finish

try:
    import torch

    from hazards import sanitizer_findings
except ImportError as e:  # a CPU box whose python3 lacks torch (tests/gpu/run insists on one)
    print("[  SKIPPED ] python3 cannot import torch (%s); this test runs on the GPU machine" % e)
    sys.exit(77)

N = 5


def barrier(x):
    for _ in range(N):
        torch.distributed.barrier()


def all_reduce(x):
    for _ in range(N):
        torch.distributed.all_reduce(x)


def async_wait(x):
    for _ in range(N):
        torch.distributed.all_reduce(x, async_op=True).wait()  # a stream wait, not a host wait


def all_reduce_item(x):
    for _ in range(N):
        torch.distributed.all_reduce(x)
        x.sum().item()


SCENARIOS = [barrier, all_reduce, async_wait, all_reduce_item]


def api_counts(finding):
    return {kv.split("=")[0]: int(kv.split("=")[1]) for kv in finding["apis"].split(",") if kv}


def run_scenario(lib, scenario, x):
    for _ in range(2):
        scenario(x)
    torch.cuda.synchronize()
    lib.nosync_sanitizer_reset()
    scenario(x)
    found = sanitizer_findings(lib)
    print(json.dumps({"scenario": scenario.__name__, "findings": found}), flush=True)
    return found


def expect_rules(name, found, rule, calls):
    rules = sorted({f["rule"] for f in found})
    check(rules == [rule], "%s -> %s (got %s)" % (name, rule, rules))
    for f in found:
        counts = api_counts(f)
        check(counts and all(n == calls for n in counts.values()),
              "%s: each blocking API x%d (%s at %s)" % (name, calls, counts, f["op"]))


def error_mode_run(lib_path):
    """The barrier scenario alone under mode=error: a note must not abort it."""
    env = dict(os.environ)
    env["NOSYNC_OPTIONS"] = "mode=error"
    p = subprocess.run([sys.executable, __file__, "--sanitizer", lib_path, "--only", "barrier"], env=env,
                       capture_output=True, text=True, timeout=300)
    print("error-mode run: rc %d\n  stdout: %s\n  stderr: %s"
          % (p.returncode, p.stdout.strip()[-600:], p.stderr.strip()[-1500:]))
    check(p.returncode == 0 and "done" in p.stdout and "ABORTING" not in p.stderr,
          "mode=error: setup and barriers are counted, the run is not aborted (rc %d)" % p.returncode)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sanitizer", required=True, help="path of libnosync_sanitizer.so (the injected one)")
    ap.add_argument("--only", choices=[s.__name__ for s in SCENARIOS])
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("[  SKIPPED ] no CUDA GPU")
        return 77
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        print("[  SKIPPED ] this torch build has no NCCL backend")
        return 77
    # Same path as CUDA_INJECTION64_PATH: the loader hands back the injected copy.
    lib = ctypes.CDLL(args.sanitizer)
    lib.nosync_sanitizer_findings.restype = ctypes.c_size_t
    lib.nosync_sanitizer_findings.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    if not lib.nosync_sanitizer_active():
        print("sanitizer not active in this process (run under CUDA_INJECTION64_PATH)", flush=True)
        return 1

    store = tempfile.mkdtemp(prefix="nosync_dist_")
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    x = torch.ones(1 << 20, device=device)
    lib.nosync_sanitizer_reset()
    torch.distributed.init_process_group("nccl", init_method="file://" + os.path.join(store, "rendezvous"),
                                         rank=0, world_size=1, device_id=device)
    torch.distributed.all_reduce(x)  # the communicator exists by now
    # Shown, not asserted: what communicator setup costs depends on the NCCL version.
    print(json.dumps({"scenario": "setup (informational)", "findings": sanitizer_findings(lib)}), flush=True)

    if args.only:
        # No warm-up and no torch.cuda.synchronize() here: under mode=error
        # that user sync would (rightly) abort the run.
        {s.__name__: s for s in SCENARIOS}[args.only](x)
        torch.distributed.destroy_process_group()
        print("done", flush=True)
        return 0

    found = {s.__name__: run_scenario(lib, s, x) for s in SCENARIOS}
    torch.distributed.destroy_process_group()

    expect_rules("barrier", found["barrier"], "nosync-collective-wait", N)
    check(all(f["op"].startswith("c10d") for f in found["barrier"]),
          "barrier: named by its c10d frame (%s)" % [f["op"] for f in found["barrier"]])
    check(found["all_reduce"] == [], "all_reduce without a readback: zero findings (%s)" % found["all_reduce"])
    check(found["async_wait"] == [], "async all_reduce + wait(): zero findings (%s)" % found["async_wait"])
    expect_rules("all_reduce_item", found["all_reduce_item"], "nosync-item", N)
    error_mode_run(args.sanitizer)

    return finish()


if __name__ == "__main__":
    sys.exit(main())
