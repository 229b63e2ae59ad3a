"""Two ranks of a torchrun-style job sharing the one GPU, under nosync-run.

Both processes get RANK / WORLD_SIZE / LOCAL_RANK as torchrun sets them and
meet at a file barrier, so they are on the GPU at the same time. Checked: one
JSON log per rank, named <log_path>.rank<R>.<pid> after the process that wrote
it; each rank's own exact count at the planted line (rank r makes 3 + 2r
item() calls); nosync-merge folding the two into one site with per-rank
counts, the total and the slowest rank. A real DDP run over NCCL needs two
GPUs (issue 7); this is the part one GPU allows. Prints "[  SKIPPED ]"
(ctest: Skipped) where no GPU exists.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from driver_checks import check, finish, marker_line, run_ranks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nosync-run", required=True)
    ap.add_argument("--nosync-merge", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    line = marker_line(args.source, "item")
    src_name = os.path.basename(args.source)
    tmp = tempfile.mkdtemp(prefix="nosync_ranks_")
    barrier = os.path.join(tmp, "barrier")
    os.mkdir(barrier)
    log = os.path.join(tmp, "ranks")
    world = 2
    expected = {rank: 3 + 2 * rank for rank in range(world)}

    results = run_ranks(args.nosync_run, log, [args.program, "ranked"], world, 180, NOSYNC_TEST_BARRIER=barrier)
    if any(p.returncode == 77 or "[  SKIPPED ]" in out for p, out in results):
        print("[  SKIPPED ] no CUDA GPU on this machine; run tests/gpu/run on the GPU machine")
        return 0
    for rank, (p, out) in enumerate(results):
        check(p.returncode == 0 and ("rank %d acc=" % rank) in out, "rank %d ran and exited 0" % rank)

    # One log per rank, named after the rank and the pid that wrote it
    # (nosync-run execs the program, so the pid is the one started here).
    files = sorted(f for f in os.listdir(tmp) if f.startswith("ranks."))
    want = sorted("ranks.rank%d.%d" % (rank, p.pid) for rank, (p, _) in enumerate(results))
    check(files == want, "one log per rank, <log>.rank<R>.<pid> (got %s, want %s)" % (files, want))

    for rank in range(world):
        path = os.path.join(tmp, "ranks.rank%d.%d" % (rank, results[rank][0].pid))
        if not os.path.exists(path):
            continue
        report = json.load(open(path))
        items = [f for f in report["findings"] if f["rule"] == "nosync-item"]
        check(len(report["findings"]) == 1 and len(items) == 1,
              "rank %d: exactly one finding, nosync-item (got %s)" % (rank, [f["rule"] for f in report["findings"]]))
        if items:
            f = items[0]
            check(f["file"].endswith(src_name) and f["line"] == line,
                  "rank %d: at %s:%d (got %s:%s)" % (rank, src_name, line, f["file"], f["line"]))
            check(f["count"] == expected[rank] and f["apis"].get("cudaStreamSynchronize") == expected[rank],
                  "rank %d: its own count, %d (got %s, apis %s)" % (rank, expected[rank], f["count"], f["apis"]))

    p = subprocess.run([sys.executable, args.nosync_merge, "--format", "json", log], capture_output=True, text=True)
    check(p.returncode == 0, "nosync-merge --format json exits 0 (%s)" % p.stderr.strip())
    merged = json.loads(p.stdout) if p.returncode == 0 else {"ranks": [], "findings": []}
    check(merged["ranks"] == [str(r) for r in range(world)], "merge sees ranks 0 and 1 (got %s)" % merged["ranks"])
    check(len(merged["findings"]) == 1, "merge: one site (got %d)" % len(merged["findings"]))
    if merged["findings"]:
        site = merged["findings"][0]
        per_rank = {int(r): v["count"] for r, v in site["ranks"].items()}
        check(site["count"] == sum(expected.values()) and per_rank == expected,
              "merge: %d calls, per rank %s (got %s, %s)" % (sum(expected.values()), expected, site["count"], per_rank))
        slowest = max(site["ranks"], key=lambda r: site["ranks"][r]["total_stall_us"])
        check(site["slowest_rank"] == slowest, "merge: slowest rank is the one with most stall (%s)" % slowest)

    p = subprocess.run([sys.executable, args.nosync_merge, log], capture_output=True, text=True)
    print(p.stdout)
    summary = r"^SUMMARY: nosync-merge: %d host syncs at 1 sites across 2 ranks, [0-9.]+ us stalled$" % sum(
        expected.values())
    check(re.search(summary, p.stdout, re.M) is not None, "merge text ends in its SUMMARY line")

    return finish()


if __name__ == "__main__":
    sys.exit(main())
