"""GPU end-to-end checks of libnosync_sanitizer.so as users run it: injected
with CUDA_INJECTION64_PATH / nosync-run into a LibTorch program and a Python
torch script. Each check asserts exact counts, rule ids and file:line; every
failure is listed, and the exit status is 1 if any check failed. Prints
"[  SKIPPED ]" (ctest: Skipped) where no GPU exists.

Also runs the Python hazards under torch's own sync debug mode and writes the
comparison table to $NOSYNC_RESULTS_DIR/sanitizer-vs-debug-mode.md.
"""
import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from driver_checks import check, finish, marker_line


class TimedOut:
    returncode = -999
    stdout = ""
    stderr = "timed out"


def run(cmd, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)
    env.update(env_extra or {})
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print("$ %s -> TIMED OUT after %ds" % (" ".join(cmd), timeout))
        return TimedOut()
    print("$ %s -> rc %d" % (" ".join(cmd), p.returncode))
    if p.returncode not in (0, 77):
        print("  stdout: " + p.stdout[-1500:].replace("\n", "\n  "))
        print("  stderr: " + p.stderr[-3000:].replace("\n", "\n  "))
    return p


def log_files(prefix):
    return sorted(glob.glob(prefix + ".*"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--nosync-run", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--hazards-py", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="nosync_san_")
    line = marker_line(args.source, "item")
    src_name = os.path.basename(args.source)

    # 1. JSON report through nosync-run: one finding, exact count and line.
    p = run([args.nosync_run, "--mode", "report", "--format", "json", "--log", tmp + "/item", "--",
             args.program, "item"])
    if p.returncode == 77 or "[  SKIPPED ]" in p.stdout:
        print("[  SKIPPED ] no CUDA GPU on this machine; run tests/gpu/run on the GPU machine")
        return 0
    check(p.returncode == 0, "item under nosync-run exits 0")
    files = log_files(tmp + "/item")
    check(len(files) == 1, "one log file per process (%s)" % files)
    if files:
        report = json.load(open(files[0]))
        items = [f for f in report["findings"] if f["rule"] == "nosync-item"]
        print(json.dumps(report["findings"], indent=1)[:3000])
        check(len(items) == 1, "exactly one nosync-item finding")
        if items:
            f = items[0]
            check(f["file"].endswith(src_name) and f["line"] == line,
                  "attributed to %s:%d (got %s:%s)" % (src_name, line, f["file"], f["line"]))
            check(all(n == 5 for n in f["apis"].values()) and f["apis"].get("cudaStreamSynchronize") == 5,
                  "5 item() calls -> each blocking API x5 (got %s)" % f["apis"])
            check(f["op"] == "at::Tensor::item", "op at::Tensor::item (got %r)" % f["op"])
            check(f["max_stall_us"] > 0 and f["total_stall_us"] >= f["max_stall_us"], "stall times measured")
            check(any(fr["user"] and fr["line"] == line for fr in f["frames"]), "user frame marked in frames")
            for key in ("file", "line", "column", "rule", "severity", "message", "count", "total_stall_us",
                        "max_stall_us", "op", "frames"):
                check(key in f, "JSON field %s present" % key)

    # 1b. warn mode: one line for the new site, the counts at exit.
    p = run([args.nosync_run, "--mode", "warn", "--", args.program, "item"])
    live = [l for l in p.stderr.splitlines() if "WARNING: nosync-sanitizer: nosync-item at " in l]
    check(p.returncode == 0 and len(live) == 1, "warn mode: exactly one live line for the site (%d)" % len(live))
    check(bool(live) and ("%s:%d" % (src_name, line)) in live[0], "warn line names %s:%d" % (src_name, line))
    check("SUMMARY: nosync-sanitizer: 5 host syncs at 1 site" in p.stderr, "warn mode: counts at exit")

    # 1c. Chrome/Perfetto trace: one complete slice per blocking call.
    p = run([args.nosync_run, "--mode", "report", "--format", "trace", "--log", tmp + "/trace", "--",
             args.program, "item"])
    files = log_files(tmp + "/trace")
    trace = json.load(open(files[0])) if files else {"traceEvents": []}
    slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    check(len(slices) == 5 and all(e["name"] == "nosync-item" and e["dur"] > 0 for e in slices),
          "trace: 5 nosync-item slices (%d)" % len(slices))
    check(all(e["args"]["site"].endswith("%s:%d" % (src_name, line)) for e in slices), "trace slices carry the site")

    # 2. error mode: report, then abort at the first sync.
    p = run([args.nosync_run, "--mode", "error", "--", args.program, "item"])
    check(p.returncode == -signal.SIGABRT, "error mode aborts (rc %d)" % p.returncode)
    check("ERROR: nosync-sanitizer: host sync [nosync-item]" in p.stderr, "error report header")
    check("%s:%d" % (src_name, line) in p.stderr, "error report names %s:%d" % (src_name, line))
    check(re.search(r"\n    #0 0x[0-9a-f]+ in ", p.stderr) is not None, "numbered frames")
    check("SUMMARY: nosync-sanitizer: nosync-item" in p.stderr and "ABORTING" in p.stderr, "SUMMARY + ABORTING")
    check("acc=" not in p.stdout, "stopped at the first sync")

    # 3. SIGTERM: the report is complete in the log file.
    p = run([args.nosync_run, "--mode", "report", "--log", tmp + "/term", "--", args.program, "sigterm"])
    check(p.returncode == -signal.SIGTERM, "killed by SIGTERM (rc %d)" % p.returncode)
    files = log_files(tmp + "/term")
    text = open(files[0]).read() if files else ""
    check("SUMMARY: nosync-sanitizer: 5 host syncs at 1 site" in text, "SIGTERM leaves the full report")

    # 4. fork: the child (normal exit) writes nothing; the parent reports once.
    p = run([args.nosync_run, "--mode", "report", "--log", tmp + "/fork", "--", args.program, "fork"], timeout=60)
    check(p.returncode == 0 and "child status 0" in p.stdout, "fork program ran, child exited 0")
    files = log_files(tmp + "/fork")
    check(len(files) == 1, "only the parent wrote a report (%s)" % files)
    if files:
        check(open(files[0]).read().count("SUMMARY:") == 1, "one SUMMARY in the parent's report")

    # 5. CUPTI already held: one warning, the program runs on unharmed.
    p = run([args.program, "hold-cupti"], {"CUDA_INJECTION64_PATH": args.lib, "NOSYNC_OPTIONS": "mode=report"}, timeout=60)
    check(p.returncode == 0 and "acc=" in p.stdout, "program unharmed when CUPTI is held")
    check(p.stderr.count("nosync-sanitizer: WARNING: CUPTI is already in use") == 1,
          "exactly one 'CUPTI already in use' warning")

    # 6. sync-free program: zero findings.
    p = run([args.nosync_run, "--mode", "report", "--format", "json", "--log", tmp + "/clean", "--",
             args.program, "clean"])
    files = log_files(tmp + "/clean")
    findings = json.load(open(files[0]))["findings"] if files else None
    check(p.returncode == 0 and findings == [], "sync-free program: zero findings (%s)" % findings)

    # 6b. opt-in kernel activity: a launch-bound loop is reported as such.
    p = run([args.nosync_run, "--mode", "report", "--format", "json", "--options", "activity=1", "--log",
             tmp + "/lb", "--", args.program, "launch-bound"])
    files = log_files(tmp + "/lb")
    report = json.load(open(files[0])) if files else {"findings": []}
    lb = [f for f in report["findings"] if f["rule"] == "nosync-launch-bound"]
    print("gpu summary: %s" % report.get("gpu"))
    check(p.returncode == 0 and len(lb) == 1, "activity=1: one nosync-launch-bound finding")
    check(bool(lb) and lb[0]["count"] >= 20000, "launch-bound finding counts the 20000 kernels (%s)"
          % (lb[0]["count"] if lb else None))

    # 7. a bad option is one clear error.
    p = run([args.program, "item"], {"CUDA_INJECTION64_PATH": args.lib, "NOSYNC_OPTIONS": "mode=report:bogus=1"})
    check(p.returncode == 1 and "unknown option 'bogus'; valid options: mode, format" in p.stderr,
          "unknown option -> exit 1 listing valid options")

    # 8. Python torch script under CUDA_INJECTION64_PATH, per-scenario findings.
    p = run([sys.executable, args.hazards_py, "--sanitizer", args.lib],
            {"CUDA_INJECTION64_PATH": args.lib, "NOSYNC_OPTIONS": "mode=report:log_path=" + tmp + "/py"})
    check(p.returncode == 0, "python hazards under injection exit 0")
    seen = {}
    for l in p.stdout.splitlines():
        if l.startswith("{"):
            d = json.loads(l)
            seen[d["scenario"]] = d["findings"]
    print(json.dumps(seen, indent=1)[:6000])
    expected = {"item": "nosync-item", "bool_condition": "nosync-bool-condition", "cpu": "nosync-device-to-host",
                "pageable_h2d": "nosync-pageable-h2d", "explicit_sync": "nosync-explicit-sync",
                "nonzero": "nosync-hidden-sync", "empty_cache": "nosync-allocator-sync"}
    for scenario, rule in expected.items():
        fs = seen.get(scenario, [])
        rules = sorted({f["rule"] for f in fs})
        check(rules == [rule], "python %s -> %s (got %s)" % (scenario, rule, rules))
        if scenario != "empty_cache":
            check(all(all(int(n) == 5 for n in (kv.split("=")[1] for kv in f["apis"].split(","))) for f in fs),
                  "python %s: each blocking API x5 (%s)" % (scenario, [f["apis"] for f in fs]))
    check(seen.get("sync_free") == [], "python sync_free: zero findings (%s)" % seen.get("sync_free"))
    check(len(log_files(tmp + "/py")) == 1, "python run wrote its exit report")

    # 9. torch's own sync debug mode on the same scenarios, for the table.
    p = run([sys.executable, args.hazards_py, "--debug-mode"])
    debug = {}
    for l in p.stdout.splitlines():
        if l.startswith("{"):
            d = json.loads(l)
            debug[d["scenario"]] = d["debug_mode_warnings"]
    out_dir = os.environ.get("NOSYNC_RESULTS_DIR")
    if out_dir and seen:
        rows = ["| scenario (x5) | nosync sanitizer | torch sync debug mode (warnings) |", "|---|---|---|"]
        for scenario in list(expected) + ["sync_free"]:
            fs = seen.get(scenario, [])
            san = ", ".join("%s (%s)" % (f["rule"], f["apis"]) for f in fs) or "nothing"
            rows.append("| %s | %s | %s |" % (scenario, san, debug.get(scenario)))
        with open(os.path.join(out_dir, "sanitizer-vs-debug-mode.md"), "w") as f:
            f.write("### Python hazards: nosync sanitizer vs torch.cuda.set_sync_debug_mode\n\n" + "\n".join(rows) + "\n")
        print("\n".join(rows))

    return finish()


if __name__ == "__main__":
    sys.exit(main())
