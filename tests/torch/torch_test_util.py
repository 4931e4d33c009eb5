"""Helpers of the torch backend tests (run per rank by panama-torchrun)."""

import os
import sys

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
    return t.contiguous().view(torch.int32)


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
        rank = dist.get_rank() if dist.is_initialized() else -1
        if self.failures:
            print(f"{self.name}: rank {rank}: {len(self.failures)} of {self.count} checks failed", flush=True)
            sys.exit(1)
        print(f"{self.name}: rank {rank}: all {self.count} checks passed", flush=True)
