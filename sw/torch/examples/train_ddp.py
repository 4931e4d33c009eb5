"""Data-parallel training with DistributedDataParallel, on PANAMA or on Gloo.

Synthetic data, generated here (no downloads), each rank training on its own
shard:

- --model mlp: 4-class points in 32 dimensions labelled by a fixed random
  "teacher" network; a 3-layer MLP;
- --model cnn: 32x32 RGB "images" of 10 classes (a class template plus
  noise); a ResNet-style CNN (stem, residual blocks with BatchNorm, global
  pooling);
- --model transformer: next-token prediction on sequences drawn from a
  fixed random Markov chain over 64 tokens; a 2-layer pre-norm transformer
  encoder with a causal mask.

--dtype bf16|fp16 trains the model in that dtype (16-bit gradients, so
16-bit allreduces: native through PANAMA); --hook fp16|bf16|powersgd
registers a DDP communication hook on float32 gradients. Run it with PANAMA
on the virtual cluster:

    build/sw/torch/panama-torchrun --workers 4 -- \\
        /usr/bin/python3 sw/torch/examples/train_ddp.py --model cnn --hook bf16

or with Gloo over loopback TCP, for comparison (the launcher only provides
the ranks' environment then; the PSwitch carries nothing):

    build/sw/torch/panama-torchrun --workers 4 -- \\
        /usr/bin/python3 sw/torch/examples/train_ddp.py --model cnn --backend gloo

--device cuda (where torch has CUDA) puts rank r on cuda:(LOCAL_RANK mod
device count); PANAMA then stages the gradients through pinned host buffers.
Rank 0 prints the loss per step and a summary (with the backend's statistics
for PANAMA); --curve FILE writes the loss curve as JSON.
"""

import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--backend", default="panama", choices=["panama", "gloo"])
parser.add_argument("--model", default="mlp", choices=["mlp", "cnn", "transformer"])
parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"],
                    help="the model's dtype (and so its gradients')")
parser.add_argument("--hook", default="none", choices=["none", "fp16", "bf16", "powersgd"],
                    help="DDP communication hook (on float32 gradients)")
parser.add_argument("--powersgd-rank", type=int, default=2)
parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
parser.add_argument("--steps", type=int, default=60)
parser.add_argument("--batch", type=int, default=32, help="samples per rank per step")
parser.add_argument("--lr", type=float, default=None, help="default: per model")
parser.add_argument("--loss-scale", type=float, default=1024.0, help="fixed loss scale with --dtype fp16")
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--print-every", type=int, default=5)
parser.add_argument("--curve", help="write rank 0's loss curve as JSON to this file")
args = parser.parse_args()
if args.hook != "none" and args.dtype != "fp32":
    parser.error("--hook compresses float32 gradients: use it with --dtype fp32")

if args.backend == "panama":
    import panama_torch  # registers the "panama" backend
dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
if args.device == "cuda":
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda: this torch has no CUDA device")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    torch.cuda.set_device(device)
else:
    device = torch.device("cpu")
dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
if dtype == torch.float16 and device.type == "cpu":
    try:
        torch.ones(2, 2, dtype=torch.float16) @ torch.ones(2, 2, dtype=torch.float16)
    except RuntimeError:
        raise SystemExit(f"--dtype fp16 on the CPU: torch {torch.__version__} has no float16 CPU kernels for "
                         f"these layers; use --dtype bf16, --hook fp16 (float16 allreduces of float32 "
                         f"gradients) or --device cuda") from None
torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)


# ------------------------------------------------------------------ models
class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = nn.Sequential() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + self.skip(x))


def resnet(classes=10):
    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         Residual(16, 16, 1), Residual(16, 32, 2), Residual(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=64, d=64, heads=4, layers=2, length=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(length, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((length, length), float("-inf")), 1))

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.encoder(x, mask=self.mask[: tokens.shape[1], : tokens.shape[1]].to(x.dtype)))


# ------------------------------------------------------------------ data
data_gen = torch.Generator().manual_seed(args.seed * 1000 + rank)  # this rank's shard
fixed = torch.Generator().manual_seed(args.seed + 99)  # the task, the same on every rank
if args.model == "mlp":
    teacher = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 4))
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=fixed))
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))

    def batch():
        x = torch.randn(args.batch, 32, generator=data_gen)
        with torch.no_grad():
            return x, teacher(x).argmax(dim=1)
    lr = args.lr or 0.1
