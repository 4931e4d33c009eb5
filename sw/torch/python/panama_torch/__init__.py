"""PANAMA's torch.distributed backend (docs/pytorch.md).

Importing this package registers the backend ``"panama"``::

    import panama_torch, torch.distributed as dist
    dist.init_process_group("panama")          # env:// rendezvous, as with Gloo
    model = torch.nn.parallel.DistributedDataParallel(model)
    ...
    print(panama_torch.stats())

float32 CPU allreduce with SUM or AVG runs through a PANAMA communicator
(in-network aggregation); every other collective, dtype and reduction runs
on a Gloo process group created internally from the same store, with a
one-time warning per kind and a count in ``stats()["delegated"]``.

Where a rank finds its part of the job (``panama-torchrun`` sets all of
these; an ``Options`` passed as ``pg_options`` overrides them):

PANAMA_PLAN          the worker's job plan (JSON, written by panama-controller)
PANAMA_EAL_ARGS      DPDK EAL arguments, whitespace-separated; or instead
PANAMA_VDEV          the DPDK virtual device of this rank (e.g. a net_memif client),
                     with PANAMA_DPDK_PREFIX (--file-prefix, default panama-torch-<pid>)
                     and PANAMA_DPDK_MEMORY_MB (default 512)
PANAMA_DEVICE        the DPDK port name (default: the plan's "device")
PANAMA_LINK_WAIT_MS  how long to wait for the port's link (default 10000)
"""

import os
import shlex
from dataclasses import dataclass
from datetime import timedelta
from typing import List, Optional

import torch.distributed as dist
from torch.distributed import PrefixStore, ProcessGroupGloo

from ._panama_torch import ProcessGroupPanama, check_plan

__all__ = ["Options", "ProcessGroupPanama", "stats", "resolve_options"]

BACKEND = "panama"


@dataclass
class Options:
    """Backend options; ``None`` fields come from the environment."""

    plan: Optional[str] = None
    eal_args: Optional[List[str]] = None
    vdev: Optional[str] = None
    dpdk_prefix: Optional[str] = None
    dpdk_memory_mb: Optional[int] = None
    device: Optional[str] = None
    link_wait_ms: Optional[int] = None


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"panama: {name}={text!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"panama: {name}={text!r} must not be negative")
    return value


def resolve_options(options: Optional[Options] = None) -> Options:
    """Fills every field from ``options`` or the environment; raises ValueError
    naming what is missing or wrong."""
    o = options or Options()
    plan = o.plan or os.environ.get("PANAMA_PLAN")
    if not plan:
        raise ValueError(
            "panama: no job plan: set PANAMA_PLAN to this rank's plan file "
            "(panama-controller writes them; panama-torchrun sets it) or pass "
            "panama_torch.Options(plan=...) as pg_options")
    if not os.path.isfile(plan):
        raise ValueError(f"panama: the job plan {plan!r} does not exist")
    eal_args = o.eal_args
    if eal_args is None and os.environ.get("PANAMA_EAL_ARGS"):
        eal_args = shlex.split(os.environ["PANAMA_EAL_ARGS"])
    if eal_args is None:
        vdev = o.vdev or os.environ.get("PANAMA_VDEV")
        if not vdev:
            raise ValueError(
                "panama: no DPDK port: set PANAMA_EAL_ARGS (EAL arguments) or PANAMA_VDEV "
                "(a virtual device such as net_memif0,role=client,socket=...)")
        prefix = o.dpdk_prefix or os.environ.get("PANAMA_DPDK_PREFIX") or f"panama-torch-{os.getpid()}"
        memory = o.dpdk_memory_mb if o.dpdk_memory_mb is not None else _env_int("PANAMA_DPDK_MEMORY_MB", 512)
        eal_args = ["--no-huge", "-m", str(memory), "--no-pci", "--no-telemetry", "--log-level=*:error",
                    f"--file-prefix={prefix}", f"--vdev={vdev}"]
    device = o.device if o.device is not None else os.environ.get("PANAMA_DEVICE", "")
    link_wait_ms = o.link_wait_ms if o.link_wait_ms is not None else _env_int("PANAMA_LINK_WAIT_MS", 10000)
    return Options(plan=plan, eal_args=list(eal_args), device=device, link_wait_ms=link_wait_ms)


# Strong references: C++ (DDP's reducer) may hold a group whose Python
# wrapper is gone, and every group's threads must be stopped at exit, before
# the interpreter and the libraries' static objects are torn down.
_groups: "list[ProcessGroupPanama]" = []


def _create(backend_opts, pg_options):
    if pg_options is not None and not isinstance(pg_options, Options):
        raise TypeError(f"panama: pg_options must be panama_torch.Options, not {type(pg_options).__name__}")
    o = resolve_options(pg_options)
    rank, size = backend_opts.group_rank, backend_opts.group_size
    check_plan(o.plan, rank, size)  # before Gloo, which would wait for ranks that may not exist
    timeout = backend_opts.timeout
    if not isinstance(timeout, timedelta):
        timeout = timedelta(seconds=float(timeout))
    # The delegated collectives: Gloo over the same store, under its own prefix.
    gloo = ProcessGroupGloo(PrefixStore("panama-gloo", backend_opts.store), rank, size, timeout)
    pg = ProcessGroupPanama(rank, size, gloo, o.plan, o.eal_args, o.device, o.link_wait_ms)
    _groups.append(pg)
    return pg


def stats(group=None) -> dict:
    """The backend's statistics as a dict: totals, per-tree bytes, retransmissions,
    CE results, cwnd, and the delegated collectives by kind."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupPanama):
        raise ValueError(f"panama: {type(pg).__name__} is not a PANAMA process group")
    return pg.stats()


def _shutdown_all():
    # Before the interpreter tears down: stop the runtime's threads cleanly.
    for pg in list(_groups):
        pg.shutdown()


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create, extended_api=True)
    import atexit

    atexit.register(_shutdown_all)
