"""Process groups created, destroyed and created again in one process, and
subgroups, per rank (panama-torchrun).

- destroy_process_group() then init_process_group("panama") three times in
  the same processes (env:// rendezvous on the same port each time): every
  time allreduces give exact sums, and the new group continues the job's
  sequences where the previous one stopped (the engines' slots remember
  them), per tree, as its statistics show.
- A DDP model trained across a re-initialisation (a new DDP on the new group).
- new_group(backend="panama") over ranks [0, 1] of 4: ValueError on every
  rank at once (a PANAMA job covers every rank of its plan), no hang (ranks 2
  and 3 would otherwise wait in torch's store barrier for the timeout);
  new_group(backend="panama") over all ranks while the world group is PANAMA:
  ValueError on every rank (one group per job); Gloo subgroups work.
- A Gloo world group with a PANAMA group over all ranks made by new_group:
  allreduces go through PANAMA, and destroying it leaves the world usable.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import panama_torch
from torch_test_util import Checks, Reinit, exact_summing, test_seed

seed = test_seed()
c = Checks("test_lifecycle")
g = torch.Generator().manual_seed(seed)
rank = int(os.environ["RANK"])

reinit = Reinit("lifecycle")


def exact_check(what: str, size: int = 3000) -> None:
    rank, n = dist.get_rank(), dist.get_world_size()
    parts = [exact_summing(size, torch.Generator().manual_seed(seed + 7 * r + size)) for r in range(n)]
    t = parts[rank].clone()
    dist.all_reduce(t)
    c.check(torch.equal(t.double(), sum(p.double() for p in parts)), f"{what}: wrong sum")


# -- destroy and init again, three times; sequences continue
previous = None
for round_ in range(3):
    if round_ == 0:
        dist.init_process_group("panama", timeout=timedelta(seconds=60))
    else:
        reinit(timeout=timedelta(seconds=60))
    rank, n = dist.get_rank(), dist.get_world_size()
    start = [t["next_seq"] for t in panama_torch.stats()["trees"]]
    if previous is not None:
        c.check(start == previous, f"round {round_}: the new group starts at sequences {start}, the previous "
                f"one ended at {previous}")
    for k in range(3):
        exact_check(f"round {round_} allreduce {k}", 1000 + 700 * k)
    previous = [t["next_seq"] for t in panama_torch.stats()["trees"]]
    c.check(all(p > s for p, s in zip(previous, start)), f"round {round_}: sequences did not advance")
    dist.destroy_process_group()
    c.check(not dist.is_initialized(), "destroy_process_group left a default group")
if rank == 0:
    print(f"3 rounds of init/destroy; the job's sequences per tree ended at {previous}", flush=True)

# -- DDP across a re-initialisation
reinit()
torch.manual_seed(seed)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
for phase in range(2):
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        ddp(torch.randn(4, 8, generator=g)).pow(2).mean().backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(n)]
    dist.all_gather(everyone, flat)  # delegated to the internal Gloo group
    c.check(all(torch.equal(e, everyone[0]) for e in everyone), f"DDP phase {phase}: replicas differ")
    del ddp, opt
    dist.destroy_process_group()
    reinit()

# -- subgroups: a clear error on every rank, at once
gloo = dist.new_group(backend="gloo")
outcome = torch.zeros(2)
try:
    dist.new_group(ranks=[0, 1], backend="panama")
except ValueError as e:
    outcome[0] = 1
    if rank == 0:
        print(f"new_group([0, 1], backend='panama') raised: {e}", flush=True)
    c.check("covers every rank" in str(e) and "gloo" in str(e), f"unclear message: {e}")
try:
    dist.new_group(backend="panama")
except ValueError as e:
    outcome[1] = 1
    c.check("one group per job" in str(e), f"unclear message: {e}")
dist.all_reduce(outcome, group=gloo)
c.check(outcome.tolist() == [n, n], f"the subgroup errors were not raised on every rank: {outcome.tolist()}")
sub = dist.new_group(ranks=[0, 1], backend="gloo")
if rank in (0, 1):
    t = torch.ones(3)
    dist.all_reduce(t, group=sub)
    c.check(t.tolist() == [2.0] * 3, "Gloo subgroup allreduce wrong")
exact_check("the PANAMA world group after the refused subgroups")
del gloo, sub  # subgroups hold the store (rank 0's server): drop them before re-initialising
dist.destroy_process_group()

# -- a PANAMA group made by new_group under a Gloo world
reinit("gloo")
pg = dist.new_group(backend="panama")
t = torch.full((2000,), float(rank + 1))
dist.all_reduce(t, group=pg)
c.check(torch.equal(t, torch.full((2000,), n * (n + 1) / 2)), "PANAMA group under a Gloo world: wrong sum")
s = panama_torch.stats(pg)
c.check(s["allreduces"] == 1 and s["world_size"] == n, f"PANAMA group under a Gloo world: stats {s['allreduces']}")
dist.destroy_process_group(pg)
t = torch.ones(4)
dist.all_reduce(t)  # the Gloo world goes on
c.check(t.tolist() == [float(n)] * 4, "the Gloo world after destroying the PANAMA group")
c.finish()
dist.destroy_process_group()