elif args.model == "cnn":
    templates = torch.randn(10, 3, 32, 32, generator=fixed)
    model = resnet()

    def batch():
        y = torch.randint(0, 10, (args.batch,), generator=data_gen)
        return templates[y] + 1.5 * torch.randn(args.batch, 3, 32, 32, generator=data_gen), y
    lr = args.lr or 0.05
else:
    transitions = torch.softmax(3.0 * torch.randn(64, 64, generator=fixed), dim=1)
    model = TinyTransformer()

    def batch():
        seq = torch.empty(args.batch, 33, dtype=torch.long)
        seq[:, 0] = torch.randint(0, 64, (args.batch,), generator=data_gen)
        for i in range(1, 33):
            seq[:, i] = torch.multinomial(transitions[seq[:, i - 1]], 1, generator=data_gen).squeeze(1)
        return seq[:, :-1], seq[:, 1:]
    lr = args.lr or 0.05

model = model.to(device=device, dtype=dtype)
ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
if args.hook != "none":
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if args.hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.hook == "bf16":
        # DDP refuses torch's bf16_compress_hook by name without CUDA 11 + NCCL; the panama
        # package has the same function under another name.
        hook = panama_torch.bf16_compress_hook if args.backend == "panama" else default_hooks.bf16_compress_hook
        ddp.register_comm_hook(None, hook)
    else:
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=2, min_compression_rate=1, random_seed=args.seed)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
scale = args.loss_scale if args.dtype == "fp16" else 1.0

curve = []
start = time.monotonic()
for step in range(args.steps):
    x, y = batch()
    x = x.to(device) if x.dtype == torch.long else x.to(device=device, dtype=dtype)
    y = y.to(device)
    opt.zero_grad()
    out = ddp(x)
    loss = F.cross_entropy(out.float().reshape(-1, out.shape[-1]), y.reshape(-1))
    (loss * scale).backward()  # DDP allreduces the gradients (through PANAMA with --backend panama)
    if scale != 1.0:
        for p in model.parameters():
            p.grad.div_(scale)
    opt.step()
    mean_loss = loss.detach().reshape(1).float().cpu()
    dist.all_reduce(mean_loss)  # the mean loss over all ranks (an allreduce of one float)
    mean_loss = mean_loss.item() / world
    curve.append(mean_loss)
    if rank == 0 and (step % args.print_every == 0 or step == args.steps - 1):
        print(f"step {step:4d}  loss {mean_loss:.4f}", flush=True)
elapsed = time.monotonic() - start

if rank == 0:
    params = sum(p.numel() for p in model.parameters())
    grad_bytes = params * torch.finfo(dtype).bits // 8
    print(f"summary: backend {args.backend}, model {args.model}, dtype {args.dtype}, hook {args.hook}, device "
          f"{device}, {world} ranks, {params} parameters ({grad_bytes / 2**20:.2f} MiB of gradients per step), "
          f"{args.steps} steps in {elapsed:.1f} s; loss {curve[0]:.4f} -> {curve[-1]:.4f}", flush=True)
    if args.backend == "panama":
        s = panama_torch.stats()
        print(f"panama: {s['allreduces']} allreduces {s['allreduces_by_dtype']}, "
              f"{s['bytes_completed'] / 2**20:.1f} MiB, retransmissions {s['retransmissions']}, CE results "
              f"{s['results_ce']}, delegated to Gloo {s['delegated']}, staged {s['staged_ops']}", flush=True)
        for t in s["trees"]:
            print(f"  tree {t['tree']}: {t['bytes_completed'] / 2**20:.1f} MiB, cwnd {t['cwnd']:.1f} "
                  f"(cap {t['cwnd_cap']}), retransmissions {t['retransmissions']}, srtt {t['srtt_us']:.0f} us",
                  flush=True)
    if args.curve:
        summary = {"backend": args.backend, "model": args.model, "dtype": args.dtype, "hook": args.hook,
                   "world_size": world, "loss": curve, "seconds": elapsed,
                   "finite": all(math.isfinite(v) for v in curve)}
        if args.backend == "panama":
            summary["stats"] = {k: s[k] for k in ("allreduces", "allreduces_by_dtype", "retransmissions",
                                                  "delegated", "refused_total", "staged_ops")}
        with open(args.curve, "w") as f:
            json.dump(summary, f)
dist.destroy_process_group()
