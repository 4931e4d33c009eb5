"""Helpers of the torch backend tests (run per rank by panama-torchrun)."""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

# Unit roundoff of binary32.
U32 = 2.0 ** -24


def test_seed() -> int:
    """The test's seed: PANAMA_TEST_SEED if set, else a fixed default (printed by rank 0)."""
    return int(os.environ.get("PANAMA_TEST_SEED", "20240611"), 0)


def gamma(k: int) -> float:
    """Higham's gamma_k = k·u / (1 - k·u): any order of summing k+1 floats is
    within gamma_k · sum(|x_i|) of the exact sum."""
    return k * U32 / (1 - k * U32)


def exact_summing(n: int, generator: torch.Generator) -> torch.Tensor:
    """Elements m · 2^e with |m| <= 2048, e in [-3, 3]: every partial sum of up
    to 128 of them is exactly representable in binary32, so every summation
    order gives the same bits."""
    m = torch.randint(-2048, 2049, (n,), generator=generator, dtype=torch.int64)
    e = torch.randint(-3, 4, (n,), generator=generator, dtype=torch.int64)
    return (m.double() * torch.pow(2.0, e.double())).float()


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bits as integers Gloo can gather (int32 for 4-byte
    elements; 16-bit elements as uint8 pairs)."""
    t = t.contiguous()
    if t.element_size() == 2:
        return t.view(torch.float16).reshape(-1).view(torch.uint8) if t.numel() else t.view(torch.uint8)
    return t.view(torch.int32)


def same_bits_on_all_ranks(t: torch.Tensor, group) -> bool:
    """Gathers every rank's tensor (over `group`) and compares all bits."""
    b = bits(t)
    gathered = [torch.empty_like(b) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, b, group=group)
    return all(torch.equal(g, gathered[0]) for g in gathered)


class Checks:
    """Collects failed checks; finish() prints them and exits non-zero."""

    def __init__(self, name: str):
        self.name = name
        self.failures = []
        self.count = 0

    def check(self, ok: bool, what: str) -> None:
        self.count += 1
        if not ok:
            self.failures.append(what)
            print(f"FAILED: {what}", flush=True)

    def finish(self) -> None:
        rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "-1"))
        if self.failures:
            print(f"{self.name}: rank {rank}: {len(self.failures)} of {self.count} checks failed", flush=True)
            sys.exit(1)
        print(f"{self.name}: rank {rank}: all {self.count} checks passed", flush=True)


def gather_all(x: torch.Tensor, group) -> list:
    """Every rank's copy of `x` over `group` (a plain Gloo group: Gloo of torch
    1.13 has no bfloat16 or int16, so 16-bit data travels as float16 bits)."""
    raw = x.contiguous().view(torch.float16) if x.dtype in (torch.bfloat16, torch.float16) else x.contiguous()
    out = [torch.empty_like(raw) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, raw, group=group)
    return [o.view(x.dtype) for o in out]


def engine_candidates(parts: list, dtype: torch.dtype) -> torch.Tensor:
    """What one engine may emit for the contributions `parts` (one tensor per
    rank, all of `dtype`), per docs/protocol.md §7: every contribution widened
    to fp32 exactly, added in fp32 in arrival order (any order), the sum
    rounded once to `dtype`. Returns a (orders, n) tensor of `dtype` with one
    row per order of arrival; a correct result matches some row in every
    element (the order can differ between packets)."""
    import itertools
    wide = [p.float() for p in parts]
    rows = []
    for order in itertools.permutations(range(len(parts))):
        acc = wide[order[0]].clone()
        for i in order[1:]:
            acc = acc + wide[i]  # fp32 additions, round to nearest even, as the engines add
        rows.append(acc.to(dtype))
    return torch.stack(rows)


def matches_some_order(result: torch.Tensor, candidates: torch.Tensor) -> bool:
    """Whether every element of `result` equals (bit for bit) that element of some candidate row."""
    bits_dtype = torch.int16 if result.dtype in (torch.bfloat16, torch.float16) else torch.int32
    r = result.contiguous().view(bits_dtype)
    c = candidates.contiguous().view(bits_dtype)
    return bool((c == r.unsqueeze(0)).any(dim=0).all())


class Reinit:
    """init_process_group again after a destroy, safely under env://.

    Rank 0 hosts the rendezvous store on the same port every time. A rank that
    reconnected while rank 0 was still closing its old store would get
    "Connection reset by peer" (or read stale keys), so the other ranks wait,
    on a store of their own in the run's folder, until rank 0's
    destroy_process_group() has returned."""

    def __init__(self, name: str):
        self.rank = int(os.environ["RANK"])
        self.side = dist.FileStore(os.path.join(os.environ["PANAMA_RUN_DIR"], f"{name}.store"),
                                   int(os.environ["WORLD_SIZE"]))
        self.count = 0

    def __call__(self, backend: str = "panama", **kwargs) -> None:
        self.count += 1
        if self.rank == 0:
            self.side.set(f"destroyed/{self.count}", "1")
        else:
            self.side.wait([f"destroyed/{self.count}"], timedelta(seconds=120))
        dist.init_process_group(backend, **kwargs)
