"""examples/train_hazards.py with its host syncs removed: the same model,
data and loss, and nothing in the step waits for the GPU.

    python examples/train_fixed.py --assert-sync-free      # every step after warm-up in nosync.sync_free()

What changed, hazard by hazard:
  data path     DataLoader(pin_memory=True) and non_blocking copies from pinned memory
  forward       mean over the kept tokens with a mask (no boolean indexing, no .tolist())
  loss check    nosync.kernels.nonfinite_flag into a device flag, read once after the loop
  backward hook gone: the clipping below returns the norm on the device
  optimizer     nosync.kernels.clip_grad_norm_ (no error_if_nonfinite sync); no GradScaler
                (fp32 needs none; its step() reads found_inf with .item())
  metrics       nosync.kernels.MetricAccumulator: sums on the device, poll() never waits
  timing        no torch.cuda.synchronize() in the loop; one after it
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

import nosync
import nosync.kernels
from train_hazards import BATCH, PAD, Model, Tokens


def pooled_forward(model, tokens):
    h = model.body(model.emb(tokens))
    keep = (tokens != PAD).unsqueeze(-1).to(h.dtype)
    pooled = (h * keep).sum(1) / keep.sum(1).clamp_min(1)
    return model.head(pooled)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--assert-sync-free", action="store_true",
                    help="run every step after the first two inside nosync.sync_free() (needs a GPU)")
    ap.add_argument("--torch-sync-debug", metavar="JSON", help="run under torch.cuda.set_sync_debug_mode('warn')")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = Model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    loader = DataLoader(Tokens(BATCH * args.steps), batch_size=BATCH, num_workers=args.workers,
                        pin_memory=device.type == "cuda", multiprocessing_context="fork" if args.workers else None)
    metrics = nosync.kernels.MetricAccumulator(str(device))
    bad = torch.zeros((), dtype=torch.int32, device=device)

    def step(x, y):
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        logits = pooled_forward(model, x)
        loss = F.cross_entropy(logits, y)
        nosync.kernels.nonfinite_flag([loss.detach()], bad)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nosync.kernels.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        metrics.add("loss", loss.detach())
        metrics.add("acc", (logits.argmax(1) == y).float().mean())

    recorder = None
    if args.torch_sync_debug:
        from torch_sync_debug import record_torch_sync_warnings

        recorder = record_torch_sync_warnings(args.torch_sync_debug, __file__)
        recorder.__enter__()
    checked = 0
    start = time.perf_counter()
    for i, (x, y) in enumerate(loader):
        if args.assert_sync_free and i >= 2:
            with nosync.sync_free("train step %d" % i):
                step(x, y)
            checked += 1
        else:
            step(x, y)
        if i % 10 == 9:
            means = metrics.poll()  # the newest finished readback, or None: never waits
            if means:
                print("step %d loss %.4f acc %.3f (readback of an earlier step)" % (i + 1, means["loss"], means["acc"]))
    if recorder is not None:
        recorder.__exit__(None, None, None)
    final = metrics.read()  # after the loop: one wait
    if device.type == "cuda":
        torch.cuda.synchronize()
    print("%.1f steps/s" % (args.steps / (time.perf_counter() - start)))
    if bad.item():
        raise FloatingPointError("a loss was not finite")
    if args.assert_sync_free:
        print("sync-free steps: %d" % checked)
    print("final loss %.6f" % final["loss"])


if __name__ == "__main__":
    main()
