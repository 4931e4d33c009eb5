"""PANAMA's torch.distributed backend (docs/pytorch.md).

Importing this package registers the backend ``"panama"``::

    import panama_torch, torch.distributed as dist
    dist.init_process_group("panama")          # env:// rendezvous, as with Gloo
    model = torch.nn.parallel.DistributedDataParallel(model)
    ...
    print(panama_torch.stats())

SUM and AVG allreduce of float32, bfloat16 and float16 tensors runs through
a PANAMA communicator (in-network aggregation; 16-bit natively, CUDA tensors
staged through pinned host buffers where torch has CUDA); every other
collective runs on a Gloo process group created internally from the same
store, with a one-time warning per kind and a count in
``stats()["delegated"]``, or is refused with a ``panama:`` error when that
Gloo cannot run it (docs/pytorch.md has the table).

Where a rank finds its part of the job (``panama-torchrun`` sets the first
ones; an ``Options`` passed as ``pg_options`` overrides them):

PANAMA_PLAN          the worker's job plan (JSON, written by panama-controller)
PANAMA_EAL_ARGS      DPDK EAL arguments, whitespace-separated; or instead
PANAMA_VDEV          the DPDK virtual device of this rank (e.g. a net_memif client),
                     with PANAMA_DPDK_PREFIX (--file-prefix, default panama-torch-<pid>)
                     and PANAMA_DPDK_MEMORY_MB (default 512)
PANAMA_DEVICE        the DPDK port name (default: the plan's "device")
PANAMA_LINK_WAIT_MS  how long to wait for the port's link (default 10000)
PANAMA_STAGE_CHUNK_BYTES, PANAMA_STAGE_BUFFERS
                     the staged pipeline's chunk size (default 4 MiB) and
                     number of host buffers (default 4)
PANAMA_SKEW_ALLOWANCE_MS
                     how long a chunk of an allreduce with no result yet waits
                     before its first retransmission (default 200; the ranks
                     reach each allreduce at different times)
PANAMA_STAGE_CPU     1: CPU tensors through the staged pipeline too (tests
                     the path CUDA tensors take on a machine without a GPU)
"""

import inspect
import os
import shlex
import threading
import types
from dataclasses import dataclass
from datetime import timedelta
from typing import List, Optional

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as _c10d
from torch.distributed import PrefixStore, ProcessGroupGloo
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as _default_hooks

from . import _panama_torch
from ._panama_torch import ProcessGroupPanama, check_plan

__all__ = ["Options", "ProcessGroupPanama", "stats", "resolve_options", "TORCH_SHAPE", "CUDA", "bf16_compress_hook"]

BACKEND = "panama"
#: Which c10d class the backend is: "c10d::ProcessGroup" (torch 1.x) or "c10d::Backend" (torch 2.x).
TORCH_SHAPE = _panama_torch.TORCH_SHAPE
#: Whether CUDA tensors go through PANAMA (the torch built against has CUDA).
CUDA = _panama_torch.CUDA


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
    stage_cpu: Optional[bool] = None
    stage_chunk_bytes: Optional[int] = None
    stage_buffers: Optional[int] = None
    skew_allowance_ms: Optional[int] = None


