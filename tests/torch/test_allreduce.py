"""Allreduce through the `panama` backend, per rank (started by panama-torchrun).

Checks against independently computed expectations:
- random float32 tensors: the PANAMA result is within the float-reordering
  bound of the exact sum (and so of Gloo's result), computed here from
  sum(|x_i|); every rank receives the same bits;
- exact-summing data: bit-exact against Gloo and the float64 sum;
- several allreduces in flight, waited for in reverse order; AVG;
- delegated collectives (broadcast, barrier, allgather, int64 and float64
  allreduce, MAX) give Gloo's results, are counted, and warn once per kind;
- non-contiguous float32 goes through PANAMA on a contiguous copy;
- statistics: bytes per tree add up to what was reduced.
"""

import warnings

import torch
import torch.distributed as dist

import panama_torch
from torch_test_util import Checks, exact_summing, gamma, same_bits_on_all_ranks, test_seed

seed = test_seed()
dist.init_process_group("panama")
rank, n = dist.get_rank(), dist.get_world_size()
if rank == 0:
    print(f"seed {seed} (override with PANAMA_TEST_SEED)", flush=True)
gloo = dist.new_group(backend="gloo")  # the reference
c = Checks("test_allreduce")


def gen(tag: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1000003 + tag * 101 + rank)


def reference_sum(x: torch.Tensor) -> torch.Tensor:
    r = x.double().clone()
    dist.all_reduce(r, group=gloo)
    return r


# -- delegated collectives warn once per kind (first thing: nothing delegated yet)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(2):
        b = torch.tensor([float(rank + 7)])
        dist.broadcast(b, src=0)
        c.check(b.item() == 7.0, f"broadcast from rank 0 gave {b.item()}")
mentions = [w for w in caught if "broadcast" in str(w.message) and "Gloo" in str(w.message)]
c.check(len(mentions) == 1, f"one warning for two delegated broadcasts, got {len(mentions)}")

# -- random float32: within the reordering bound of the exact sum and of Gloo
elems_checked = 0
for tag, size in enumerate([1, 255, 256 * 5 + 17, 100003]):
    g = gen(tag)
    # Magnitudes spread over 2^-10..2^10 so that cancellation and rounding matter.
    x = (torch.randn(size, generator=g, dtype=torch.float64) *
         torch.pow(2.0, torch.randint(-10, 11, (size,), generator=g).double())).float()
    a = x.clone()
    dist.all_reduce(a)
    elems_checked += size
    b = x.clone()
    dist.all_reduce(b, group=gloo)
    exact = reference_sum(x)  # float64 sum of n floats: its own error is below 2^-50 relative
    abs_sum = reference_sum(x.abs())
    bound = gamma(n - 1) * abs_sum + 2.0 ** -50 * abs_sum
    err = (a.double() - exact).abs()
    c.check(bool((err <= bound).all()), f"size {size}: PANAMA result off the exact sum by more than "
            f"gamma_(n-1)·sum|x| (worst excess {float((err - bound).max())})")
    c.check(bool(((a.double() - b.double()).abs() <= 2 * bound).all()),
            f"size {size}: PANAMA and Gloo differ by more than two reordering bounds")
    c.check(same_bits_on_all_ranks(a, gloo), f"size {size}: ranks received different bits")

# -- exact-summing data: bit-exact against Gloo and the float64 sum
for tag, size in enumerate([3, 1024, 70001], start=10):
    x = exact_summing(size, gen(tag))
    a = x.clone()
    dist.all_reduce(a, op=dist.ReduceOp.SUM)
    elems_checked += size
    b = x.clone()
    dist.all_reduce(b, group=gloo)
    c.check(torch.equal(a.view(torch.int32), b.view(torch.int32)), f"size {size}: not bit-exact against Gloo")
    c.check(torch.equal(a.double(), reference_sum(x)), f"size {size}: not the exact sum")
    c.check(same_bits_on_all_ranks(a, gloo), f"size {size}: ranks received different bits")

# -- several in flight, waited for in reverse order
sizes = [5000, 1, 33333, 4096, 777, 20000]
inputs = [exact_summing(s, gen(100 + i)) for i, s in enumerate(sizes)]
outs = [x.clone() for x in inputs]
works = [dist.all_reduce(o, async_op=True) for o in outs]
for w in reversed(works):
    w.wait()
elems_checked += sum(sizes)
for s, x, o, w in zip(sizes, inputs, outs, works):
    c.check(w.is_completed(), f"in flight {s}: work not completed after wait()")
    c.check(torch.equal(o.double(), reference_sum(x)), f"in flight {s}: not the exact sum")

