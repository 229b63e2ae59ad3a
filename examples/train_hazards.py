"""A Python training loop with host syncs where Python training code usually
has them: the data path, the forward pass, the loss check, a backward hook,
backward itself, the optimizer step and the metrics. Each planted sync is
marked by a SYNC comment; examples/train_fixed.py is the twin without them.

    python -m nosync run --mode report -- examples/train_hazards.py          # what nosync finds
    python examples/train_hazards.py --torch-sync-debug /tmp/torch.json       # what torch's sync debug mode finds
    python examples/compare_sync_reports.py                                   # both, side by side

A bag-of-tokens classifier: embedding, a per-token MLP, mean over the
non-padding tokens, a linear head; synthetic data from a DataLoader with
worker processes.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

VOCAB, SEQ, DIM, CLASSES, BATCH, PAD = 1000, 64, 128, 10, 64, 0


class Tokens(Dataset):
    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, VOCAB, (n, SEQ), generator=g)
        self.y = self.x[:, 1] % CLASSES

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.body = nn.Sequential(nn.Linear(DIM, DIM), nn.GELU(), nn.Linear(DIM, DIM), nn.GELU())
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, tokens):
        h = self.body(self.emb(tokens))
        keep = tokens != PAD
        kept = h[keep]  # SYNC: forward, boolean-mask indexing (and again in its backward)
        lengths = keep.sum(1).tolist()  # SYNC: forward, lengths read back for a ragged split
        pooled = torch.stack([s.mean(0) for s in torch.split(kept, lengths)])
        return self.head(pooled)


def warn_on_large_grad(grad):
    if grad.norm() > 1e3:  # SYNC: backward hook, tensor in a condition
        print("large gradient")
    return grad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--torch-sync-debug", metavar="JSON", help="run under torch.cuda.set_sync_debug_mode('warn')")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = Model().to(device)
    model.head.weight.register_hook(warn_on_large_grad)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
    loader = DataLoader(Tokens(BATCH * args.steps), batch_size=BATCH, num_workers=args.workers,
                        multiprocessing_context="fork" if args.workers else None)

    recorder = None
    if args.torch_sync_debug:
        from torch_sync_debug import record_torch_sync_warnings

        recorder = record_torch_sync_warnings(args.torch_sync_debug, __file__)
        recorder.__enter__()  # HARNESS: torch's mode is switched on here (only in its run)
    running_loss, correct, seen = 0.0, 0, 0
    start = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        x = x.to(device)  # SYNC: data path, blocking copy from pageable memory
        y = y.to(device, non_blocking=True)  # SYNC: data path, "non_blocking" from pageable memory is staged
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        if not torch.isfinite(loss):  # SYNC: loss check, tensor in a condition
            raise FloatingPointError("loss is %s" % loss)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()  # backward: IndexBackward0 expands the boolean mask again
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)  # SYNC: optimizer, clip check
        scaler.step(opt)  # SYNC: optimizer step, GradScaler reads found_inf with .item()
        scaler.update()
        running_loss += loss.item()  # SYNC: metrics, loss.item()
        correct += (logits.argmax(1) == y).sum().cpu()  # SYNC: metrics, accuracy to the CPU
        seen += len(y)
        if step % 10 == 9:
            if device.type == "cuda":
                torch.cuda.synchronize()  # SYNC: timing, explicit synchronize
            print("step %d loss %.4f acc %.3f %.1f steps/s" % (step + 1, running_loss / (step + 1),
                                                                float(correct) / seen,
                                                                (step + 1) / (time.perf_counter() - start)))
    if recorder is not None:
        recorder.__exit__(None, None, None)
    print("final loss %.6f" % (running_loss / max(1, args.steps)))


if __name__ == "__main__":
    main()
