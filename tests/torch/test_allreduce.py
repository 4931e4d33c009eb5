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
- bfloat16 and float16, SUM and AVG, natively through PANAMA: every element
  is what the engine may emit by docs/protocol.md §7 (contributions widened
  to fp32, added in fp32 in some arrival order, rounded once), computed here
  for every order; exact-summing 16-bit data exact; AVG is the SUM divided by
  the world size in the type;
- statistics: bytes per tree add up to what was reduced (2 bytes per 16-bit
  element).

With PANAMA_STAGE_CPU=1 (CTest torch_allreduce_staged) the same checks run
through the staged pipeline CUDA tensors take (chunks copied into a pool of
host buffers, reduced there, copied back), and the pool's statistics are
checked: chunks as planned, never more buffers than allowed.
"""

import os
import warnings

import torch
import torch.distributed as dist

import panama_torch
from torch_test_util import (Checks, engine_candidates, exact_summing, gamma, gather_all, matches_some_order,
                             same_bits_on_all_ranks, test_seed)

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
elems_checked = 0  # fp32 elements reduced through PANAMA
bytes_checked = 0  # payload bytes reduced through PANAMA, all types
chunks_expected = 0  # staged chunks (PANAMA_STAGE_CPU=1)
staged = os.environ.get("PANAMA_STAGE_CPU") == "1"
chunk_bytes = int(os.environ.get("PANAMA_STAGE_CHUNK_BYTES", str(4 << 20)), 0)
EPP = 256  # elems_per_packet of the CTest cluster (--elems-per-packet 256)


def account(t: torch.Tensor) -> None:
    """Counts an allreduce of `t` made through PANAMA."""
    global elems_checked, bytes_checked, chunks_expected
    if t.dtype == torch.float32:
        elems_checked += t.numel()
    bytes_checked += t.numel() * t.element_size()
    if staged and t.numel() > 0:
        per = chunk_bytes // t.element_size()
        if per >= EPP:
            per -= per % EPP
        chunks_expected += -(-t.numel() // per)


for tag, size in enumerate([1, 255, 256 * 5 + 17, 100003]):
    g = gen(tag)
    # Magnitudes spread over 2^-10..2^10 so that cancellation and rounding matter.
    x = (torch.randn(size, generator=g, dtype=torch.float64) *
         torch.pow(2.0, torch.randint(-10, 11, (size,), generator=g).double())).float()
    a = x.clone()
    dist.all_reduce(a)
    account(a)
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
    if size <= 256 * 5 + 17:  # the exact contract, for every order of arrival
        c.check(matches_some_order(a, engine_candidates(gather_all(x, gloo), torch.float32)),
                f"size {size}: an element is no fp32 sum of the contributions in any order")

# -- exact-summing data: bit-exact against Gloo and the float64 sum
for tag, size in enumerate([3, 1024, 70001], start=10):
    x = exact_summing(size, gen(tag))
    a = x.clone()
    dist.all_reduce(a, op=dist.ReduceOp.SUM)
    account(a)
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
for o in outs:
    account(o)
for s, x, o, w in zip(sizes, inputs, outs, works):
    c.check(w.is_completed(), f"in flight {s}: work not completed after wait()")
    c.check(torch.equal(o.double(), reference_sum(x)), f"in flight {s}: not the exact sum")

# -- AVG = SUM / world size (a power of two here, so exact for exact-summing data)
x = exact_summing(3000, gen(200))
a = x.clone()
dist.all_reduce(a, op=dist.ReduceOp.AVG)
account(a)
c.check(torch.equal(a.double(), reference_sum(x) / n), "AVG is not the exact sum divided by the world size")

# -- non-contiguous float32: through PANAMA on a contiguous copy, written back
base = exact_summing(64 * 48, gen(300)).reshape(64, 48)
before = panama_torch.stats()
view = base.clone().t()[:, ::3]  # strided
expected = reference_sum(view.contiguous())
dist.all_reduce(view)
account(view)
after = panama_torch.stats()
c.check(not view.is_contiguous(), "the test tensor should be non-contiguous")
c.check(torch.equal(view.double(), expected), "non-contiguous allreduce: wrong result")
c.check(after["noncontiguous_copies"] == before["noncontiguous_copies"] + 1, "non-contiguous copy not counted")
c.check(after["delegated_total"] == before["delegated_total"], "non-contiguous float32 was delegated")

# -- bfloat16 and float16 natively through PANAMA, SUM and AVG
before16 = panama_torch.stats()
for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
    for tag, size in enumerate([1, 255, 4099], start=400):
        g = gen(tag)
        # Normal numbers of mixed sign and magnitude (2^-6..2^6): the sums need rounding.
        x = (torch.randn(size, generator=g, dtype=torch.float64) *
             torch.pow(2.0, torch.randint(-6, 7, (size,), generator=g).double())).to(dtype)
        parts = gather_all(x, gloo)
        cands = engine_candidates(parts, dtype)
        a = x.clone()
        dist.all_reduce(a)
        account(a)
        c.check(a.dtype == dtype, f"{name}: the result changed type to {a.dtype}")
        c.check(matches_some_order(a, cands), f"{name} size {size}: SUM is not the engine's fp32 sum in any order, "
                f"rounded once to {name}")
        c.check(same_bits_on_all_ranks(a, gloo), f"{name} size {size}: ranks differ")
        m = x.clone()
        dist.all_reduce(m, op=dist.ReduceOp.AVG)
        account(m)
        c.check(matches_some_order(m, cands / n), f"{name} size {size}: AVG is not such a sum divided by {n}")
    # Exact-summing 16-bit data (small integers times small powers of two): exact in any order.
    e = exact_summing(3001, gen(450)).clamp(-64, 64).round().to(dtype)
    a = e.clone()
    dist.all_reduce(a, async_op=True).wait()
    account(a)
    exact = reference_sum(e.double())
    c.check(torch.equal(a.double(), exact), f"{name}: exact-summing data not exact")
    a = e.clone()
    dist.all_reduce(a, op=dist.ReduceOp.AVG)
    account(a)
    c.check(torch.equal(a.double(), (exact / n).to(dtype).double()), f"{name}: AVG of exact data wrong")
    # Non-contiguous 16-bit.
    base16 = exact_summing(40 * 30, gen(460)).clamp(-64, 64).round().to(dtype).reshape(40, 30)
    v = base16.clone().t()[:, ::2]
    exp = reference_sum(v.contiguous().double())
    dist.all_reduce(v)
    account(v)
    c.check(torch.equal(v.double(), exp), f"{name}: non-contiguous allreduce wrong")
after16 = panama_torch.stats()
c.check(after16["delegated_total"] == before16["delegated_total"], "a 16-bit SUM/AVG allreduce was delegated")
for name in ("bf16", "fp16"):
    grown = after16["allreduces_by_dtype"].get(name, 0) - before16["allreduces_by_dtype"].get(name, 0)
    c.check(grown == 3 * 2 + 3, f"{name}: {grown} allreduces through PANAMA, expected 9")

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

# -- CUDA tensors: through PANAMA, staged, where torch has CUDA; their pipeline runs here with
#    PANAMA_STAGE_CPU=1 on CPU tensors (torch_allreduce_staged).
if rank == 0 and not torch.cuda.is_available():
    print(f"CUDA not available in this torch build (panama_torch.CUDA={panama_torch.CUDA}): CUDA tensors are not "
          f"exercised here", flush=True)

# -- statistics: every element reduced through PANAMA is accounted for, per tree
s = panama_torch.stats()
c.check(s["bytes_completed"] == bytes_checked,
        f"bytes_completed {s['bytes_completed']} != {bytes_checked} payload bytes reduced through PANAMA "
        f"({elems_checked} of them fp32 elements)")
if staged:
    st = s["staging_cpu"]
    c.check(s["staged_ops"] == s["allreduces"], f"staged {s['staged_ops']} of {s['allreduces']} allreduces")
    c.check(s["staged_chunks"] == chunks_expected, f"{s['staged_chunks']} chunks, expected {chunks_expected}")
    c.check(st["chunk_bytes"] == chunk_bytes and 1 <= st["allocated"] <= st["max_buffers"],
            f"staging pool: {st}")
    c.check(st["max_in_use"] <= st["max_buffers"] and st["in_use"] == 0, f"staging pool: {st}")
    c.check(st["acquired"] == chunks_expected, f"staging pool handed out {st['acquired']} buffers")
    if rank == 0:
        print(f"staged pipeline: {s['staged_chunks']} chunks of {chunk_bytes} bytes, pool {st}", flush=True)
else:
    c.check(s["staged_ops"] == 0, "CPU tensors were staged without PANAMA_STAGE_CPU")
c.check(sum(t["bytes_completed"] for t in s["trees"]) == s["bytes_completed"], "per-tree bytes do not add up")
c.check(len(s["trees"]) == 2, f"expected 2 trees, stats show {len(s['trees'])}")
c.check(all(t["bytes_completed"] > 0 and 1 <= t["cwnd"] <= t["cwnd_cap"] for t in s["trees"]),
        "a tree carried nothing or its cwnd is outside [1, cwnd_cap]")
c.check(s["ops_failed"] == 0 and s["rank"] == rank and s["world_size"] == n, "stats identity or failures wrong")
for key in ("retransmissions", "results_ce", "timeouts"):
    c.check(isinstance(s[key], int) and s[key] >= 0, f"stats[{key!r}] missing")

c.finish()
dist.destroy_process_group()
