"""A small DDP training job, one process per rank, each under nosync-run:
per-rank logs, each rank's own planted syncs counted exactly, the
collectives' host waits under their own rule, and nosync-merge over the
ranks.

    ddp_ranks.py --backend gloo --nosync-run R --nosync-merge M     # 2 ranks sharing GPU 0
    ddp_ranks.py --backend nccl --nosync-run R --nosync-merge M     # rank r on GPU r: needs 2 GPUs

The launcher starts the ranks as torchrun would (RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and checks their reports; with
--worker the script is one rank. Rank r calls loss.item() 3 + 2r times after
training, so each rank's nosync-item count is its own. Prints "[  SKIPPED ]"
(ctest: Skipped) with the reason where the machine cannot run the backend.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

from driver_checks import check, finish, run_ranks

STEPS = 20


def planted_items(rank):
    return 3 + 2 * rank


def worker(backend):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cuda", rank if backend == "nccl" else 0)
    torch.cuda.set_device(device)
    dist.init_process_group(backend, rank=rank, world_size=world)
    torch.manual_seed(rank)
    # Built on the device: .to(device) from CPU would be four pageable uploads (nosync-pageable-h2d).
    model = torch.nn.Sequential(torch.nn.Linear(256, 256, device=device), torch.nn.ReLU(),
                                torch.nn.Linear(256, 16, device=device))
    ddp = DDP(model, device_ids=[device.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device=device)
    for _ in range(STEPS):
        loss = ddp(x).square().mean()
        loss.backward()  # DDP all-reduces the gradient buckets here
        opt.step()
        opt.zero_grad(set_to_none=False)
    for _ in range(planted_items(rank)):
        loss.item()  # the planted user syncs
    dist.barrier()
    dist.destroy_process_group()
    print("rank %d done" % rank, flush=True)
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_count():
    """(number of GPUs torch sees, None if torch cannot be imported) and why not."""
    p = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                       capture_output=True, text=True)
    if p.returncode == 0 and p.stdout.strip().isdigit():
        return int(p.stdout.strip()), ""
    return None, (p.stderr.strip().splitlines() or ["no output"])[-1]


def launch(args, log, world):
    argv = [sys.executable, os.path.abspath(__file__), "--worker", "--backend", args.backend]
    results = run_ranks(args.nosync_run, log, argv, world, 240, MASTER_ADDR="127.0.0.1", MASTER_PORT=free_port())
    for rank, (p, out) in enumerate(results):
        check(p.returncode == 0 and ("rank %d done" % rank) in out, "rank %d trained and exited 0" % rank)
    return [p for p, _ in results]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("gloo", "nccl"), required=True)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--nosync-run")
    ap.add_argument("--nosync-merge")
    ap.add_argument("--world", type=int, default=2)
    args = ap.parse_args()
    if args.worker:
        return worker(args.backend)

    gpus, why = gpu_count()
    if gpus is None:
        print("[  SKIPPED ] %s cannot import torch (%s); this test runs on the GPU machine" % (sys.executable, why))
        return 0
    need = args.world if args.backend == "nccl" else 1
    if gpus < need:
        print("[  SKIPPED ] %s with %d ranks needs %d GPU(s), this machine has %d%s"
              % (args.backend, args.world, need, gpus,
                 " (NCCL refuses two ranks on one GPU: run on nvidia-h200-x2)" if args.backend == "nccl" else ""))
        return 0

    tmp = tempfile.mkdtemp(prefix="nosync_ddp_")
    log = os.path.join(tmp, "ddp")
    procs = launch(args, log, args.world)

    want = sorted("ddp.rank%d.%d" % (rank, p.pid) for rank, p in enumerate(procs))
    files = sorted(f for f in os.listdir(tmp) if f.startswith("ddp."))
    check(files == want, "one log per rank (got %s, want %s)" % (files, want))
    for rank, p in enumerate(procs):
        path = os.path.join(tmp, "ddp.rank%d.%d" % (rank, p.pid))
        if not os.path.exists(path):
            continue
        findings = json.load(open(path))["findings"]
        by_rule = {}
        for f in findings:
            by_rule.setdefault(f["rule"], []).append(f)
        print("rank %d: %s" % (rank, json.dumps([{k: f[k] for k in ("rule", "op", "count", "apis")}
                                                 for f in findings])), flush=True)
        items = sum(f["count"] for f in by_rule.get("nosync-item", []))
        check(items == planted_items(rank), "rank %d: its own %d item() calls (got %d)"
              % (rank, planted_items(rank), items))
        others = sorted(set(by_rule) - {"nosync-item", "nosync-collective-wait"})
        for rule in others:
            for f in by_rule[rule]:
                print("  unexpected %s x%d (%s), frames:\n    %s" % (rule, f["count"], f["apis"], "\n    ".join(
                    (fr.get("function") or "?")[:160] + " (" + os.path.basename(fr.get("module", "")) + ")"
                    for fr in f["frames"][:14])), flush=True)
        check(others == [], "rank %d: every other host wait is the collectives' (also seen: %s)" % (rank, others))
        check("nosync-collective-wait" in by_rule, "rank %d: the collectives' waits are reported as such" % rank)

    p = subprocess.run([sys.executable, args.nosync_merge, "--format", "json", log], capture_output=True, text=True)
    check(p.returncode == 0, "nosync-merge exits 0 (%s)" % p.stderr.strip())
    merged = json.loads(p.stdout) if p.returncode == 0 else {"ranks": [], "findings": []}
    check(merged["ranks"] == [str(r) for r in range(args.world)], "merge sees every rank (%s)" % merged["ranks"])
    items = [s for s in merged["findings"] if s["rule"] == "nosync-item"]
    per_rank = {}
    for s in items:
        for r, v in s["ranks"].items():
            per_rank[int(r)] = per_rank.get(int(r), 0) + v["count"]
    want_items = {r: planted_items(r) for r in range(args.world)}
    check(per_rank == want_items, "merge: item() calls per rank %s (got %s)" % (want_items, per_rank))
    print(subprocess.run([sys.executable, args.nosync_merge, log], capture_output=True, text=True).stdout)

    return finish()


if __name__ == "__main__":
    sys.exit(main())
