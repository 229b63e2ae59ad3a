"""GPU checks of Python attribution that the example does not cover: eight
Python threads syncing at once (each finding at its own .py line) while
another thread keeps the GIL busy, and a sync that completes while another
thread holds the GIL inside a C call (the CUDA callback must not wait for
it), and the HostSyncError of nosync.sync_free() naming the line. Runs itself under the sanitizer (python -m nosync run) and reads the
JSON report. Prints "[  SKIPPED ]" without a GPU.

    python3 python_lines_gpu.py        (nosync importable)
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def syncing_thread(k, x, n):
    for _ in range(n):
        if k == 0: x.sum().item()  # noqa: E701  LINE k=0
        elif k == 1: x.sum().item()  # noqa: E701
        elif k == 2: x.sum().item()  # noqa: E701
        elif k == 3: x.sum().item()  # noqa: E701
        elif k == 4: x.sum().item()  # noqa: E701
        elif k == 5: x.sum().item()  # noqa: E701
        elif k == 6: x.sum().item()  # noqa: E701
        else: x.sum().item()  # noqa: E701


def child():
    import torch

    x = torch.ones(1 << 16, device="cuda")
    x.sum().item()
    stop = []

    def spin():  # keeps the GIL busy in pure Python
        n = 0
        while not stop:
            n += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    threads = [threading.Thread(target=syncing_thread, args=(k, x, 20)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.append(1)
    spinner.join()

    # A long kernel, then a sync that finishes while another thread holds the
    # GIL inside a C call (ctypes.PyDLL keeps it): the callback must not wait.
    def hold_gil():
        time.sleep(0.05)  # let the main thread block in the sync first
        ctypes.PyDLL(None).usleep(1500000)  # then hold the GIL for 1.5 s

    holder = threading.Thread(target=hold_gil)
    torch.cuda._sleep(int(6e8))  # ~0.3 s of GPU time
    holder.start()
    x.sum().item()  # GIL-HELD-ELSEWHERE
    holder.join()

    # nosync.sync_free(): the exception names the .py line and the rule.
    import nosync

    try:
        with nosync.sync_free("planted"):
            x.sum().item()  # SYNC-FREE-VIOLATION
        print("no HostSyncError", flush=True)
    except nosync.HostSyncError as e:
        print("HostSyncError: %s" % e, flush=True)
    print("child done", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child()
        return 0
    import torch

    if not torch.cuda.is_available():
        print("[  SKIPPED ] no CUDA GPU")
        return 0
    tmp = tempfile.mkdtemp(prefix="nosync_pylines_")
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "nosync", "run", "--mode", "report", "--format", "json", "--log",
                        tmp + "/r", "--", __file__, "--child"], capture_output=True, text=True, timeout=300, env=env)
    elapsed = time.monotonic() - start
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    check(p.returncode == 0 and "child done" in p.stdout, "threads + GIL holder: ran to the end in %.1f s (rc %d)%s" %
          (elapsed, p.returncode, "" if p.returncode == 0 else ": " + p.stderr[-2000:]))
    logs = [f for f in os.listdir(tmp) if f.startswith("r.")]
    findings = json.load(open(os.path.join(tmp, logs[0])))["findings"] if logs else []
    src = open(__file__).read().splitlines()
    first = next(n for n, l in enumerate(src, 1) if "LINE k=0" in l)
    mine = {f["line"]: f for f in findings if os.path.basename(f["file"]) == os.path.basename(__file__)}
    for k in range(8):
        f = mine.get(first + k)
        check(f is not None and f["rule"] == "nosync-item" and f["apis"].get("cudaStreamSynchronize") == 20 and
              f["function"] == "syncing_thread",
              "thread %d: nosync-item, 20 stream syncs, at line %d in syncing_thread (%s)" %
              (k, first + k, {kk: f[kk] for kk in ("rule", "apis", "function")} if f else None))
    held = next(n for n, l in enumerate(src, 1) if "# GIL-HELD-ELSEWHERE" in l)
    f = mine.get(held)
    check(f is not None and f["apis"].get("cudaStreamSynchronize") == 1 and f["max_stall_us"] > 50000,
          "sync finishing while another thread holds the GIL: named at line %d, stall %.0f us" %
          (held, f["max_stall_us"] if f else 0))
    bad = next(n for n, l in enumerate(src, 1) if "# SYNC-FREE-VIOLATION" in l)
    m = [l for l in p.stdout.splitlines() if "nosync-item at " in l]
    check("HostSyncError: planted: " in p.stdout and any(
        ("%s:%d in child" % (os.path.basename(__file__), bad)) in l for l in m),
          "nosync.sync_free() raised HostSyncError naming nosync-item at %s:%d (%s)" %
          (os.path.basename(__file__), bad, m))
    print(json.dumps([{k: f[k] for k in ("file", "line", "function", "rule", "count")} for f in findings], indent=1))
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
