"""DistributedDataParallel over the `panama` backend, per rank (panama-torchrun).

The same MLP is trained twice side by side on the same synthetic data: once
with DDP on the PANAMA process group, once with DDP on a Gloo group. Checks:
- after every step, the PANAMA model's parameters are bit-identical on all
  ranks (every rank receives the same reduced gradient bits);
- step 0: both runs start from the same weights, so their losses are equal
  bit for bit, and the PANAMA-averaged gradient is within the float
  reordering bound gamma_(n-1)·sum|g_i| / n of the exact average, computed
  here from every rank's local gradient;
- the loss curves agree within a tolerance derived from that bound (below),
  and the loss goes down.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import panama_torch
from torch_test_util import Checks, gamma, same_bits_on_all_ranks, test_seed

STEPS = 12
BATCH = 32
LR = 0.05
HIDDEN = 512  # 1.1 MiB of parameters: more than DDP's first bucket (1 MiB)

seed = test_seed()
dist.init_process_group("panama")
rank, n = dist.get_rank(), dist.get_world_size()
if rank == 0:
    print(f"seed {seed} (override with PANAMA_TEST_SEED)", flush=True)
gloo = dist.new_group(backend="gloo")
c = Checks("test_ddp")


def make_model() -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))


# Synthetic regression data: a fixed random teacher network, this rank's shard.
teacher = nn.Sequential(nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 1))
with torch.no_grad():
    g = torch.Generator().manual_seed(seed + 1)
    for p in teacher.parameters():
        p.copy_(torch.randn(p.shape, generator=g))
    g = torch.Generator().manual_seed(seed * 7919 + rank)
    xs = torch.randn(STEPS, BATCH, 16, generator=g)
    ys = teacher(xs)

# Several buckets, so every backward issues several allreduces in flight.
panama_model = DDP(make_model(), bucket_cap_mb=0.25)
gloo_model = DDP(make_model(), process_group=gloo, bucket_cap_mb=0.25)
panama_opt = torch.optim.SGD(panama_model.parameters(), lr=LR)
gloo_opt = torch.optim.SGD(gloo_model.parameters(), lr=LR)
loss_fn = nn.MSELoss()


def global_loss(local: torch.Tensor) -> float:
    t = local.detach().double().reshape(1)
    dist.all_reduce(t, group=gloo)
    return t.item() / n


# Step 0's gradient bound: every rank's local gradient of the same starting model.
local = make_model()
loss_fn(local(xs[0]), ys[0]).backward()
local_grads = torch.cat([p.grad.reshape(-1) for p in local.parameters()]).double()
exact_avg = local_grads.clone()
dist.all_reduce(exact_avg, group=gloo)
exact_avg /= n
abs_sum = local_grads.abs()
dist.all_reduce(abs_sum, group=gloo)

panama_losses, gloo_losses = [], []
for step in range(STEPS):
    for model, opt, losses in ((panama_model, panama_opt, panama_losses), (gloo_model, gloo_opt, gloo_losses)):
        opt.zero_grad()
        loss = loss_fn(model(xs[step]), ys[step])
        loss.backward()
        if step == 0 and model is panama_model:
            grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
            bound = gamma(n - 1) * abs_sum / n + 2.0 ** -50 * abs_sum
            c.check(bool(((grads.double() - exact_avg).abs() <= bound).all()),
                    "step 0: PANAMA-averaged gradient outside the reordering bound of the exact average")
            c.check(same_bits_on_all_ranks(grads, gloo), "step 0: ranks hold different gradient bits")
        opt.step()
        losses.append(global_loss(loss))
    params = torch.cat([p.detach().reshape(-1) for p in panama_model.parameters()])
    c.check(same_bits_on_all_ranks(params, gloo), f"step {step}: PANAMA model parameters differ between ranks")

# Tolerance of the loss curves. The runs differ only in the rounding of the
# gradient sum: per step at most gamma_(n-1) (about 1.8e-7 for n = 4)
# relative to sum|g_i| (checked at step 0 above). A perturbation of the
# weights can grow by at most a factor (1 + LR·L) per SGD step, L the
# gradient's Lipschitz constant; for this tanh MLP on unit-variance inputs
# LR·L < 1, so by at most 2^STEPS over the run. Each step adds one more
# perturbation: relative loss difference <= STEPS · 2^STEPS · gamma_(n-1).
tolerance = STEPS * 2.0 ** STEPS * gamma(n - 1)
c.check(panama_losses[0] == gloo_losses[0], "step 0: losses differ although both models start equal")
worst = max(abs(p - q) / abs(q) for p, q in zip(panama_losses, gloo_losses))
c.check(worst <= tolerance, f"loss curves differ by {worst:.3g} relative, above the tolerance {tolerance:.3g}")
c.check(panama_losses[-1] < 0.7 * panama_losses[0], f"loss did not go down: {panama_losses}")
if rank == 0:
    print("step  panama      gloo", flush=True)
    for i, (p, q) in enumerate(zip(panama_losses, gloo_losses)):
        print(f"{i:4d}  {p:.8f}  {q:.8f}", flush=True)
    print(f"largest relative loss difference {worst:.3g} (tolerance {tolerance:.3g})", flush=True)
s = panama_torch.stats()
c.check(s["allreduces"] > STEPS and s["ops_failed"] == 0,
        f"expected several bucket allreduces per step, got {s['allreduces']} in {STEPS} steps")
c.finish()
dist.destroy_process_group()
