"""Future callbacks and DDP communication hooks over the `panama` backend,
per rank (panama-torchrun).

- A Future callback that issues another allreduce and waits for it (what
  PowerSGD's hook does at every compressed step), nested three deep, and one
  that waits on a Work: all complete (callbacks run on the backend's
  executor, never on the thread that completes allreduces).
- PowerSGD (rank 1, compression from step 2, error feedback, warm start):
  10 steps with DDP on PANAMA and on Gloo side by side; the parameters agree
  to within 1e-4 relative after every step (the runs differ only in the
  rounding order of the sums), and PANAMA carried the compressed allreduces.
- fp16_compress_hook and bf16_compress_hook (torch's, under the name
  panama_torch.bf16_compress_hook: DDP refuses the name without NCCL): the
  buckets go through PANAMA
  as float16 / bfloat16 (counted by dtype, nothing delegated); step 0's
  gradient of every parameter is, bit for bit, what the engine may emit for
  the ranks' compressed contributions (docs/protocol.md §7: widened, summed
  in fp32 in some order, rounded once), widened back to float32.
- A bfloat16 model under DDP (bfloat16 gradients, bfloat16 broadcast of the
  weights): its allreduces go through PANAMA, the replicas stay identical.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.nn.parallel import DistributedDataParallel as DDP

import panama_torch
from torch_test_util import (Checks, engine_candidates, gather_all, matches_some_order, same_bits_on_all_ranks,
                             test_seed)

seed = test_seed()
dist.init_process_group("panama")
rank, n = dist.get_rank(), dist.get_world_size()
if rank == 0:
    print(f"seed {seed} (override with PANAMA_TEST_SEED)", flush=True)
gloo = dist.new_group(backend="gloo")
c = Checks("test_hooks")

# -- a callback that issues another allreduce and waits for it
x = torch.full((1000,), float(rank + 1))
y = torch.full((3000,), 2.0 * (rank + 1))
z = torch.full((500,), 3.0 * (rank + 1))
total = n * (n + 1) / 2
seen = {}


def inner(fut):
    # Third level: plain wait on another allreduce's future.
    seen["z"] = dist.all_reduce(z, async_op=True).get_future().wait()[0].clone()
    return fut.value()


def outer(fut):
    # Second level: an allreduce whose callback (inner) issues a third, waited for here.
    seen["y"] = dist.all_reduce(y, async_op=True).get_future().then(inner).wait()[0].clone()
    return fut.value()


chained = dist.all_reduce(x, async_op=True).get_future().then(outer)
result = chained.wait()[0]
c.check(torch.equal(result, torch.full((1000,), total)), "outer allreduce wrong")
c.check(torch.equal(seen.get("y", torch.empty(0)), torch.full((3000,), 2.0 * total)), "nested allreduce wrong")
c.check(torch.equal(seen.get("z", torch.empty(0)), torch.full((500,), 3.0 * total)), "doubly nested allreduce wrong")


def waits_on_work(fut):
    w = dist.all_reduce(torch.ones(10), async_op=True)
    w.wait()
    return w.result()


r = dist.all_reduce(torch.ones(7), async_op=True).get_future().then(waits_on_work).wait()
c.check(torch.equal(r[0], torch.full((10,), float(n))), "a callback waiting on a Work got the wrong sum")
c.check(panama_torch.stats()["callback_threads"] >= 2, "nested callbacks did not get threads of their own")


# -- PowerSGD: 10 steps on PANAMA and on Gloo, side by side
def mlp() -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))


g = torch.Generator().manual_seed(seed * 31 + rank)
xs = torch.randn(10, 16, 32, generator=g)
ys = torch.randint(0, 4, (10, 16), generator=g)
loss_fn = nn.CrossEntropyLoss()
runs = {}
for name, group in (("panama", None), ("gloo", gloo)):
    model = DDP(mlp(), process_group=group)
    state = powersgd.PowerSGDState(process_group=group, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                   min_compression_rate=1, random_seed=seed % 1000)
    model.register_comm_hook(state, powersgd.powerSGD_hook)
    runs[name] = (model, torch.optim.SGD(model.parameters(), lr=0.05), [])
before = panama_torch.stats()
for step in range(10):
    for name, (model, opt, snaps) in runs.items():
        opt.zero_grad()
        loss_fn(model(xs[step]), ys[step]).backward()
        opt.step()
        snaps.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
after = panama_torch.stats()
worst = 0.0
for step, (a, b) in enumerate(zip(runs["panama"][2], runs["gloo"][2])):
    rel = float((a - b).norm() / b.norm())
    worst = max(worst, rel)
    c.check(rel <= 1e-4, f"PowerSGD step {step}: PANAMA and Gloo parameters differ by {rel:.3g} relative")
c.check(same_bits_on_all_ranks(runs["panama"][2][-1], gloo), "PowerSGD: PANAMA replicas differ")
# Steps 0-1 one allreduce per bucket, then P and Q (and the uncompressed rank-1 tensors) per step.
c.check(after["allreduces"] - before["allreduces"] >= 2 + 8 * 2, "PowerSGD's allreduces did not go through PANAMA")
if rank == 0:
    print(f"PowerSGD: 10 steps, largest relative parameter difference PANAMA vs Gloo {worst:.3g}", flush=True)

# -- fp16 / bf16 compression hooks: through PANAMA, step 0 against the engine's contract
for hook, dtype, name in ((default_hooks.fp16_compress_hook, torch.float16, "fp16"),
                          (panama_torch.bf16_compress_hook, torch.bfloat16, "bf16")):
    model = DDP(mlp())
    model.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    # Every rank's local gradient of the same starting model, compressed as the hook does.
    local = mlp()
    loss_fn(local(xs[0]), ys[0]).backward()
    before = panama_torch.stats()
    losses = []
    for step in range(5):
        opt.zero_grad()
        loss = loss_fn(model(xs[step]), ys[step])
        loss.backward()
        if step == 0:
            for p, lp in zip(model.parameters(), local.parameters()):
                mine = lp.grad.to(dtype).div_(n)
                cands = engine_candidates(gather_all(mine, gloo), dtype)
                c.check(torch.equal(p.grad, p.grad.to(dtype).float()), f"{name}: gradient not a widened {name}")
                c.check(matches_some_order(p.grad.to(dtype), cands),
                        f"{name} hook: a gradient element is no fp32 sum (in any order) of the compressed "
                        f"contributions rounded to {name}")
        opt.step()
        losses.append(loss.item())
    after = panama_torch.stats()
    grown = after["allreduces_by_dtype"].get(name, 0) - before["allreduces_by_dtype"].get(name, 0)
    c.check(grown >= 5, f"{name} hook: {grown} {name} allreduces through PANAMA in 5 steps")
    # (DDP delegates broadcasts and an allgather of its own when it rebuilds its buckets.)
    allreduces = {k: v for k, v in after["delegated"].items() if k.startswith("allreduce")}
    c.check(allreduces == {k: v for k, v in before["delegated"].items() if k.startswith("allreduce")},
            f"{name} hook: buckets were delegated: {after['delegated']}")
    c.check(same_bits_on_all_ranks(torch.cat([p.detach().reshape(-1) for p in model.parameters()]), gloo),
            f"{name} hook: replicas differ")

# -- a bfloat16 model: bfloat16 gradients and weights
torch.manual_seed(seed)
model = DDP(mlp().to(torch.bfloat16))  # broadcasts rank 0's bfloat16 weights
opt = torch.optim.SGD(model.parameters(), lr=0.05)
before = panama_torch.stats()
for step in range(3):
    opt.zero_grad()
    loss_fn(model(xs[step].to(torch.bfloat16)).float(), ys[step]).backward()
    opt.step()
after = panama_torch.stats()
c.check(after["allreduces_by_dtype"].get("bf16", 0) - before["allreduces_by_dtype"].get("bf16", 0) >= 3,
        "bfloat16 DDP: gradients did not go through PANAMA as bf16")
c.check(same_bits_on_all_ranks(torch.cat([p.detach().reshape(-1) for p in model.parameters()]), gloo),
        "bfloat16 DDP: replicas differ")
c.check(after["refused_total"] == 0, f"refused: {after['refused']}")
c.finish()
dist.destroy_process_group()
