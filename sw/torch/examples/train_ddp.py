"""Data-parallel training of a small MLP with DistributedDataParallel.

Synthetic data, generated here (no downloads): 4-class points in 32
dimensions labelled by a fixed random "teacher" network; every rank trains
on its own shard. Run it with PANAMA on the virtual cluster:

    build/sw/torch/panama-torchrun --workers 4 -- \\
        /usr/bin/python3 sw/torch/examples/train_ddp.py

or with Gloo over loopback TCP, for comparison (the launcher only provides
the ranks' environment then; the PSwitch carries nothing):

    build/sw/torch/panama-torchrun --workers 4 -- \\
        /usr/bin/python3 sw/torch/examples/train_ddp.py --backend gloo

Rank 0 prints the loss and accuracy per step and a summary (with the
backend's statistics for PANAMA); --curve FILE writes the loss curve as JSON.
"""

import argparse
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--backend", default="panama", choices=["panama", "gloo"])
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--batch", type=int, default=64, help="samples per rank per step")
parser.add_argument("--hidden", type=int, default=256)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--curve", help="write rank 0's loss curve as JSON to this file")
args = parser.parse_args()

if args.backend == "panama":
    import panama_torch  # registers the "panama" backend
dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(args.seed)

DIM, CLASSES = 32, 4
teacher = nn.Sequential(nn.Linear(DIM, 64), nn.Tanh(), nn.Linear(64, CLASSES))
model = nn.Sequential(nn.Linear(DIM, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                      nn.Linear(args.hidden, CLASSES))
ddp = DDP(model)  # DDP broadcasts rank 0's weights; gradients are allreduced in buckets
opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

shard = torch.Generator().manual_seed(args.seed * 1000 + rank)
held_out = torch.randn(1024, DIM, generator=torch.Generator().manual_seed(args.seed + 99))
with torch.no_grad():
    held_out_labels = teacher(held_out).argmax(dim=1)

curve = []
start = time.monotonic()
for step in range(args.steps):
    x = torch.randn(args.batch, DIM, generator=shard)
    with torch.no_grad():
        y = teacher(x).argmax(dim=1)
    opt.zero_grad()
    loss = loss_fn(ddp(x), y)
    loss.backward()  # DDP allreduces the gradients (through PANAMA with --backend panama)
    opt.step()
    # The mean loss over all ranks (an allreduce of one float).
    mean_loss = loss.detach().reshape(1).clone()
    dist.all_reduce(mean_loss)
    mean_loss = mean_loss.item() / world
    curve.append(mean_loss)
    if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
        with torch.no_grad():
            acc = (model(held_out).argmax(dim=1) == held_out_labels).float().mean().item()
        print(f"step {step:4d}  loss {mean_loss:.4f}  held-out accuracy {acc:.3f}", flush=True)
elapsed = time.monotonic() - start

if rank == 0:
    with torch.no_grad():
        acc = (model(held_out).argmax(dim=1) == held_out_labels).float().mean().item()
    params = sum(p.numel() for p in model.parameters())
    print(f"summary: backend {args.backend}, {world} ranks, {params} parameters ({params * 4 / 2**20:.2f} MiB of "
          f"gradients per step), {args.steps} steps in {elapsed:.1f} s; loss {curve[0]:.4f} -> {curve[-1]:.4f}, "
          f"held-out accuracy {acc:.3f}", flush=True)
    if args.backend == "panama":
        s = panama_torch.stats()
        print(f"panama: {s['allreduces']} allreduces, {s['bytes_completed'] / 2**20:.1f} MiB, retransmissions "
              f"{s['retransmissions']}, CE results {s['results_ce']}, delegated to Gloo {s['delegated']}", flush=True)
        for t in s["trees"]:
            print(f"  tree {t['tree']}: {t['bytes_completed'] / 2**20:.1f} MiB, cwnd {t['cwnd']:.1f} "
                  f"(cap {t['cwnd_cap']}), retransmissions {t['retransmissions']}, srtt {t['srtt_us']:.0f} us",
                  flush=True)
    if args.curve:
        with open(args.curve, "w") as f:
            json.dump({"backend": args.backend, "world_size": world, "loss": curve, "seconds": elapsed}, f)
dist.destroy_process_group()
