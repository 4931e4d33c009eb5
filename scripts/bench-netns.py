#!/usr/bin/env python3
"""Benchmark (not a test): PANAMA, the ring baseline and Gloo over the same
links, every node in its own network namespace (panama-cluster --nodes
netns, docs/cluster.md "Namespaces and veths"), veth pairs shaped by tc.

For each link rate, N workers and tensor size it runs

  panama-cluster --nodes netns --link-rate R --workers N --size S --iterations I   (PANAMA)
  ... --baseline ring                                                           (the host ring)
  ... --baseline gloo                                                           (Gloo, torch.distributed)

and prints one Markdown row: each scheme's time per allreduce (the slowest
worker's, mean over the iterations, every result checked), its fraction of
its own ideal (PANAMA: S / link; a ring, also Gloo's: 2(N-1)/N x S / link),
and the ring/PANAMA and Gloo/PANAMA time ratios beside the bound 2(N-1)/N
(what in-network aggregation can save on a link-bound network).

  scripts/bench-netns.py                               # 1 Gbit/s, N = 2 4 8, 1-256 MiB, all schemes
  scripts/bench-netns.py --rates 1 0.5 --workers 4 --sizes 64MiB
  scripts/bench-netns.py --find-rate --workers 4       # the fastest rate PANAMA keeps >= 90 % of

Needs root (namespaces) and, for Gloo, a Python with torch (PANAMA_PYTHON).
Raw summaries go to --out (a JSON line per run; by default
<build dir>/bench-netns.jsonl), so a long run can be resumed (--resume) and
reported again (--report-only).
"""
import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def parse_size(s):
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "b": 1, "": 1}
    num = s.rstrip("KMGiBkmgib")
    return int(float(num) * units[s[len(num):].lower()])


def run_one(exe, rate, n, size, iterations, scheme, extra, stall):
    """One panama-cluster run; returns a record with the per-iteration times."""
    with tempfile.TemporaryDirectory() as d:
        summary = os.path.join(d, "s.json")
        cmd = [exe, "--nodes", "netns", "--no-progress", "--link-rate", str(rate), "--workers", str(n),
               "--size", size, "--iterations", str(iterations), "--stall-timeout", str(stall),
               "--summary-json", summary]
        if scheme in ("ring", "gloo"):
            cmd += ["--baseline", scheme]
        cmd += extra
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True)
        rec = {"rate": rate, "workers": n, "size": size, "bytes": parse_size(size), "scheme": scheme,
               "iterations": iterations, "command": " ".join(shlex.quote(c) for c in cmd),
               "exit": p.returncode, "wall_s": time.time() - t0, "load": os.getloadavg()}
        try:
            s = json.load(open(summary))
        except (OSError, ValueError):
            rec["error"] = (p.stdout + p.stderr)[-2000:]
            return rec
        times = [0.0] * s["iterations"]
        retrans = 0
        for w in s["workers"]:
            for i, x in enumerate(w.get("seconds", [])):
                times[i] = max(times[i], x)
            retrans += w.get("retransmissions", 0)
        rec.update({"ok": bool(s.get("ok")), "times": times, "retransmissions": retrans})
        return rec


def ideal_s(rec):
    t = rec["bytes"] * 8 / (rec["rate"] * 1e9)
    n = rec["workers"]
    return t * 2 * (n - 1) / n if rec["scheme"] in ("ring", "gloo") else t


def mean_time(rec):
    if not rec or not rec.get("ok") or not rec.get("times") or not all(rec["times"]):
        return None
    return sum(rec["times"]) / len(rec["times"])


