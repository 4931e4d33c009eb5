"""A late rank (per rank, under panama-torchrun --retry-budget 2).

The issue's case is a rank 30 s late: with timeout=60 s the job must wait for
it, with timeout=10 s it must fail with a message naming the late rank. Here
the numbers are scaled down by 5 to keep CI short: rank 3 is LATE = 6 s late;
with --retry-budget 2 the runtime's own budget (2 timeouts and 2 x rto_max =
2 s of silence) and the backend's silence limit (3 s) are both far shorter
than that, so waiting is the backend's doing (it defers the runtime's
failure while the store shows a rank that has not issued the allreduce).

1. timeout = 2 x LATE: every rank's allreduce completes with the right sum;
   the waiting ranks' statistics name rank 3 as the rank they waited for.
2. destroy_process_group, init_process_group again with timeout = LATE / 3:
   ranks 0-2 fail within about the timeout with a RuntimeError that names
   rank 3 as not having contributed (and says the network is not at fault);
   rank 3, arriving after they gave up, fails too at its next allreduce,
   with a message saying which rank gave up. Nobody hangs.
3. After that failure the engines' slots no longer match any rank's
   sequences: init_process_group("panama") once more raises on every rank.

The outcomes are asserted, not the durations (the sleeps are the test's).
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

import panama_torch
from torch_test_util import Checks, Reinit

LATE = 6.0
LATE_RANK = 3

c = Checks("test_late")
reinit = Reinit("late")  # every init after a destroy

# -- 1. a late rank within the timeout: waited for
dist.init_process_group("panama", timeout=timedelta(seconds=2 * LATE))
rank, n = dist.get_rank(), dist.get_world_size()
dist.all_reduce(torch.ones(10))  # everyone is up
if rank == LATE_RANK:
    time.sleep(LATE)  # e.g. rank-0-only evaluation elsewhere, a checkpoint, a slow first batch
t = torch.full((50000,), float(rank + 1))
dist.all_reduce(t)
c.check(torch.equal(t, torch.full((50000,), n * (n + 1) / 2)), "allreduce with a late rank: wrong sum")
s = panama_torch.stats()
if rank != LATE_RANK:
    c.check(s["late_waits"] >= 1 and s["late_ranks"] in ([], [LATE_RANK]),
            f"rank {rank} did not wait for rank {LATE_RANK} as a late rank: {s['late_waits']} {s['late_ranks']}")
c.check(s["ops_failed"] == 0 and s["failure"] == "", f"failures: {s['failure']}")
if rank == 0:
    print(f"a rank {LATE} s late with timeout {2 * LATE} s: waited for, sums right; the runtime's retry budget "
          f"alone ends after about 2 s", flush=True)
dist.destroy_process_group()

# -- 2. the same with a timeout shorter than the delay: a clear failure on every rank
short = LATE / 3
reinit(timeout=timedelta(seconds=short))
gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=60))  # to line the ranks up at the end
dist.all_reduce(torch.ones(10))
if rank == LATE_RANK:
    time.sleep(LATE)
try:
    dist.all_reduce(torch.ones(1000))
    if rank == LATE_RANK:
        # Its contribution may complete the allreduce the others gave up on; the next one cannot.
        dist.all_reduce(torch.ones(1000))
    c.check(False, f"rank {rank}: allreduces succeeded although rank {LATE_RANK} was {LATE} s late "
            f"with timeout {short} s")
except RuntimeError as e:
    msg = str(e)
    print(f"rank {rank} raised: {msg}", flush=True)
    c.check(msg.startswith("panama:"), f"not a panama error: {msg}")
    if rank != LATE_RANK:
        c.check(f"rank {LATE_RANK} has not contributed" in msg, f"the message does not name rank {LATE_RANK}: {msg}")
        c.check("timeout" in msg and "not at fault" in msg, f"the message does not explain: {msg}")
    else:
        c.check("gave up" in msg, f"the late rank's message does not say the others gave up: {msg}")
# Later allreduces fail at once, with the same reason.
try:
    dist.all_reduce(torch.ones(10))
    c.check(False, "an allreduce after the failure succeeded")
except RuntimeError:
    pass
dist.barrier(group=gloo)  # the store (rank 0) stays up until every rank has its answer

# -- 3. the job's sequences are unknown after the failure: a new group is refused on every rank
del gloo
dist.destroy_process_group()
try:
    reinit(timeout=timedelta(seconds=30))
    c.check(False, "a PANAMA group was created again after the job failed")
except RuntimeError as e:
    c.check("cannot create a PANAMA process group" in str(e) and "did not end cleanly" in str(e),
            f"unclear refusal: {e}")
    if rank == 0:
        print(f"init after the failure raised: {str(e)[:200]}...", flush=True)
c.finish()
