"""Sanitizer overhead, measured in one run: the launch-bound loop of
overhead_bench alternately without and with libnosync_sanitizer.so injected
(mode=report), medians of several runs each. Goal: ratio <= 1.03. Also the
extra host time per intercepted sync (idle device) and per item().
Writes $NOSYNC_RESULTS_DIR/sanitizer.md."""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile


def once(program, env_extra):
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)
    env.update(env_extra)
    p = subprocess.run([program], env=env, capture_output=True, text=True, timeout=200)
    if p.returncode == 77:
        return None
    m = re.search(r"launch_ns_per_op=([\d.]+) sync_ns=([\d.]+) item_ns=([\d.]+)", p.stdout)
    if p.returncode != 0 or not m:
        raise SystemExit("bench run failed (rc %d): %s %s" % (p.returncode, p.stdout, p.stderr[-2000:]))
    return [float(v) for v in m.groups()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nosync_bench_")
    plain, san, act = [], [], []
    for r in range(args.reps):
        a = once(args.program, {})
        if a is None:
            print("[  SKIPPED ] no CUDA GPU on this machine")
            return 0
        plain.append(a)
        san.append(once(args.program, {"CUDA_INJECTION64_PATH": args.lib,
                                       "NOSYNC_OPTIONS": "mode=report:log_path=%s/r%d" % (tmp, r)}))
        act.append(once(args.program, {"CUDA_INJECTION64_PATH": args.lib,
                                       "NOSYNC_OPTIONS": "mode=report:activity=1:log_path=%s/a%d" % (tmp, r)}))
    med = lambda rows, i: statistics.median(x[i] for x in rows)
    launch_p, launch_s = med(plain, 0), med(san, 0)
    sync_p, sync_s = med(plain, 1), med(san, 1)
    item_p, item_s = med(plain, 2), med(san, 2)
    launch_a = med(act, 0)
    ratio = launch_s / launch_p
    verdict = "meets" if ratio <= 1.03 else "MISSES"
    lines = [
        "### nosync sanitizer overhead (report mode, %s)" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%MZ"),
        "",
        "%d runs each, alternating, medians; 30000 x `x.add_(1)` on 256 floats, then 3000 syncs and 3000 item()." % args.reps,
        "",
        "| measure | without | with sanitizer | ratio / delta |",
        "|---|---|---|---|",
        "| launch-bound loop, ns per op | %.1f | %.1f | **%.3f** (goal <= 1.03: %s) |" % (launch_p, launch_s, ratio, verdict),
        "| same loop with activity=1 (kernel records, opt-in), ns per op | %.1f | %.1f | %.3f |" % (launch_p, launch_a, launch_a / launch_p),
        "| torch::cuda::synchronize on idle device, ns | %.1f | %.1f | +%.1f ns per intercepted sync |" % (sync_p, sync_s, sync_s - sync_p),
        "| x.sum().item(), ns | %.1f | %.1f | +%.1f ns per item() |" % (item_p, item_s, item_s - item_p),
        "",
        "raw without: %s" % [[round(v, 1) for v in x] for x in plain],
        "",
        "raw with:    %s" % [[round(v, 1) for v in x] for x in san],
        "",
        "raw with activity=1: %s" % [[round(v, 1) for v in x] for x in act],
    ]
    # In one process, paused vs resumed, alternating: process-to-process
    # variance drops out. driver_api=0 isolates the cost of the driver-API ids.
    for label, opts in (("runtime + driver API ids", "mode=report"),
                        ("runtime API ids only (driver_api=0)", "mode=report:driver_api=0")):
        env = dict(os.environ)
        env["NOSYNC_OPTIONS"] = opts + ":log_path=%s/inproc" % tmp
        p = subprocess.run([args.program, "--interleaved", "20", "20000"], env=env, capture_output=True,
                           text=True, timeout=300)
        m = re.search(r"off_ns=([\d.]+) on_ns=([\d.]+) ratio=([\d.]+)", p.stdout)
        if p.returncode != 0 or not m:
            raise SystemExit("interleaved run failed (rc %d): %s %s" % (p.returncode, p.stdout, p.stderr[-2000:]))
        off, on, r = (float(v) for v in m.groups())
        lines.append("")
        lines.append("in-process, 20 rounds x 20000 ops, CUPTI unsubscribed vs subscribed (%s): %.1f -> %.1f ns/op, "
                     "ratio **%.3f** (goal <= 1.03: %s)" % (label, off, on, r, "meets" if r <= 1.03 else "MISSES"))
    text = "\n".join(lines) + "\n"
    print(text)
    out = os.environ.get("NOSYNC_RESULTS_DIR")
    if out:
        with open(os.path.join(out, "sanitizer.md"), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
