"""The delegation table of docs/pytorch.md, checked entry by entry, per rank
(panama-torchrun).

The table ("What goes through PANAMA, what is delegated, what is refused")
has one row per case with a check id in its first column and the path in
its third: PANAMA, delegated, refused (a RuntimeError or ValueError whose
message starts with "panama:", raised at the call on every rank), or
"refused by torch" (torch's own Python refuses before the backend is
reached). Every row must have a check here and every check a row. A PANAMA
row must give the right result and count one allreduce through PANAMA and no
delegation; a delegated row the right result and one more delegation (and
no PANAMA allreduce); a refused row its error and one more refusal. Rows
marked "(CUDA)" run only where torch has CUDA (not on the development
machine: they are listed as not run).
"""

import faulthandler
import os
import re
import signal
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import panama_torch
from torch_test_util import Checks

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "pytorch.md")

faulthandler.dump_traceback_later(150, exit=True)  # a hang shows where, before CTest's timeout
faulthandler.register(signal.SIGTERM, chain=True)  # and where the other ranks were when stopped
dist.init_process_group("panama")
rank, n = dist.get_rank(), dist.get_world_size()
pg = dist.distributed_c10d._get_default_group()
c = Checks("test_delegation")
S = n * (n + 1) / 2  # sum of rank + 1 over the ranks


def full(v, dtype=torch.float32, size=100, device="cpu"):
    return torch.full((size,), v, dtype=dtype, device=device)


def ar(dtype, op, value_of_rank, expected, device="cpu"):
    def run():
        t = full(value_of_rank(rank), dtype, device=device)
        dist.all_reduce(t, op=op)
        return torch.equal(t.cpu(), full(expected, dtype))
    return run


