"""Sanitizer overhead on a launch-bound Python loop (report mode), and the
cost per blocking call of gathering Python frames. Goal: <= 3 % on the loop.

  1. In one process under python -m nosync run: blocks of 20000 x
     `x.add_(1)` (256 floats) alternately with the sanitizer paused
     (CUPTI unsubscribed) and watching; median ratio over 15 pairs.
  2. Across processes: the same loop with and without the sanitizer,
     alternating, 3 runs each, medians.
  3. x.sum().item() 16 frames deep: no sanitizer, python_frames=0, python_frames=1.

Writes $NOSYNC_RESULTS_DIR/python-overhead.md. Prints "[  SKIPPED ]" without a GPU.
"""
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def loop_ns_per_op(x, n=20000):
    t = time.perf_counter_ns()
    for _ in range(n):
        x.add_(1)
    return (time.perf_counter_ns() - t) / n


def item_ns(x, depth, n=2000):
    if depth:
        return item_ns(x, depth - 1, n)
    t = time.perf_counter_ns()
    for _ in range(n):
        x.sum().item()
    return (time.perf_counter_ns() - t) / n


def child(mode):
    import torch

    x = torch.zeros(256, device="cuda")
    for _ in range(3):
        loop_ns_per_op(x)
    torch.cuda.synchronize()
    if mode == "inproc":
        import nosync

        off, on = [], []
        for _ in range(15):
            nosync.pause()
            off.append(loop_ns_per_op(x))
            torch.cuda.synchronize()
            nosync.resume()
            on.append(loop_ns_per_op(x))
            torch.cuda.synchronize()
        ratios = [b / a for a, b in zip(off, on)]
        print("inproc off=%.1f on=%.1f ratio=%.4f" % (statistics.median(off), statistics.median(on),
                                                     statistics.median(ratios)))
    elif mode == "loop":
        vals = []
        for _ in range(5):
            vals.append(loop_ns_per_op(x))
            torch.cuda.synchronize()
        print("loop=%.1f" % statistics.median(vals))
    elif mode == "item":
        item_ns(x, 16, 200)
        print("item=%.1f" % min(item_ns(x, 16, 1000) for _ in range(2)))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    import torch

    if not torch.cuda.is_available():
        print("[  SKIPPED ] no CUDA GPU")
        return 0
    tmp = tempfile.mkdtemp(prefix="nosync_pybench_")
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)

    def run(mode, sanitizer, opts="", tag="x"):
        cmd = [sys.executable, __file__, "--child", mode]
        if sanitizer:
            cmd = [sys.executable, "-m", "nosync", "run", "--mode", "report", "--log", "%s/%s" % (tmp, tag)] + \
                  (["--options", opts] if opts else []) + ["--"] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        if p.returncode != 0:
            raise SystemExit("bench child failed: %s %s" % (p.stdout, p.stderr[-3000:]))
        return p.stdout

    inproc = re.search(r"off=([\d.]+) on=([\d.]+) ratio=([\d.]+)", run("inproc", True, tag="in"))
    plain, san = [], []
    for r in range(3):
        plain.append(float(re.search(r"loop=([\d.]+)", run("loop", False)).group(1)))
        san.append(float(re.search(r"loop=([\d.]+)", run("loop", True, tag="l%d" % r)).group(1)))
    item_plain = float(re.search(r"item=([\d.]+)", run("item", False)).group(1))
    item_nopy = float(re.search(r"item=([\d.]+)", run("item", True, "python_frames=0", "i0")).group(1))
    item_py = float(re.search(r"item=([\d.]+)", run("item", True, "python_frames=1", "i1")).group(1))
    ratio = float(inproc.group(3))
    across = statistics.median(san) / statistics.median(plain)
    lines = [
        "### Python: sanitizer overhead (report mode, %s)" % datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%MZ"),
        "",
        "| measure | without | with sanitizer | ratio / delta |",
        "|---|---|---|---|",
        "| launch-bound Python loop (`x.add_(1)`, 256 floats), ns per op, one process, paused vs watching, median "
        "of 15 pairs | %s | %s | **%.3f** (goal <= 1.03: %s) |" % (inproc.group(1), inproc.group(2), ratio,
                                                                   "meets" if ratio <= 1.03 else "MISSES"),
        "| same loop, separate processes, median of 3 each | %.1f | %.1f | %.3f |" % (
            statistics.median(plain), statistics.median(san), across),
        "| `x.sum().item()` 16 Python frames deep, ns per call | %.0f | %.0f (python_frames=0) / %.0f "
        "(python_frames=1) | +%.1f us per blocking call for the Python frames |" % (
            item_plain, item_nopy, item_py, (item_py - item_nopy) / 1e3),
        "",
        "raw loop ns/op without: %s; with: %s" % ([round(v, 1) for v in plain], [round(v, 1) for v in san]),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = os.environ.get("NOSYNC_RESULTS_DIR")
    if out:
        with open(os.path.join(out, "python-overhead.md"), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