def _env_int(name: str, default: int, minimum: int = 0) -> int:
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text, 0)
    except ValueError:
        raise ValueError(f"panama: {name}={text!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"panama: {name}={text!r} must be at least {minimum}")
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
    stage_cpu = o.stage_cpu if o.stage_cpu is not None else bool(_env_int("PANAMA_STAGE_CPU", 0))
    chunk = o.stage_chunk_bytes if o.stage_chunk_bytes is not None else \
        _env_int("PANAMA_STAGE_CHUNK_BYTES", 4 << 20, minimum=4)
    buffers = o.stage_buffers if o.stage_buffers is not None else _env_int("PANAMA_STAGE_BUFFERS", 4, minimum=1)
    skew = o.skew_allowance_ms if o.skew_allowance_ms is not None else _env_int("PANAMA_SKEW_ALLOWANCE_MS", 200)
    return Options(plan=plan, eal_args=list(eal_args), device=device, link_wait_ms=link_wait_ms,
                   stage_cpu=stage_cpu, stage_chunk_bytes=chunk, stage_buffers=buffers, skew_allowance_ms=skew)


# Live PANAMA groups of this process. Strong references: C++ (DDP's reducer)
# may hold a group whose Python wrapper is gone, and every group's threads
# must be stopped at destroy_process_group or at exit, before the
# interpreter and the libraries' static objects are torn down.
_groups: "list[ProcessGroupPanama]" = []
_lock = threading.Lock()


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
    pg = ProcessGroupPanama(rank, size, gloo, backend_opts.store, o.plan, o.eal_args, o.device, o.link_wait_ms,
                            timeout.total_seconds(), o.stage_cpu, o.stage_chunk_bytes, o.stage_buffers,
                            o.skew_allowance_ms)
    with _lock:
        _groups.append(pg)
    return pg


def _panama_of(group):
    """The ProcessGroupPanama behind ``group`` (a ProcessGroupPanama on torch
    1.x, a ProcessGroup wrapping one on 2.x), or None."""
    if isinstance(group, ProcessGroupPanama):
        return group
    get_backend = getattr(group, "_get_backend", None)
    if get_backend is not None:
        for device in ("cpu", "cuda"):
            try:
                b = get_backend(torch.device(device))
            except Exception:  # noqa: BLE001 - no backend for that device
                continue
            if isinstance(b, ProcessGroupPanama):
                return b
    return None


def stats(group=None) -> dict:
    """The backend's statistics as a dict: totals, per-tree bytes, retransmissions,
    CE results, cwnd, the delegated and refused collectives by kind, staging."""
    pg = group if group is not None else _c10d._get_default_group()
    p = _panama_of(pg)
    if p is None:
        raise ValueError(f"panama: {type(pg).__name__} is not a PANAMA process group")
    return p.stats()


def _shutdown(pgs):
    for pg in pgs:
        pg.shutdown()
        with _lock:
            if pg in _groups:
                _groups.remove(pg)


# destroy_process_group: torch 1.13 has no hook for a backend to stop, so the
# backend wraps it: the groups destroyed are shut down (their runtime
# communicator, Gloo group and store references released), so that
# init_process_group can run again in the same process.
_torch_destroy_process_group = _c10d.destroy_process_group


def _destroy_process_group(group=None):
    world = group is None or group is _c10d.GroupMember.WORLD
    if world:
        with _lock:
            doomed = list(_groups)  # destroying the world destroys every group
    else:
        p = _panama_of(group)
        doomed = [p] if p is not None else []
    # The env:// store's server lives in rank 0's process; a rank that
    # re-initialises before rank 0 has destroyed the old one connects to that
    # old server and loses it mid-rendezvous ("Connection reset by peer").
    old_store, rank = None, -1
    if world and doomed and dist.is_initialized():
        rank = dist.get_rank()
        if rank != 0:
            try:
                old_store = _c10d._get_default_store()
            except Exception:  # noqa: BLE001 - no store: nothing to wait for
                old_store = None
    try:
        _torch_destroy_process_group(group)
    finally:
        _shutdown(doomed)
    if old_store is not None:
        _wait_store_gone(old_store)


def _wait_store_gone(store, limit_s: float = 30.0):
    """Until the old store's server (rank 0) is gone: requests then fail."""
    import time
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            store.add("panama/destroy-probe", 0)
        except RuntimeError:  # the server closed the connection: it is gone
            return
        time.sleep(0.02)
    import warnings
    warnings.warn("panama: destroy_process_group: rank 0 still serves the old store after "
                  f"{limit_s:.0f} s (does it keep a reference to a process group or store?); a new "
                  "init_process_group may connect to the old one")


_destroy_process_group.__doc__ = _torch_destroy_process_group.__doc__


# new_group: a PANAMA job covers the ranks of its plan, so a "panama"
# subgroup over fewer ranks cannot be made, and one job has one group at a
# time. Torch calls new_group on every rank with the same arguments, so the
# check raises on every rank at once, before torch's store barrier (where the
# ranks the group does not include would otherwise wait for the timeout).
_torch_new_group = _c10d.new_group
_new_group_signature = inspect.signature(_torch_new_group)


def _new_group(*args, **kwargs):
    bound = _new_group_signature.bind(*args, **kwargs)
    backend = bound.arguments.get("backend")
    if backend is None and dist.is_initialized():
        backend = dist.get_backend()
    if backend is not None and BACKEND in str(backend).lower():
        world = dist.get_world_size()
        ranks = bound.arguments.get("ranks")
        members = sorted(ranks) if ranks is not None else list(range(world))
        if members != list(range(world)):
            raise ValueError(
                f"panama: new_group(backend='panama') over ranks {members} of {world}: a PANAMA job covers "
                f"every rank of its plan, so a PANAMA subgroup cannot be made (raised on every rank); use "
                f"backend='gloo' for subgroups (docs/pytorch.md, \"Subgroups\")")
        with _lock:
            live = list(_groups)
        if live:
            raise ValueError(
                f"panama: new_group(backend='panama') over all {world} ranks while this process already has a "
                f"PANAMA process group for job {live[0].job_id} (one group per job at a time; raised on every "
                f"rank); use that group, or backend='gloo'")
    return _torch_new_group(*args, **kwargs)


_new_group.__doc__ = _torch_new_group.__doc__


def _renamed(f, name):
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__doc__, g.__qualname__, g.__annotations__ = f.__doc__, name, dict(f.__annotations__)
    return g


#: torch's own ``bf16_compress_hook`` (the same code object) under another
#: name: DDP of torch 1.13 (and 2.x) refuses a hook *named*
#: ``bf16_compress_hook`` unless CUDA 11 and NCCL 2.10 are there, although the
#: panama backend sums bfloat16 on any device. Use
#: ``model.register_comm_hook(None, panama_torch.bf16_compress_hook)``.
bf16_compress_hook = _renamed(_default_hooks.bf16_compress_hook, "panama_bf16_compress_hook")


def _shutdown_all():
    # Before the interpreter tears down: stop the runtime's threads cleanly.
    with _lock:
        pgs = list(_groups)
    _shutdown(pgs)
    _panama_torch._release_runtime()


if BACKEND.upper() not in dist.Backend._plugins:
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        # torch 2.x: one backend object for CPU and CUDA tensors.
        dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend(BACKEND, _create, extended_api=True)
    _c10d.destroy_process_group = _destroy_process_group
    dist.destroy_process_group = _destroy_process_group
    _c10d.new_group = _new_group
    dist.new_group = _new_group
    import atexit

    atexit.register(_shutdown_all)