R = dist.ReduceOp
checks = {
    # allreduce through PANAMA
    "ar-f32-sum": ar(torch.float32, R.SUM, lambda r: r + 1.0, S),
    "ar-f32-avg": ar(torch.float32, R.AVG, lambda r: r + 1.0, S / n),
    "ar-bf16-sum": ar(torch.bfloat16, R.SUM, lambda r: r + 1.0, S),
    "ar-bf16-avg": ar(torch.bfloat16, R.AVG, lambda r: r + 1.0, S / n),
    "ar-f16-sum": ar(torch.float16, R.SUM, lambda r: r + 1.0, S),
    "ar-f16-avg": ar(torch.float16, R.AVG, lambda r: r + 1.0, S / n),
    "ar-c64-sum": lambda: (lambda t: (dist.all_reduce(t), torch.equal(t, full(S + 1j * n, torch.complex64)))[1])(
        full(rank + 1.0 + 1j, torch.complex64)),
    "ar-f32-noncontig": lambda: (lambda base: (lambda v: (dist.all_reduce(v), bool((v == S).all()))[1])(
        base[:, ::2]))(torch.full((8, 8), rank + 1.0)),
    # allreduce delegated
    "ar-f64-sum": ar(torch.float64, R.SUM, lambda r: r + 1.0, S),
    "ar-f64-avg": ar(torch.float64, R.AVG, lambda r: r + 1.0, S / n),
    "ar-f32-max": ar(torch.float32, R.MAX, lambda r: float(r), n - 1.0),
    "ar-f32-min": ar(torch.float32, R.MIN, lambda r: float(r), 0.0),
    "ar-f32-product": ar(torch.float32, R.PRODUCT, lambda r: 2.0, 2.0 ** n),
    "ar-f16-max": ar(torch.float16, R.MAX, lambda r: float(r), n - 1.0),
    "ar-i64-sum": ar(torch.int64, R.SUM, lambda r: r + 1, S),
    "ar-i64-max": ar(torch.int64, R.MAX, lambda r: r, n - 1),
    "ar-i64-band": ar(torch.int64, R.BAND, lambda r: 7 - r, (7 - 0) & (7 - 1) & (7 - 2) & (7 - 3)),
    "ar-u8-sum": ar(torch.uint8, R.SUM, lambda r: r + 1, S),
    "ar-sparse": lambda: (lambda t: (dist.all_reduce(t), torch.equal(t.to_dense(), torch.eye(3) * n))[1])(
        torch.eye(3).to_sparse()),
    # Several tensors in one call: Gloo's (and c10d's) multi-tensor meaning, the sum of all of them.
    "ar-two-tensors": lambda: (lambda a, b: (pg.allreduce([a, b]).wait(), torch.equal(a, full(2 * S)) and
                                              torch.equal(b, full(2 * S)))[1])(full(rank + 1.0), full(rank + 1.0)),
    "ar-coalesced": lambda: (lambda ts: (dist.all_reduce_coalesced(ts),
                                         all(torch.equal(t, torch.full_like(t, S)) for t in ts))[1])(
        [full(rank + 1.0, size=3), full(rank + 1.0, size=5)]),
    # allreduce refused
    "ar-i64-avg": ar(torch.int64, R.AVG, lambda r: r + 1, 0),
    "ar-bf16-max": ar(torch.bfloat16, R.MAX, lambda r: float(r), 0),
    "ar-bool-max": ar(torch.bool, R.MAX, lambda r: r == 0, True),
    "ar-i16-sum": ar(torch.int16, R.SUM, lambda r: r + 1, S),
    "ar-coalesced-avg": lambda: dist.all_reduce_coalesced([full(1.0), full(2.0)], op=R.AVG),
    # other collectives
    "broadcast-f32": lambda: (lambda t: (dist.broadcast(t, src=1), torch.equal(t, full(2.0)))[1])(full(rank + 1.0)),
    "broadcast-bf16": lambda: (lambda t: (dist.broadcast(t, src=1), torch.equal(t, full(2.0, torch.bfloat16)))[1])(
        full(rank + 1.0, torch.bfloat16)),
    "broadcast-bool": lambda: (lambda t: (dist.broadcast(t, src=0), bool(t.all()))[1])(full(rank == 0, torch.bool)),
    "allgather-f32": lambda: (lambda out: (dist.all_gather(out, full(rank + 1.0, size=3)),
                                           [o[0].item() for o in out] == [r + 1.0 for r in range(n)])[1])(
        [torch.zeros(3) for _ in range(n)]),
    "allgather-bf16": lambda: (lambda out: (dist.all_gather(out, full(rank + 1.0, torch.bfloat16, 3)),
                                            [o[0].item() for o in out] == [r + 1.0 for r in range(n)])[1])(
        [torch.zeros(3, dtype=torch.bfloat16) for _ in range(n)]),
    "allgather-base": lambda: (lambda out: (dist._all_gather_base(out, full(rank + 1.0, size=2)),
                                            out.tolist() == [r + 1.0 for r in range(n) for _ in range(2)])[1])(
        torch.zeros(2 * n)),
    "allgather-coalesced": lambda: (lambda out: (dist.all_gather_coalesced(out, [full(rank + 1.0, size=2)]),
                                                 [o[0][0].item() for o in out] == [r + 1.0 for r in range(n)])[1])(
        [[torch.zeros(2)] for _ in range(n)]),
    "gather": lambda: (lambda out: (dist.gather(full(rank + 1.0, size=2), out if rank == 0 else None, dst=0),
                                    rank != 0 or [o[0].item() for o in out] == [r + 1.0 for r in range(n)])[1])(
        [torch.zeros(2) for _ in range(n)]),
    "scatter": lambda: (lambda t: (dist.scatter(t, [full(r + 1.0, size=2) for r in range(n)] if rank == 0 else None,
                                                src=0), torch.equal(t, full(rank + 1.0, size=2)))[1])(torch.zeros(2)),
    "reduce-f32-sum": lambda: (lambda t: (dist.reduce(t, dst=0), rank != 0 or torch.equal(t, full(S)))[1])(
        full(rank + 1.0)),
    "reduce-i64-max": lambda: (lambda t: (dist.reduce(t, dst=0, op=R.MAX),
                                          rank != 0 or torch.equal(t, full(n - 1, torch.int64)))[1])(
        full(rank, torch.int64)),
    "reduce-f32-avg": lambda: dist.reduce(full(1.0), dst=0, op=R.AVG),
    "reduce-bf16-sum": lambda: dist.reduce(full(1.0, torch.bfloat16), dst=0),
    "reduce-scatter": lambda: dist.reduce_scatter(torch.zeros(2), [full(1.0, size=2) for _ in range(n)]),
    "reduce-scatter-base": lambda: dist._reduce_scatter_base(torch.zeros(2), torch.ones(2 * n)),
    "all-to-all": lambda: dist.all_to_all([torch.zeros(2) for _ in range(n)], [full(1.0, size=2) for _ in range(n)]),
    "all-to-all-single": lambda: (lambda out: (dist.all_to_all_single(out, torch.arange(n, dtype=torch.float32) +
                                                                       10 * rank),
                                               out.tolist() == [10.0 * r + rank for r in range(n)])[1])(torch.zeros(n)),
    # Point to point: None on the ranks not involved.
    "send-recv": lambda: (lambda t: ((dist.send(full(7.0, size=2), dst=1) if rank == 0 else
                                      dist.recv(t, src=0) if rank == 1 else None),
                                     None if rank > 1 else rank != 1 or torch.equal(t, full(7.0, size=2)))[1])(
        torch.zeros(2)),
    "recv-anysource": lambda: (lambda t: ((dist.send(full(9.0, size=2), dst=1) if rank == 2 else
                                           dist.recv(t) if rank == 1 else None),
                                          None if rank not in (1, 2) else rank != 1 or
                                          torch.equal(t, full(9.0, size=2)))[1])(torch.zeros(2)),
    "barrier": lambda: (dist.barrier(), True)[1],
    "monitored-barrier": lambda: dist.monitored_barrier(timeout=timedelta(seconds=30)),
    "monitored-barrier-method": lambda: (pg.monitored_barrier(timedelta(seconds=30)), True)[1],
    "all-gather-object": lambda: (lambda out: (dist.all_gather_object(out, {"r": rank}),
                                               out == [{"r": r} for r in range(n)])[1])([None] * n),
    "broadcast-object-list": lambda: (lambda objs: (dist.broadcast_object_list(objs, src=0), objs == [0])[1])([rank]),
    # CUDA tensors (where torch has CUDA)
    "cuda-ar-f32-sum": ar(torch.float32, R.SUM, lambda r: r + 1.0, S, device="cuda"),
    "cuda-ar-bf16-avg": ar(torch.bfloat16, R.AVG, lambda r: r + 1.0, S / n, device="cuda"),
    "cuda-ar-f16-sum": ar(torch.float16, R.SUM, lambda r: r + 1.0, S, device="cuda"),
    "cuda-broadcast-f32": lambda: (lambda t: (dist.broadcast(t, src=1), torch.equal(t.cpu(), full(2.0)))[1])(
        full(rank + 1.0, device="cuda")),
}