def report(records, schemes):
    by = {}
    for r in records:
        by[(r["rate"], r["workers"], r["size"], r["scheme"])] = r
    keys = sorted({(r["rate"], r["workers"], r["bytes"], r["size"]) for r in records})
    cols = {"panama": "PANAMA", "ring": "ring", "gloo": "Gloo"}
    head = ["link Gbit/s", "N", "size"]
    for s in schemes:
        head += [cols[s] + " s", cols[s] + " % of ideal"]
    if "panama" in schemes:
        head += [cols[s] + "/PANAMA" for s in schemes if s != "panama"]
    head += ["bound 2(N-1)/N"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for rate, n, _, size in keys:
        row = [f"{rate:g}", str(n), size]
        t = {}
        for s in schemes:
            rec = by.get((rate, n, size, s))
            m = mean_time(rec)
            t[s] = m
            if m is None:
                row += ["failed" if rec else "-", "-"]
            else:
                row += [f"{m:.3f}", f"{100 * ideal_s(rec) / m:.1f}"]
        if "panama" in schemes:
            for s in schemes:
                if s == "panama":
                    continue
                row.append(f"{t[s] / t['panama']:.2f}" if t.get(s) and t.get("panama") else "-")
        row.append(f"{2 * (n - 1) / n:.2f}")
        print("| " + " | ".join(row) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build"))
    ap.add_argument("--rates", nargs="+", type=float, default=[1.0], help="link rates, Gbit/s")
    ap.add_argument("--workers", nargs="+", type=int, default=[2, 4, 8])
    ap.add_argument("--sizes", nargs="+", default=["1MiB", "4MiB", "16MiB", "64MiB", "256MiB"])
    ap.add_argument("--schemes", nargs="+", default=["panama", "ring", "gloo"], choices=["panama", "ring", "gloo"])
    ap.add_argument("--iterations", type=int, default=0,
                    help="allreduces per run (0: 5 up to 16 MiB, 3 up to 64 MiB, 2 above)")
    ap.add_argument("--extra", default="",
                    help="more panama-cluster arguments for the PANAMA and ring runs (DPDK), e.g. "
                         "'--elems-per-packet 2048'")
    ap.add_argument("--out", default="", help="raw records, one JSON line per run (default: "
                                             "<build dir>/bench-netns.jsonl)")
    ap.add_argument("--resume", action="store_true", help="skip runs already in --out")
    ap.add_argument("--report-only", action="store_true", help="print the table of --out and exit")
    ap.add_argument("--find-rate", action="store_true",
                    help="PANAMA only, 64 MiB: the highest of --rates (default 0.25..10) at >= 90 %% of the link")
    a = ap.parse_args()
    exe = os.path.join(ROOT, a.build_dir, "sw/cluster/panama-cluster") if not os.path.isabs(a.build_dir) else \
        os.path.join(a.build_dir, "sw/cluster/panama-cluster")
    if not a.out:
        a.out = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(exe))), "bench-netns.jsonl")
    records = []
    if (a.resume or a.report_only) and os.path.exists(a.out):
        records = [json.loads(l) for l in open(a.out) if l.strip()]
    if a.report_only:
        report(records, a.schemes)
        return 0
    if not os.access(exe, os.X_OK):
        sys.exit(f"bench-netns: no {exe} (cmake --build {a.build_dir} --target panama-cluster)")

    commit = sh("git rev-parse --short HEAD")
    dirty = sh("git status --porcelain --untracked-files=no | wc -l")
    cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
    print(f"## PANAMA, ring and Gloo over network namespaces ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print()
    print(f"Machine: {os.cpu_count()} CPUs ({cpu}), {platform.release()}; commit {commit}"
          f"{' plus uncommitted changes' if dirty not in ('', '0') else ''}; load average before "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    print(f"Command: `scripts/bench-netns.py {' '.join(shlex.quote(x) for x in sys.argv[1:])}`; per run "
          f"`panama-cluster --nodes netns --link-rate R --workers N --size S --iterations I "
          f"[--baseline ring|gloo]`.")
    print()
    sys.stdout.flush()

    if a.find_rate:
        rates = a.rates if a.rates != [1.0] else [0.25, 0.5, 1, 2, 5, 10]
        best = None
        for n in a.workers:
            for rate in sorted(rates):
                rec = run_one(exe, rate, n, "64MiB", a.iterations or 3, "panama", a.extra.split(), 300)
                m = mean_time(rec)
                frac = ideal_s(rec) / m if m else 0
                print(f"- N = {n}, {rate:g} Gbit/s: {100 * frac:.1f} % of the link"
                      f"{'' if rec.get('ok') else ' (FAILED)'}, load {rec['load'][0]:.2f}")
                sys.stdout.flush()
                if frac >= 0.9:
                    best = rate
        print(f"\nfastest rate at >= 90 % of the link: {best if best else 'none of those tried'} Gbit/s")
        return 0

    done = {(r["rate"], r["workers"], r["size"], r["scheme"]) for r in records}
    with open(a.out, "a") as out:
        for rate in a.rates:
            for n in a.workers:
                for size in a.sizes:
                    b = parse_size(size)
                    it = a.iterations or (5 if b <= 16 << 20 else 3 if b <= 64 << 20 else 2)
                    for scheme in a.schemes:
                        if (rate, n, size, scheme) in done:
                            continue
                        extra = a.extra.split() if scheme != "gloo" else []
                        print(f"bench-netns: {rate:g} Gbit/s, N = {n}, {size}, {scheme}", file=sys.stderr)
                        rec = run_one(exe, rate, n, size, it, scheme, extra, 300)
                        records.append(rec)
                        out.write(json.dumps(rec) + "\n")
                        out.flush()
    report(records, a.schemes)
    print()
    print(f"Load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
