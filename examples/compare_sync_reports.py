"""Runs examples/train_hazards.py twice on the GPU, under the nosync sanitizer
(python -m nosync run, JSON report) and under torch.cuda.set_sync_debug_mode
("warn"), and prints one table: per planted sync (`# SYNC:` comments), what
each tool reported and at which line; then what either found elsewhere.
Then runs examples/train_fixed.py --assert-sync-free under the sanitizer.

    python examples/compare_sync_reports.py [--steps N] [--out table.md] [--check]

--check exits 1 unless: nosync reports every planted sync at its exact line
(the backward one as "in backward of index"), every line torch's mode warns
about is one nosync reports too, and the fixed twin's sync-free steps pass.
Prints "[  SKIPPED ]" without a GPU. Needs `nosync` importable (pip install).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HAZARDS = os.path.join(HERE, "train_hazards.py")
FIXED = os.path.join(HERE, "train_fixed.py")


def planted(path):
    out = {}
    for n, line in enumerate(open(path), 1):
        m = re.search(r"\S\s+# SYNC: (.*)$", line)  # code, then the marker comment
        if m:
            out[n] = m.group(1).strip()
    return out


def run(cmd, timeout=600):
    print("$ " + " ".join(cmd), flush=True)
    env = dict(os.environ)
    env.pop("NOSYNC_OPTIONS", None)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE)
    if p.returncode != 0:
        print(p.stdout[-2000:] + p.stderr[-4000:])
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("[  SKIPPED ] no CUDA GPU: the comparison needs one")
        return 0
    tmp = tempfile.mkdtemp(prefix="nosync_compare_")
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    py = sys.executable
    p = run([py, "-m", "nosync", "run", "--mode", "report", "--format", "json", "--log", tmp + "/nosync", "--",
             HAZARDS, "--steps", str(args.steps)])
    check(p.returncode == 0, "train_hazards.py under python -m nosync run exits 0")
    logs = sorted(f for f in os.listdir(tmp) if f.startswith("nosync."))
    check(len(logs) == 1, "one report, from the parent: DataLoader workers (fork) stay silent (%s)" % logs)
    findings = json.load(open(os.path.join(tmp, logs[0])))["findings"] if logs else []
    p = run([py, HAZARDS, "--steps", str(args.steps), "--torch-sync-debug", tmp + "/torch.json"])
    check(p.returncode == 0, "train_hazards.py under torch's sync debug mode exits 0")
    warns = json.load(open(tmp + "/torch.json")) if os.path.exists(tmp + "/torch.json") else []

    script = os.path.basename(HAZARDS)
    ours = [f for f in findings if os.path.basename(f["file"]) == script]
    backward = [f for f in findings if f["function"].startswith("in backward of")]
    marks = planted(HAZARDS)
    src = open(HAZARDS).read().splitlines()

    def torch_cell(line):
        ws = [w for w in warns if w["user_line"] == line]
        if not ws:
            return "—"
        where = sorted({"%s:%d" % (os.path.basename(w["torch_file"]), w["torch_line"]) for w in ws})
        return "%d warnings, at %s" % (len(ws), ", ".join(where))

    def nosync_cell(fs):
        if not fs:
            return "—"
        return "; ".join("%s (%s, %d calls, %.0f us)" % (f["rule"], f["op"] or "CUDA API", f["count"],
                                                           f["total_stall_us"]) for f in fs)

    rows = ["| line | planted | code | nosync | torch.cuda.set_sync_debug_mode |", "|---|---|---|---|---|"]
    for line, what in marks.items():
        fs = [f for f in ours if f["line"] == line]
        code = src[line - 1].split("#")[0].strip().replace("|", "\\|")
        rows.append("| %d | %s | `%s` | %s | %s |" % (line, what, code, nosync_cell(fs), torch_cell(line)))
        check(bool(fs), "planted sync at line %d (%s) reported by nosync at that line" % (line, what))
    rows.append("| — | backward of the boolean-mask index (autograd thread, no Python frames) | `h[keep]` backward | %s"
                " | %s |" % (nosync_cell(backward) + (" — " + backward[0]["function"] if backward else ""),
                             "replayed at the backward() call: " + torch_cell(
                                 next((n for n, l in enumerate(src, 1) if ".backward()" in l), 0))))
    check(any("in backward of index (IndexBackward0)" in f["function"] for f in backward),
          "the sync in backward is named 'in backward of index (IndexBackward0)'")
    extra = [f for f in ours if f["line"] not in marks]
    for f in extra:
        code = src[f["line"] - 1].split("#")[0].strip().replace("|", "\\|")
        rows.append("| %d | (not planted) | `%s` | %s | %s |" % (f["line"], code, nosync_cell([f]),
                                                                 torch_cell(f["line"])))
    others = [f for f in findings if f not in ours and f not in backward]
    for f in others:
        rows.append("| — | (outside the script) | %s | %s | — |" % (f["function"] or f["file"], nosync_cell([f])))
    our_lines = {f["line"] for f in ours}
    backward_line = next((n for n, l in enumerate(src, 1) if ".backward()" in l), 0)
    # Lines of the comparison's own harness (switching torch's mode on) run only in torch's run.
    harness = {n for n, l in enumerate(src, 1) if "# HARNESS" in l}
    missed = sorted({w["user_line"] for w in warns} - our_lines - harness -
                    ({backward_line} if backward else set()))
    check(not missed, "every line torch's mode warns about is reported by nosync too (missed: %s)" % missed)
    torch_only_zero = [w for w in warns if w["user_line"] == 0]
    check(not torch_only_zero, "every torch warning came from a line of the script (%d did not)" %
          len(torch_only_zero))
    table = "\n".join(rows)
    summary = ("nosync: %d findings in the script at %d lines (+%d in backward, %d elsewhere); torch's mode: %d "
               "warnings at %d lines of the script" % (len(ours), len(our_lines), len(backward), len(others),
                                                       len(warns), len({w['user_line'] for w in warns})))

    # The fixed twin: every step after warm-up inside nosync.sync_free().
    p = run([py, "-m", "nosync", "run", "--mode", "report", "--log", tmp + "/fixed", "--", FIXED, "--steps",
             str(args.steps), "--assert-sync-free"])
    m = re.search(r"sync-free steps: (\d+)", p.stdout)
    check(p.returncode == 0 and m and int(m.group(1)) == args.steps - 2,
          "train_fixed.py --assert-sync-free: %s sync-free steps, no HostSyncError" % (m.group(1) if m else "no"))
    print(table)
    print(summary)
    if args.out:
        with open(args.out, "w") as f:
            f.write("### train_hazards.py: nosync vs torch.cuda.set_sync_debug_mode (%d steps)\n\n%s\n\n%s\n" % (
                args.steps, table, summary))
    print("%d failure(s)" % len(failures))
    return 1 if (failures and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