# The table of docs/pytorch.md.
rows = {}
for line in open(DOC, encoding="utf-8"):
    m = re.match(r"^\|\s*`([a-z0-9-]+)`\s*\|([^|]*)\|\s*([^|]+?)\s*\|", line)
    if m:
        rows[m.group(1)] = m.group(3).strip()
PATHS = {"PANAMA", "delegated", "refused", "refused by torch"}
c.check(len(rows) > 40, f"only {len(rows)} rows found in {DOC}")
for key, path in rows.items():
    c.check(path in PATHS, f"row {key}: path {path!r} is none of {sorted(PATHS)}")
c.check(set(rows) == set(checks), f"rows without a check: {sorted(set(rows) - set(checks))}; "
        f"checks without a row: {sorted(set(checks) - set(rows))}")

not_run = []
for key in sorted(rows):
    if key not in checks:
        continue
    path = rows[key]
    if key.startswith("cuda-") and not torch.cuda.is_available():
        not_run.append(key)
        continue
    before = panama_torch.stats()
    error, ok = None, None
    try:
        ok = checks[key]()
    except (RuntimeError, ValueError) as e:
        error = str(e)
    after = panama_torch.stats()
    through = after["allreduces"] - before["allreduces"]
    delegated = after["delegated_total"] - before["delegated_total"]
    refused = after["refused_total"] - before["refused_total"]
    if path == "PANAMA":
        c.check(error is None and ok, f"{key}: {error or 'wrong result'}")
        c.check(through == 1 and delegated == 0, f"{key}: {through} through PANAMA, {delegated} delegated")
    elif path == "delegated":
        if error is None and ok is None:  # not involved (point to point)
            c.check(through == 0 and delegated == 0, f"{key}: a rank not involved took part")
            dist.barrier()
            continue
        c.check(error is None and ok, f"{key}: {error or 'wrong result'}")
        c.check(through == 0 and delegated >= 1, f"{key}: {through} through PANAMA, {delegated} delegated")
    elif path == "refused":
        c.check(error is not None and error.startswith("panama:"), f"{key}: not refused by panama: {error!r}")
        c.check(refused == 1 and through == 0, f"{key}: {refused} refusals counted, {through} through PANAMA")
        if rank == 0 and error:
            print(f"{key}: {error.splitlines()[0][:160]}", flush=True)
    elif path == "refused by torch":
        c.check(error is not None and not error.startswith("panama:"), f"{key}: torch did not refuse: {error!r}")
    dist.barrier()  # the next row starts together (on the internal Gloo group)
if rank == 0:
    print(f"{len(rows) - len(not_run)} rows checked; not run (no CUDA in this torch): {', '.join(not_run) or '-'}",
          flush=True)
c.finish()
dist.destroy_process_group()
sys.exit(0)
