"""The PSwitch stops mid-training (per rank, under panama-torchrun --retry-budget).

Rank 0 stops the PSwitch (by the pid panama-torchrun exports in
PANAMA_PSWITCH_PIDS) between two steps, while every rank waits at a barrier
(the barrier runs on Gloo, which does not need the PSwitch). The next
allreduce of every rank must fail: wait() raises a RuntimeError that says the
retry budget ran out, instead of hanging; a later allreduce fails too.

The PSwitch is frozen with SIGSTOP: it stops forwarding and its memif links
stay connected. With SIGKILL (PANAMA_TEST_PSWITCH_SIGNAL=KILL) the ranks see
the same errors, but DPDK's memif PMD can crash a rank inside tx_burst while
it handles the peer's disconnect (docs/pytorch.md, "Limits").
"""

import os
import signal

import torch
import torch.distributed as dist

import panama_torch  # noqa: F401  (registers the backend)
from torch_test_util import Checks

KILL_STEP = 3

dist.init_process_group("panama")
rank = dist.get_rank()
c = Checks("test_failure")
pids = dict(item.split("=") for item in os.environ["PANAMA_PSWITCH_PIDS"].split(","))
c.check(len(pids) == 1, f"expected one PSwitch, got {pids}")

failed_at = None
for step in range(KILL_STEP + 5):
    if step == KILL_STEP:
        dist.barrier()
        if rank == 0:
            sig = getattr(signal, "SIG" + os.environ.get("PANAMA_TEST_PSWITCH_SIGNAL", "STOP"))
            os.kill(int(next(iter(pids.values()))), sig)
            print(f"sent {sig.name} to PSwitch {pids} before step {step}", flush=True)
        dist.barrier()
    grad = torch.full((50000,), float(rank + 1))
    work = dist.all_reduce(grad, async_op=True)
    try:
        work.wait()
    except RuntimeError as e:
        failed_at = step
        print(f"step {step}: wait() raised: {e}", flush=True)
        c.check("retry" in str(e) and "budget" in str(e) and "panama" in str(e), f"unclear error message: {e}")
        break
    c.check(torch.equal(grad, torch.full((50000,), 10.0)), f"step {step}: wrong sum before the failure")
c.check(failed_at == KILL_STEP, f"the allreduce after the kill should fail, failed at {failed_at}")

# Later allreduces fail too (no hang, no stale result).
try:
    dist.all_reduce(torch.ones(1000))
    c.check(False, "an allreduce after the failure succeeded")
except RuntimeError as e:
    print(f"next allreduce raised: {e}", flush=True)
c.finish()
