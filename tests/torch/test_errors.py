"""Set-up errors of the `panama` backend: one process, no cluster.

Each wrong set-up must give a clear exception naming the problem, and
init_process_group must be usable again afterwards (nothing half-made):
missing plan, plan file absent, malformed plan, rank/size that disagree
with the plan, wrong pg_options type, and a DPDK port whose link never
comes up (a memif server nobody connects to).
"""

import json
import os
import shutil
import sys
import tempfile

import torch.distributed as dist

import panama_torch

failures = []


def expect_error(what, exc_type, needle, fn):
    try:
        fn()
    except exc_type as e:
        if needle not in str(e):
            failures.append(f"{what}: message lacks {needle!r}: {e}")
        else:
            print(f"ok: {what}: {type(e).__name__}: {e}", flush=True)
        return
    except Exception as e:  # noqa: BLE001 - report the wrong type
        failures.append(f"{what}: expected {exc_type.__name__}, got {type(e).__name__}: {e}")
        return
    failures.append(f"{what}: no error")


def init(world_size=1, rank=0, **kw):
    dist.init_process_group("panama", store=dist.HashStore(), rank=rank, world_size=world_size, **kw)


tmp = tempfile.mkdtemp(prefix="panama-torch-errors-")
prefix = f"panama-test-{os.getpid()}"
for key in ("PANAMA_PLAN", "PANAMA_EAL_ARGS", "PANAMA_VDEV", "PANAMA_DEVICE"):
    os.environ.pop(key, None)

plan = {
    "job_id": 1, "rank": 0, "world_size": 2, "device": "net_memif0",
    "local_mac": "02:00:00:00:01:00", "local_ip": "10.0.1.1", "elems_per_packet": 256,
    "trees": [{"tree_id": 0, "child_id": 0, "dst_mac": "02:00:00:00:00:fe", "dst_ip": "10.0.0.254"}],
}
plan_of_two = os.path.join(tmp, "rank0-of-2.plan.json")
with open(plan_of_two, "w") as f:
    json.dump(plan, f)
plan_of_one = os.path.join(tmp, "rank0-of-1.plan.json")
with open(plan_of_one, "w") as f:
    json.dump(dict(plan, world_size=1), f)
bad_plan = os.path.join(tmp, "bad.plan.json")
with open(bad_plan, "w") as f:
    json.dump(dict(plan, trees=[]), f)

try:
    expect_error("no plan", ValueError, "PANAMA_PLAN", init)
    os.environ["PANAMA_PLAN"] = os.path.join(tmp, "missing.json")
    expect_error("plan file absent", ValueError, "does not exist", init)
    os.environ["PANAMA_PLAN"] = plan_of_two
    expect_error("no port", ValueError, "PANAMA_VDEV", init)
    # A memif server that no client ever connects to: the port starts, its link stays down.
    os.environ["PANAMA_VDEV"] = f"net_memif0,role=server,id=0,socket=/{prefix}.sock"
    os.environ["PANAMA_DPDK_PREFIX"] = prefix
    os.environ["PANAMA_LINK_WAIT_MS"] = "300"
    os.environ["PANAMA_PLAN"] = bad_plan
    expect_error("malformed plan", ValueError, "trees", init)
    os.environ["PANAMA_PLAN"] = plan_of_two
    expect_error("world size disagrees with the plan", ValueError, "rank 0 of 2", init)
    expect_error("rank disagrees with the plan", ValueError, "rank 0 of 2", lambda: init(world_size=2, rank=1))
    expect_error("pg_options of another type", TypeError, "panama_torch.Options",
                 lambda: init(pg_options=object()))
    os.environ["PANAMA_LINK_WAIT_MS"] = "soon"
    expect_error("bad PANAMA_LINK_WAIT_MS", ValueError, "PANAMA_LINK_WAIT_MS", init)
    os.environ["PANAMA_LINK_WAIT_MS"] = "300"
    os.environ["PANAMA_PLAN"] = plan_of_one
    expect_error("port not up", RuntimeError, "is not up", init)
    if dist.is_initialized():
        failures.append("a failed init left a default process group behind")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)

if failures:
    for f in failures:
        print(f"FAILED: {f}", flush=True)
    sys.exit(1)
print("test_errors: all checks passed", flush=True)
