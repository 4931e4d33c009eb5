"""Allreduce latency and goodput through the `panama` torch.distributed
backend, next to the same allreduce made straight through the C++
Communicator, per rank under panama-torchrun (scripts/bench-torch.sh).

For every size: one warm-up allreduce, then --iterations timed ones of each
kind, alternating: "backend" is dist.all_reduce(async_op=True).wait() (Python
call, c10d dispatch, Work, the completion thread, the future); "direct" is
the C++ Communicator::allreduce on the same tensor, same communicator, same
cluster (the process group's _allreduce_direct, GIL released). Before each,
a barrier (on Gloo) lines the ranks up; the time of an iteration is the
slowest rank's. Rank 0 prints one JSON object per size and kind: median and
best seconds and goodput (tensor bytes x 8 / median time).
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist

import panama_torch  # noqa: F401  (registers the backend)

parser = argparse.ArgumentParser()
parser.add_argument("--sizes", default="4KiB,64KiB,1MiB,16MiB,64MiB,256MiB")
parser.add_argument("--iterations", type=int, default=5, help="timed allreduces per size (fewer above 64 MiB)")
parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"], help="the tensors' type")
args = parser.parse_args()

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "B": 1}


def parse_size(text: str) -> int:
    for unit, mult in UNITS.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * mult)
    return int(text)


dist.init_process_group("panama")
rank = dist.get_rank()
gloo = dist.new_group(backend="gloo")
pg = dist.distributed_c10d._get_default_group()


def backend_allreduce(t):
    dist.all_reduce(t, async_op=True).wait()


def direct_allreduce(t):
    pg._allreduce_direct(t)


for text in args.sizes.split(","):
    size = parse_size(text)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    t = torch.ones(size * 8 // torch.finfo(dtype).bits, dtype=dtype)
    iterations = args.iterations if size <= 64 << 20 else max(2, args.iterations // 2)
    dist.all_reduce(t)  # warm-up
    times = {"backend": [], "direct": []}
    for _ in range(iterations):
        for kind, fn in (("backend", backend_allreduce), ("direct", direct_allreduce)):
            dist.barrier(group=gloo)
            t0 = time.perf_counter()
            fn(t)
            dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(dt, op=dist.ReduceOp.MAX, group=gloo)
            times[kind].append(dt.item())
    if rank == 0:
        for kind, ts in times.items():
            med = statistics.median(ts)
            print("BENCH " + json.dumps({"kind": kind, "dtype": args.dtype, "bytes": size, "iterations": iterations, "median_s": med,
                                         "best_s": min(ts), "gbps": size * 8 / med / 1e9}), flush=True)
    del t
dist.destroy_process_group()
