"""PyTorch's own distributed tests on the `panama` backend, per rank
(panama-torchrun; docs/pytorch.md, "PyTorch's own tests").

Runs test cases of torch/testing/_internal/distributed/distributed_test.py
(shipped with Debian's python3-torch) inside the ranks of the virtual
cluster, on the `panama` default group. The suite's own harness spawns its
processes and rendezvouses through a file; here the ranks are
panama-torchrun's: each rank makes a TestCase of the suite's
DistributedTest._DistTestBase, and runs the listed cases in the same order,
with a barrier between cases. The suite's decorators read BACKEND; it is set
to "gloo" (the suite's CPU backend) so that they select the cases a CPU
backend with Gloo's collectives can run; the group they run on is PANAMA's
(its delegations are Gloo's). Debian has no `expecttest`, which torch's test
utilities import: upstream_stubs/expecttest.py stands in for it.

CASES below is what applies. Of the suite's 279 cases, 144 remain after
leaving out by name those for CUDA, NCCL, subgroups (the suite's "group"
cases make new_group([1, 2]) and its "full_group" ones a second group over
all ranks, both refused by a PANAMA world group: docs/pytorch.md,
"Subgroups"), AMP, profiling, timeouts, crashes and TorchScript. Of those
144, run on 4 ranks here: 55 pass (CASES), 86 are skipped by the suite's
own decorators (44 need 2 CUDA devices, 11 need 4, 19 need NCCL, 10 are
MPI- or NCCL-only, 2 need CUDA), and 3 fail because they make subgroups
(test_get_backend, test_all_gather_object_subgroup,
test_gather_object_subgroup). Every listed case must pass on every rank;
rank 0 prints a table.

  PANAMA_UPSTREAM_TESTS=name,name,...  run these instead (exploration)
"""

import os
import sys
import threading
import time
import traceback
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import expecttest  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "upstream_stubs"))

os.environ["BACKEND"] = "gloo"  # the suite's decorators: a CPU backend with Gloo's collectives
os.environ.setdefault("INIT_METHOD", "env://")
rank = int(os.environ["RANK"])
tmp = os.path.join(os.environ.get("PANAMA_RUN_DIR", "/tmp"), "upstream-tests")
os.environ["TEMP_DIR"] = tmp
if rank == 0:
    for d in ("barrier", "test_dir", "init_dir"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
else:
    deadline = time.monotonic() + 60
    while not os.path.isdir(os.path.join(tmp, "init_dir")) and time.monotonic() < deadline:
        time.sleep(0.05)

import torch.distributed as dist  # noqa: E402
from torch.testing._internal.common_distributed import TEST_SKIPS  # noqa: E402
from torch.testing._internal.common_utils import TestCase  # noqa: E402
from torch.testing._internal.distributed import distributed_test as suite  # noqa: E402

import panama_torch  # noqa: E402,F401

CASES = [
    "test_Backend_enum_class", "test_DistributedDataParallelCPU",
    "test_DistributedDataParallelCPU_grad_is_view", "test_DistributedDataParallel_requires_grad",
    "test_accumulate_gradients_no_sync", "test_accumulate_gradients_no_sync_allreduce_hook",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook",
    "test_accumulate_gradients_no_sync_grad_is_view", "test_all_gather", "test_all_gather_coalesced_complex",
    "test_all_gather_coalesced_simple", "test_all_gather_coalesced_with_empty", "test_all_gather_complex",
    "test_all_gather_object_default_pg", "test_all_reduce_coalesced_max",
    "test_all_reduce_coalesced_max_complex_unsupported", "test_all_reduce_coalesced_min",
    "test_all_reduce_coalesced_product", "test_all_reduce_coalesced_sum",
    "test_all_reduce_complex_unsupported_ops", "test_all_reduce_max", "test_all_reduce_min",
    "test_all_reduce_product", "test_all_reduce_sum", "test_all_reduce_sum_async",
    "test_all_reduce_sum_complex", "test_barrier", "test_batch_isend_irecv_gloo",
    "test_batch_isend_irecv_gloo_tags", "test_broadcast", "test_broadcast_object_list",
    "test_ddp_create_graph", "test_ddp_logging_data_cpu", "test_dump_DDP_relevant_env_vars", "test_gather",
    "test_gather_checks", "test_gather_object", "test_get_future", "test_get_rank", "test_irecv", "test_isend",
    "test_reduce_max", "test_reduce_min", "test_reduce_product", "test_reduce_sum", "test_reduce_sum_twice",
    "test_scatter", "test_scatter_checks", "test_scatter_complex", "test_scatter_object_list",
    "test_send_recv", "test_send_recv_any_source", "test_send_recv_with_tag", "test_sparse_all_reduce_sum",
    "test_static_graph_api_cpu",
]
names = [n for n in os.environ.get("PANAMA_UPSTREAM_TESTS", "").split(",") if n] or CASES


class Case(suite.DistributedTest._DistTestBase, TestCase):
    """One of the suite's cases, in this rank of the already initialised job."""

    rank = rank

    @property
    def world_size(self):
        return os.environ["WORLD_SIZE"]


dist.init_process_group("panama")
n = dist.get_world_size()
if rank == 0:
    suite.Barrier.init()
dist.barrier()

# A case that hangs must not hang CI: report it and stop this rank.
current = {"name": None, "since": time.monotonic()}


def watchdog():
    while True:
        time.sleep(5)
        if current["name"] and time.monotonic() - current["since"] > 120:
            print(f"upstream: {current['name']} has run for more than 120 s on rank {rank}; stopping", flush=True)
            os._exit(3)


threading.Thread(target=watchdog, daemon=True).start()

outcomes = {}
for name in names:
    if not hasattr(Case, name):
        outcomes[name] = "missing"
        continue
    dist.barrier()
    current.update(name=name, since=time.monotonic())
    result = unittest.TestResult()
    Case(name).run(result)
    current["name"] = None
    # The suite skips a case in a spawned process by exiting with a code of TEST_SKIPS.
    exits = [tb for _, tb in result.errors if "SystemExit: " in tb]
    codes = {int(tb.rsplit("SystemExit: ", 1)[1].split()[0]) for tb in exits}
    skip_codes = {s.exit_code: s.message for s in TEST_SKIPS.values()}
    if exits and len(exits) == len(result.errors) and not result.failures and codes <= set(skip_codes):
        outcomes[name] = "skipped: " + skip_codes[min(codes)]
    elif result.errors or result.failures:
        outcomes[name] = "FAILED"
        for _, tb in result.errors + result.failures:
            print(f"upstream: {name} failed on rank {rank}:\n{tb}", flush=True)
    elif result.skipped:
        outcomes[name] = "skipped: " + result.skipped[0][1].splitlines()[0][:80]
    else:
        outcomes[name] = "passed"

everyone = [None] * n
dist.all_gather_object(everyone, outcomes)
failed = 0
if rank == 0:
    counts = {}
    for name in names:
        per_rank = [o.get(name, "?") for o in everyone]
        kinds = {p.split(":")[0] for p in per_rank}
        status = per_rank[0] if len(kinds) == 1 else "differs: " + ", ".join(per_rank)
        kind = status.split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
        print(f"upstream: {name:60s} {status}", flush=True)
    print(f"upstream: {len(names)} cases of distributed_test.py on the panama group, {n} ranks: "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())), flush=True)
failed = sum(1 for o in everyone for v in o.values() if v in ("FAILED", "missing"))
dist.barrier()
dist.destroy_process_group()
sys.exit(1 if failed else 0)