# -- AVG = SUM / world size (a power of two here, so exact for exact-summing data)
x = exact_summing(3000, gen(200))
a = x.clone()
dist.all_reduce(a, op=dist.ReduceOp.AVG)
elems_checked += 3000
c.check(torch.equal(a.double(), reference_sum(x) / n), "AVG is not the exact sum divided by the world size")

# -- non-contiguous float32: through PANAMA on a contiguous copy, written back
base = exact_summing(64 * 48, gen(300)).reshape(64, 48)
before = panama_torch.stats()
view = base.clone().t()[:, ::3]  # strided
expected = reference_sum(view.contiguous())
dist.all_reduce(view)
elems_checked += view.numel()
after = panama_torch.stats()
c.check(not view.is_contiguous(), "the test tensor should be non-contiguous")
c.check(torch.equal(view.double(), expected), "non-contiguous allreduce: wrong result")
c.check(after["noncontiguous_copies"] == before["noncontiguous_copies"] + 1, "non-contiguous copy not counted")
c.check(after["delegated_total"] == before["delegated_total"], "non-contiguous float32 was delegated")

# -- zero elements: completes, nothing sent
z = torch.empty(0)
dist.all_reduce(z)
c.check(z.numel() == 0, "zero-element allreduce changed the tensor")

# -- delegated: other dtypes and ops give Gloo's results and are counted
before = panama_torch.stats()["delegated"]
i64 = torch.arange(10, dtype=torch.int64) * (rank + 1)
dist.all_reduce(i64)
c.check(torch.equal(i64, torch.arange(10, dtype=torch.int64) * (n * (n + 1) // 2)), "int64 allreduce wrong")
f64 = torch.full((5,), 0.1 * (rank + 1), dtype=torch.float64)
f64_ref = f64.clone()
dist.all_reduce(f64)
dist.all_reduce(f64_ref, group=gloo)
c.check(torch.equal(f64, f64_ref), "float64 allreduce differs from Gloo's")
mx = torch.tensor([float(rank), -float(rank)])
dist.all_reduce(mx, op=dist.ReduceOp.MAX)
c.check(mx.tolist() == [float(n - 1), 0.0], f"MAX allreduce gave {mx.tolist()}")
gathered = [torch.zeros(2) for _ in range(n)]
dist.all_gather(gathered, torch.tensor([float(rank), 1.0]))
c.check([g[0].item() for g in gathered] == [float(r) for r in range(n)], "allgather wrong")
dist.barrier()
d = panama_torch.stats()["delegated"]


def grew(key: str) -> int:
    return d.get(key, 0) - before.get(key, 0)


c.check(grew("allreduce (dtype Long)") == 1, f"int64 allreduce counted {grew('allreduce (dtype Long)')} times")
c.check(grew("allreduce (dtype Double)") == 1, "float64 allreduce not counted once")
c.check(grew("allreduce (op MAX)") == 1, "MAX allreduce not counted once")
c.check(grew("allgather") == 1, "allgather not counted once")
c.check(grew("barrier") == 1, "barrier not counted once")
c.check(d.get("broadcast", 0) == 2, "broadcasts not counted")

# -- CUDA tensors: this build of torch has no CUDA; documented as delegated to Gloo.
if rank == 0 and not torch.cuda.is_available():
    print("CUDA not available in this torch build: the CUDA case is not exercised here", flush=True)

# -- statistics: every element reduced through PANAMA is accounted for, per tree
s = panama_torch.stats()
c.check(s["bytes_completed"] == 4 * elems_checked,
        f"bytes_completed {s['bytes_completed']} != 4 x {elems_checked} elements reduced through PANAMA")
c.check(sum(t["bytes_completed"] for t in s["trees"]) == s["bytes_completed"], "per-tree bytes do not add up")
c.check(len(s["trees"]) == 2, f"expected 2 trees, stats show {len(s['trees'])}")
c.check(all(t["bytes_completed"] > 0 and 1 <= t["cwnd"] <= t["cwnd_cap"] for t in s["trees"]),
        "a tree carried nothing or its cwnd is outside [1, cwnd_cap]")
c.check(s["ops_failed"] == 0 and s["rank"] == rank and s["world_size"] == n, "stats identity or failures wrong")
for key in ("retransmissions", "results_ce", "timeouts"):
    c.check(isinstance(s[key], int) and s[key] >= 0, f"stats[{key!r}] missing")

c.finish()
dist.destroy_process_group()
