#!/usr/bin/env python3
"""One Gloo rank of `panama-cluster --nodes netns --baseline gloo`.

panama-cluster starts one per worker, in the worker's network namespace,
with GLOO_SOCKET_IFNAME set to its uplink veth: plain torch.distributed
Gloo over TCP across the same links (tc-shaped veths, a Linux bridge where
the PSwitch was) that PANAMA's run uses. It speaks the cluster workers'
line protocol on stdout: "P <iterations done> <bytes>" after each
allreduce and a final "R <json report>" (docs/cluster.md).

Data: rank r holds base * c_r with c_r = (r mod 8) + 1 and base elements
m * 2^e, |m| <= 255, e in [-3, 3], drawn from (seed, iteration). Every
partial sum of up to 64 ranks is then an exact binary32 value, so the sum
has one exact value whatever order Gloo adds in: base * sum(c_r). Every
element of every result is compared with it. Each allreduce is timed from
a barrier (dist.barrier) to its completion.
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--store", required=True, help="file for torch.distributed's FileStore rendezvous")
    ap.add_argument("--elems", type=int, required=True)
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    report = {"job": 1, "rank": a.rank, "ok": False, "dtype": "fp32"}
    try:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method="file://" + a.store, rank=a.rank, world_size=a.world)
        total = sum((r % 8) + 1 for r in range(a.world))
        seconds, mismatches = [], 0
        for it in range(a.iterations):
            g = torch.Generator().manual_seed(a.seed * 1000003 + it)
            m = torch.randint(-255, 256, (a.elems,), generator=g, dtype=torch.int16)
            e = torch.randint(-3, 4, (a.elems,), generator=g, dtype=torch.int16)
            base = torch.ldexp(m.float(), e.float())
            del m, e
            x = base * float((a.rank % 8) + 1)
            dist.barrier()
            t0 = time.monotonic()
            dist.all_reduce(x)
            seconds.append(time.monotonic() - t0)
            ref = base * float(total)
            bad = int((x != ref).sum().item())
            if bad:
                first = int((x != ref).nonzero()[0].item())
                print("gloo rank %d iteration %d: %d elements differ, first at %d: %r != %r"
                      % (a.rank, it, bad, first, x[first].item(), ref[first].item()), file=sys.stderr)
            mismatches += bad
            del x, ref, base
            print("P %d 0" % (it + 1), flush=True)
        dist.destroy_process_group()
        report.update({"seconds": seconds, "mismatches": mismatches, "ok": mismatches == 0,
                       "payload_bytes_sent": 0, "payload_bytes_completed": 4 * a.elems * a.iterations,
                       "retransmissions": 0, "timeouts": 0})
    except Exception as ex:  # reported to the parent, which fails the run
        report["error"] = "%s: %s" % (type(ex).__name__, ex)
        print("gloo rank %d: %s" % (a.rank, report["error"]), file=sys.stderr)
    print("R " + json.dumps(report), flush=True)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
