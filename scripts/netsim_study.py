#!/usr/bin/python3
"""A study on the network simulation: a grid of cells (fabric, load, jobs,
transport), every compared scheme run on each cell with the same seeds, so
that the schemes see the same background flows (a seed fixes their
arrivals, sizes and endpoints whatever the scheme does); short-flow FCTs
pooled over the seeds; every ratio against PANAMA with a bootstrap
confidence interval.

Every run is cached under <out>/runs/<key>/ (key: a hash of its full
panama-netsim command line), so a stopped study picks up where it was and
--report-only rebuilds the report from what is there.

  scripts/netsim_study.py --grid quick --out out/study-quick         # 16 hosts, minutes
  scripts/netsim_study.py --grid regime --seeds 1 2 3 --parallel 2   # the 64-host regime map
  scripts/netsim_study.py --grid cells.json --out DIR                # cells of your own
  scripts/netsim_study.py --out DIR --report-only
  scripts/netsim_study.py --self-test                                # the statistics, on known data

A cells file is a JSON list of {"name": ..., "args": [panama-netsim
arguments]}, each optionally with its own "schemes" ({NAME: ARGS}) and
"seeds" (a list, in place of --seeds); schemes are given with --schemes as NAME=ARGS (e.g.
"ring-rack=--scheme ring --ring-order rack"). Outputs: <out>/report.md,
<out>/report.json, <out>/fct_ratio.png, <out>/iteration_ratio.png.
"""
import argparse
import csv
import hashlib
import json
import math
import os
import random
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHORT = 100_000  # bytes: a "short" flow

SCHEMES = {
    "panama": "--scheme panama",
    "ring-rack": "--scheme ring --ring-order rack",
    "hierarchical": "--scheme hierarchical",
}


def grid(name):
    """Built-in grids: lists of cells {"name", "args"}."""
    if name == "quick":
        base = ("--racks 4 --hosts-per-rack 4 --spines 2 --host-gbps 10 --fabric-gbps 20 --jobs 2 "
                "--workers-per-job 4 --placement packed --workload h100 --models resnet50,vgg16 "
                "--dtype bf16 --scale 0.002 --iterations 3 --min-short-flows 30")
        return [{"name": f"load {load}", "args": shlex.split(f"{base} --load {load}")} for load in (0.3, 0.7)]
    # Jumbo frames for everything (--mtu 9000 --background-mtu 9000: 4-7x
    # fewer events, docs/performance.md); grid "confirm" repeats cells with
    # 1500-byte background segments, with fp32 and at 256 hosts.
    jumbo = "--mtu 9000 --background-mtu 9000 --elems-per-packet 2048"
    work = ("--workload h100 --models bert-large,resnet50,vgg16,gpt2-medium --scale 0.05 --iterations 5 "
            "--min-short-flows 1000 --placement packed --workers-per-job 16")
    if name == "regime":
        # 64 hosts (8 racks of 8, 10 Gbit/s): load x ML share of the hosts
        # (jobs of 16 workers, each on two racks) x oversubscription (4
        # spines at 20 or at 5 Gbit/s) x the baseline's transport; H100
        # bf16 workloads. The load is the background's offered load on the
        # fabric's bottleneck: the host links at 1:1, the leaves' uplinks at
        # 4:1, where the background offers load / 4 of the hosts' capacity
        # (at 0.3 of the hosts' capacity a 4:1 fabric is already overloaded:
        # 7/8 of the flows leave their rack).
        cells = []
        for load in (0.3, 0.7):
            for share in (0.5, 1.0):
                for over, fabric, div in (("1:1", 20, 1), ("4:1", 5, 4)):
                    for tcp in ("dctcp", "cubic"):
                        args = (f"--racks 8 --hosts-per-rack 8 --spines 4 --host-gbps 10 --fabric-gbps {fabric} "
                                f"--jobs {int(4 * share)} {work} --dtype bf16 --load {load / div:g} {jumbo}")
                        cells.append({"name": f"load {load}, ML {share:.0%}, {over}, ring {tcp}",
                                      "args": shlex.split(args), "ring_tcp": tcp,
                                      "axes": {"load": load, "ml": share, "over": over, "tcp": tcp}})
        return cells
    if name == "confirm":
        # Cells of the map again (load 0.7, ML 100%, DCTCP): with 1500-byte
        # background segments, with fp32 gradients; and 256 hosts (16 racks
        # of 16, 8 spines, 100 Gbit/s hosts, 1:1, ML 50%).
        cells = []
        for load in (0.7,):
            for over, fabric, div in (("1:1", 20, 1), ("4:1", 5, 4)):
                base = (f"--racks 8 --hosts-per-rack 8 --spines 4 --host-gbps 10 --fabric-gbps {fabric} "
                        f"--jobs 4 {work} --load {load / div:g}")
                cells.append({"name": f"64 hosts, load {load}, ML 100%, {over}, 1500-byte background",
                              "args": shlex.split(f"{base} --dtype bf16 --mtu 9000 --elems-per-packet 2048")})
                cells.append({"name": f"64 hosts, load {load}, ML 100%, {over}, fp32",
                              "args": shlex.split(f"{base} --dtype fp32 {jumbo}")})
        for over, fabric in (("1:1", 200),):
            # The engines at the switch's capacity (a card per port of 100 Gbit/s).
            args = (f"--racks 16 --hosts-per-rack 16 --spines 8 --host-gbps 100 --fabric-gbps {fabric} "
                    f"--engine-gbps 2400 --jobs 8 {work} --dtype bf16 --load 0.3 {jumbo}")
            cells.append({"name": f"256 hosts, load 0.3, ML 50%, {over}", "args": shlex.split(args)})
        return cells
    if name == "contention":
        # When jobs compete (docs/contention.md): priorities by GPU intensity
        # and engine memory cut to 1/4 and 1/16, on the regime map's cell at
        # 4:1, load 0.3, ML 100%, with the jobs placed at random; chain trees against
        # spine-rooted ones (fp32: the simulation's chain reference) with
        # jobs spread over every rack at 64, 256 and 512 hosts (scale 0.02:
        # 512 hosts hold 128 workers' fp32 tensors).
        # Jobs placed at random (seeded), so that they share leaves, uplinks
        # and engines: packed jobs of 16 on two racks each share nothing but
        # the spines' engines, and neither priorities nor memory matter.
        base = ("--racks 8 --hosts-per-rack 8 --spines 4 --host-gbps 10 --fabric-gbps 5 "
                f"--jobs 4 {work} --dtype bf16 --load 0.075 {jumbo}").replace("--placement packed",
                                                                             "--placement random")
        # Three seeds (placements and background) for the priorities and memory cell.
        cells = [{"name": "64 hosts, load 0.3, ML 100%, 4:1, random placement", "args": shlex.split(base),
                  "seeds": [1, 2, 3],
                  "schemes": {"panama": SCHEMES["panama"], "priorities": "--scheme panama --priorities 2",
                              "memory 1/4": "--scheme panama --packet-memory 128",
                              "memory 1/16": "--scheme panama --packet-memory 32",
                              "ring-rack": SCHEMES["ring-rack"]}}]  # hierarchical: needs even racks
        # Engine memory short (fixed shares against the hybrid, with and
        # without priorities, and the ring): fp32 (a 16-bit group over
        # several racks is rounded at each leaf in the network and once on
        # the ring, which the workers' check cannot follow), scale 0.02 and
        # 3 iterations (a pooled run with most groups on the ring switches
        # every ring frame in ns-3). What the jobs need: at full memory the
        # trees' largest windows add up to about 270 slots per leaf (every
        # leaf holds all 16 (job, tree) entries), docs/contention.md; 64
        # slots are about 1/4 of that (shares of 4), 16 about 1/16 (shares
        # of 1). The hybrid's pool is the engine's whole memory; its claim
        # caps are the jobs' shares (overcommit 1) or 4 times them; "ring
        # CC": congestion control on the ring of denied groups (--ring-cc).
        short = (base.replace("--dtype bf16", "--dtype fp32").replace("--scale 0.05", "--scale 0.02")
                 .replace("--iterations 5", "--iterations 3"))
        cells.append({"name": "64 hosts, load 0.3, ML 100%, 4:1, random placement, fp32, memory short",
                      "args": shlex.split(short), "seeds": [1, 2, 3],
                      "schemes": {"panama": SCHEMES["panama"],
                                  "fixed shares, 1/4": "--scheme panama --packet-memory 64",
                                  "hybrid, 1/4": "--scheme panama --packet-memory 64 --pool 64",
                                  "fixed shares, 1/16": "--scheme panama --packet-memory 16",
                                  "hybrid, 1/16": "--scheme panama --packet-memory 16 --pool 16",
                                  "hybrid, 1/16, caps x4": "--scheme panama --packet-memory 16 --pool 16 "
                                                           "--overcommit 4",
                                  "fixed shares, 1/16, priorities": "--scheme panama --packet-memory 16 "
                                                                    "--priorities 2",
                                  "hybrid, 1/16, priorities": "--scheme panama --packet-memory 16 --pool 16 "
                                                              "--priorities 2",
                                  "hybrid, 1/4, ring CC": "--scheme panama --packet-memory 64 --pool 64 --ring-cc",
                                  "hybrid, 1/16, ring CC": "--scheme panama --packet-memory 16 --pool 16 --ring-cc",
                                  "ring-rack": SCHEMES["ring-rack"]}})
        # The same at 1:1 (20 Gbit/s to each spine, load 0.3 on the host
        # links): a ring's hops cross a fabric that is not oversubscribed.
        one = short.replace("--fabric-gbps 5", "--fabric-gbps 20").replace("--load 0.075", "--load 0.3")
        cells.append({"name": "64 hosts, load 0.3, ML 100%, 1:1, random placement, fp32, memory short",
                      "args": shlex.split(one), "seeds": [1, 2, 3],
                      "schemes": {"panama": SCHEMES["panama"],
                                  "fixed shares, 1/16": "--scheme panama --packet-memory 16",
                                  "hybrid, 1/16": "--scheme panama --packet-memory 16 --pool 16",
                                  "hybrid, 1/16, ring CC": "--scheme panama --packet-memory 16 --pool 16 --ring-cc",
                                  "ring-rack": SCHEMES["ring-rack"]}})
        chain = {"panama": SCHEMES["panama"], "chain": "--scheme panama --tree-shape chain"}
        for hosts, racks, per, spines, load in ((64, 8, 8, 4, 0.3), (256, 16, 16, 8, 0.0), (512, 32, 16, 8, 0.0)):
            args = (f"--racks {racks} --hosts-per-rack {per} --spines {spines} --host-gbps 100 --fabric-gbps 100 "
                    f"--engine-gbps {100 * (per + spines)} "
                    f"--jobs 4 --workers-per-job {racks} --placement spread --workload h100 "
                    "--models bert-large,resnet50,vgg16,gpt2-medium --scale 0.02 --iterations 5 --dtype fp32 "
                    f"--load {load} {jumbo}" + (" --min-short-flows 1000" if load else ""))
            cells.append({"name": f"{hosts} hosts, jobs over all {racks} racks, load {load}, fp32",
                          "args": shlex.split(args), "schemes": chain})
            if hosts == 64:
                # The same in bf16 with 8 GPUs per host reducing to a master
                # over NVLink first (CINA's server).
                cells.append({"name": "64 hosts, jobs over all 8 racks, load 0.3, bf16, 8 GPUs per host",
                              "args": shlex.split(args.replace("--dtype fp32", "--dtype bf16")
                                                  + " --gpus-per-host 8"), "schemes": chain})
        return cells
    with open(name) as f:
        cells = json.load(f)
    for c in cells:
        if not isinstance(c, dict) or "name" not in c or not isinstance(c.get("args"), list):
            sys.exit(f"netsim_study: {name}: every cell needs \"name\" and an \"args\" list")
    return cells


def run_args(cell, scheme_args, seed):
    args = list(cell["args"]) + shlex.split(scheme_args) + ["--seed", str(seed)]
    if cell.get("ring_tcp") == "cubic" and "--scheme panama" not in scheme_args:
        args += ["--ring-tcp", "cubic", "--ring-ecn", "0"]
    return args


def key_of(args):
    return hashlib.sha1(" ".join(args).encode()).hexdigest()[:16]


def run_one(exe, out, args, log):
    d = os.path.join(out, "runs", key_of(args))
    if os.path.exists(os.path.join(d, "summary.json")):
        return d, 0.0, True
    os.makedirs(d, exist_ok=True)
    # Another process of the same study may be running it (--reverse).
    lock = os.path.join(d, "running")
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        try:
            with open(lock) as f:
                os.kill(int(f.read().strip() or 0), 0)
            return d, 0.0, True  # alive: that process finishes it
        except (ValueError, ProcessLookupError, PermissionError):
            os.remove(lock)  # left by a process that stopped
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    with open(os.path.join(d, "args.json"), "w") as f:
        json.dump(args, f)
    t0 = time.time()
    r = subprocess.run([exe] + args + ["--out", d], capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        with open(os.path.join(d, "error.txt"), "w") as f:
            f.write(r.stdout + r.stderr)
        if os.path.exists(os.path.join(d, "summary.json")):
            os.remove(os.path.join(d, "summary.json"))  # run again next time
        log(f"  FAILED ({r.returncode}) in {wall:.0f} s: {' '.join(args)} (see {d}/error.txt)")
    os.remove(lock)
    return d, wall, False


# ------------------------------------------------------------------ statistics

def percentile(v, p):
    """Nearest-rank percentile, as panama-netsim reports it."""
    if not v:
        return float("nan")
    s = sorted(v)
    i = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[i]


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def bootstrap_ratio(base, other, stat, reps=1000, seed=1, level=0.90):
    """Ratio stat(other) / stat(base) of two samples given per stratum (seed):
    lists of lists. Resamples within each stratum (keeping the pairing of
    the schemes by seed), pools, and returns (point, low, high)."""
    rng = random.Random(seed)
    pooled = lambda groups: [x for g in groups for x in g]  # noqa: E731
    point = stat(pooled(other)) / stat(pooled(base))
    ratios = []
    for _ in range(reps):
        b = [rng.choices(g, k=len(g)) for g in base if g]
        o = [rng.choices(g, k=len(g)) for g in other if g]
        sb = stat(pooled(b))
        if sb > 0:
            ratios.append(stat(pooled(o)) / sb)
    ratios.sort()
    lo = ratios[int((1 - level) / 2 * len(ratios))]
    hi = ratios[min(len(ratios) - 1, int((1 + level) / 2 * len(ratios)))]
    return point, lo, hi


def short_slowdowns(d):
    out = []
    with open(os.path.join(d, "flows.csv")) as f:
        for r in csv.DictReader(f):
            if r["measured"] == "1" and r["manual"] == "0" and int(r["bytes"]) < SHORT and float(r["fct_us"]) >= 0:
                out.append(float(r["slowdown"]))
    return out


def steady(iterations):
    """A job's iterations without its first (connection set-up, slow start
    and the jobs' staggered starts fall into it) when it has three or more."""
    return iterations[1:] if len(iterations) >= 3 else iterations


def iteration_lists(summary):
    """Per job (in job order) its steady iteration times, ms."""
    return [steady(j["iteration_ms"]) for j in summary["jobs"]]


def iteration_ratio(base, other, reps=1000, seed=1, level=0.90, of=None):
    """Mean over seeds and jobs of (mean iteration of other) / (mean iteration
    of base), jobs paired by seed and id; the interval resamples each job's
    iterations within each run. base, other: per seed, per job, iterations.
    `of` replaces the mean by another statistic of a job's iterations (the
    p99: nearest rank)."""
    rng = random.Random(seed)
    of = of or mean

    def stat(b, o):
        r = [of(oj) / of(bj) for bs, os_ in zip(b, o) for bj, oj in zip(bs, os_) if bj and oj]
        return mean(r)
    point = stat(base, other)
    res = lambda runs: [[rng.choices(j, k=len(j)) if j else j for j in run] for run in runs]  # noqa: E731
    ratios = sorted(stat(res(base), res(other)) for _ in range(reps))
    return point, ratios[int((1 - level) / 2 * reps)], ratios[min(reps - 1, int((1 + level) / 2 * reps))]


def iteration_means(d):
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)
    return [j["iteration_mean_ms"] for j in s["jobs"] if j["iteration_ms"]], s


def model_means(summary):
    """Mean iteration per model (over the jobs that train it) of one run."""
    by = {}
    for j in summary["jobs"]:
        if j["iteration_ms"]:
            by.setdefault(j["model"], []).append(mean(steady(j["iteration_ms"])))
    return {m: mean(v) for m, v in by.items()}


def tier_bytes(summaries):
    """Bytes on host links and on leaf-spine links, queues and marks, mean over runs."""
    def one(s):
        f = s["fabric"]
        leaf_to_host = f["switch_egress_bytes"] - f["leaf_spine_bytes"]
        jobs = [j for j in s["jobs"] if j["iteration_ms"]]
        gpus = sum(len(j["workers"]) for j in jobs)
        util = sum(len(j["workers"]) * j["compute_ms"] / mean(steady(j["iteration_ms"]))
                   for j in jobs) / gpus if gpus else 0
        return {"gpu_util": util,
                "host_gb": (f["host_tx_bytes"] + leaf_to_host) / 1e9, "fabric_gb": f["leaf_spine_bytes"] / 1e9,
                "queue_p99_kb": f["queue_bytes"]["p99"] / 1e3, "queue_max_kb": f["queue_bytes"]["max"] / 1e3,
                "ce_marks": f["ce_marked"]}
    per = [one(s) for s in summaries]
    return {k: mean([p[k] for p in per]) for k in per[0]}


def models_of(rows):
    return sorted({m for r in rows for e in r["schemes"].values() for m in e.get("model_ratio", {})})


def self_test():
    rng = random.Random(7)
    a = [[rng.expovariate(1.0) for _ in range(4000)] for _ in range(3)]
    b = [[2 * x for x in g] for g in a]  # exactly twice, flow by flow
    p, lo, hi = bootstrap_ratio(a, b, mean, reps=300)
    assert abs(p - 2) < 1e-9 and lo <= 2 <= hi, (p, lo, hi)
    c = [[rng.expovariate(0.5) for _ in range(4000)] for _ in range(3)]  # twice the mean, independent
    p, lo, hi = bootstrap_ratio(a, c, mean, reps=300)
    assert lo < 2 < hi and hi - lo < 0.3, (p, lo, hi)
    p, lo, hi = bootstrap_ratio(a, c, lambda v: percentile(v, 99), reps=300)
    assert lo < 2 < hi, (p, lo, hi)  # p99 of Exp(mean m) is m ln 100
    assert percentile([1, 2, 3, 4], 50) == 2 and percentile(list(range(1, 101)), 99) == 99
    assert key_of(["--a", "1"]) == key_of(["--a", "1"]) != key_of(["--a", "2"])
    it = [[[rng.uniform(9, 11) for _ in range(50)], [rng.uniform(18, 22) for _ in range(50)]]]
    p, lo, hi = iteration_ratio(it, [[[1.5 * x for x in j] for j in run] for run in it], reps=200)
    assert abs(p - 1.5) < 1e-9 and lo <= 1.5 <= hi, (p, lo, hi)  # 1.5x every iteration of both jobs
    p, _, _ = iteration_ratio(it, [[[1.5 * x for x in j] for j in run] for run in it], reps=50,
                              of=lambda x: percentile(x, 99))
    assert abs(p - 1.5) < 1e-9, p  # and so of every job's p99
    p, _, _ = iteration_ratio([[[1, 2, 3, 10]]], [[[1, 2, 3, 20]]], reps=50, of=lambda x: percentile(x, 99))
    assert abs(p - 2) < 1e-9, p  # the p99 of four iterations is the largest
    p, lo, hi = iteration_ratio(it, [[[rng.uniform(13.5, 16.5) for _ in range(50)],
                                      [rng.uniform(27, 33) for _ in range(50)]]], reps=200)
    assert lo < 1.5 < hi and hi - lo < 0.1, (p, lo, hi)
    print("netsim_study: self-test passed (bootstrap ratios of known samples, percentiles, run keys)")


# ------------------------------------------------------------------ report

def report(out, cells, schemes, seeds, runs, wall_total):
    rows = []
    for cell in cells:
        per = {}
        cell_seeds = cell.get("seeds", seeds)
        for name, sargs in cell.get("schemes", schemes).items():
            dirs = [runs.get(key_of(run_args(cell, sargs, s))) for s in cell_seeds]
            dirs = [d for d in dirs if d and os.path.exists(os.path.join(d, "summary.json"))]
            if len(dirs) != len(cell_seeds):
                continue
            sums = [iteration_means(d)[1] for d in dirs]
            per[name] = {"short": [short_slowdowns(d) for d in dirs],
                         "iter": [iteration_lists(sm) for sm in sums],
                         "models": [model_means(sm) for sm in sums],
                         "tiers": tier_bytes(sums),
                         "finished": all(sm["finished"] for sm in sums)}
        if "panama" not in per:
            continue
        row = {"cell": cell["name"] + (f" (seeds {' '.join(map(str, cell_seeds))})" if "seeds" in cell else ""),
               "axes": cell.get("axes"), "seeds": cell_seeds, "schemes": {}}
        base = per["panama"]
        for name, v in per.items():
            entry = {"short_flows": sum(len(g) for g in v["short"]),
                     "short_mean": mean([x for g in v["short"] for x in g]),
                     "short_p99": percentile([x for g in v["short"] for x in g], 99),
                     "finished": v["finished"], "tiers": v["tiers"]}
            if name != "panama" and entry["short_flows"] and sum(len(g) for g in base["short"]):
                entry["mean_ratio"] = bootstrap_ratio(base["short"], v["short"], mean)
                entry["p99_ratio"] = bootstrap_ratio(base["short"], v["short"], lambda x: percentile(x, 99))
            if name != "panama":
                # Iterations: per seed and job, ratio to PANAMA's mean iteration, paired.
                entry["iteration_ratio"] = iteration_ratio(base["iter"], v["iter"])
                entry["iteration_p99_ratio"] = iteration_ratio(base["iter"], v["iter"],
                                                               of=lambda x: percentile(x, 99))
                # Per model: mean over seeds of (baseline / PANAMA) of the model's mean iteration.
                entry["model_ratio"] = {
                    m: mean([o[m] / b[m] for o, b in zip(v["models"], base["models"]) if m in o and m in b])
                    for m in sorted({m for b in base["models"] for m in b})}
            row["schemes"][name] = entry
        rows.append(row)
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"seeds": seeds, "schemes": schemes, "rows": rows, "wall_s": wall_total}, f, indent=1)
    fmt = lambda t: f"{t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]"  # noqa: E731
    lines = [f"Seeds {' '.join(map(str, seeds))}; ratios are baseline / PANAMA (above 1: PANAMA better), "
             f"point estimate with a 90% bootstrap interval (resampled within each seed); short flows: "
             f"under 100 KB, pooled over the seeds.", "",
             "| cell | baseline | short flows (baseline / PANAMA) | mean FCT ratio | p99 FCT ratio | "
             "iteration time ratio | p99 iteration time ratio |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        p = row["schemes"]["panama"]
        for name, e in row["schemes"].items():
            if name == "panama":
                continue
            lines.append(f"| {row['cell']} | {name} | {e['short_flows']} / {p['short_flows']} | "
                         f"{fmt(e['mean_ratio']) if 'mean_ratio' in e else '-'} | "
                         f"{fmt(e['p99_ratio']) if 'p99_ratio' in e else '-'} | "
                         f"{fmt(e['iteration_ratio']) if 'iteration_ratio' in e else '-'} | "
                         f"{fmt(e['iteration_p99_ratio']) if 'iteration_p99_ratio' in e else '-'} |"
                         + ("" if e["finished"] and p["finished"] else " (a run did not finish)"))
    lines += ["", "Training time per model, baseline / PANAMA (mean steady iteration: the first of each job left out; "
              "mean of the per-seed ratios):", "",
              "| cell | baseline | " + " | ".join(models_of(rows)) + " |",
              "| --- | --- | " + " | ".join("---" for _ in models_of(rows)) + " |"]
    for row in rows:
        for name, e in row["schemes"].items():
            if name != "panama" and "model_ratio" in e:
                lines.append(f"| {row['cell']} | {name} | " + " | ".join(
                    f"{e['model_ratio'][m]:.2f}" if m in e["model_ratio"] else "-" for m in models_of(rows)) + " |")
    lines += ["", "GPU utilisation (compute time / iteration time, averaged over jobs weighted by workers), "
              "bytes per tier and queues (per run, mean over seeds): host links (both directions), "
              "leaf-spine links (both directions), p99 and largest sampled output queue, CE marks:", "",
              "| cell | scheme | GPU util. | host-link GB | leaf-spine GB | queue p99 KB | queue max KB | CE marks |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        for name, e in row["schemes"].items():
            t = e["tiers"]
            lines.append(f"| {row['cell']} | {name} | {t['gpu_util']:.1%} | {t['host_gb']:.2f} | "
                         f"{t['fabric_gb']:.2f} | {t['queue_p99_kb']:.0f} | {t['queue_max_kb']:.0f} | "
                         f"{t['ce_marks']:.0f} |")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(out, rows)


def plot(out, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    import textwrap
    # One panel per cell, a horizontal bar per variant the cell has: grids
    # whose cells compare different variants stay readable.
    for metric, fname, title in (("p99_ratio", "fct_ratio.png", "short-flow p99 FCT, baseline / PANAMA"),
                                 ("iteration_ratio", "iteration_ratio.png", "iteration time, baseline / PANAMA")):
        panels = [(r, [(n, e[metric]) for n, e in r["schemes"].items() if n != "panama" and e.get(metric)])
                  for r in rows]
        panels = [(r, bars) for r, bars in panels if bars]
        if not panels:
            continue
        ncols = min(3, len(panels))
        nrows = (len(panels) + ncols - 1) // ncols
        tallest = max(len(bars) for _, bars in panels)
        fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, (1.0 + 0.32 * tallest) * nrows + 0.6),
                                 squeeze=False)
        for k, (r, bars) in enumerate(panels):
            ax = axes[k // ncols][k % ncols]
            ys = list(range(len(bars)))[::-1]
            vals = [v[0] for _, v in bars]
            errs = [[v[0] - v[1] for _, v in bars], [v[2] - v[0] for _, v in bars]]
            ax.barh(ys, vals, xerr=errs, capsize=3, color=["tab:red" if v > 1 else "tab:green" for v in vals])
            ax.axvline(1.0, color="black", linewidth=0.8)
            ax.set_ylim(-0.7, max(len(bars), 3) - 0.3)  # a lone bar as thick as one among three
            ax.set_yticks(ys)
            ax.set_yticklabels([n for n, _ in bars], fontsize=8)
            ax.set_title("\n".join(textwrap.wrap(r["cell"], 48)), fontsize=8)
            ax.tick_params(axis="x", labelsize=8)
        for k in range(len(panels), nrows * ncols):
            axes[k // ncols][k % ncols].axis("off")
        fig.suptitle(title + " (90% bootstrap intervals; above 1: PANAMA better)", fontsize=10)
        fig.tight_layout()
        fig.savefig(os.path.join(out, fname), dpi=110)
        plt.close(fig)
    plot_maps(plt, out, rows)


def plot_maps(plt, out, rows):
    """The regime map: per baseline and metric, a matrix of (load, ML share)
    x (oversubscription, ring transport) cells annotated with the ratio and
    its interval; the per-model training-time ratios; bytes per tier."""
    names = sorted({n for r in rows for n in r["schemes"] if n != "panama"})
    mapped = [r for r in rows if r.get("axes")]
    if mapped and names:
        ys = sorted({(r["axes"]["load"], r["axes"]["ml"]) for r in mapped})
        xs = sorted({(r["axes"]["over"], r["axes"]["tcp"]) for r in mapped})
        metrics = (("mean_ratio", "short-flow mean FCT"), ("p99_ratio", "short-flow p99 FCT"),
                   ("iteration_ratio", "iteration time"))
        fig, axes = plt.subplots(len(names), len(metrics), figsize=(5.2 * len(metrics), 3.6 * len(names)),
                                 squeeze=False)
        for i, n in enumerate(names):
            for k, (metric, title) in enumerate(metrics):
                ax = axes[i][k]
                m = [[float("nan")] * len(xs) for _ in ys]
                for r in mapped:
                    e = r["schemes"].get(n, {}).get(metric)
                    if not e:
                        continue
                    yi = ys.index((r["axes"]["load"], r["axes"]["ml"]))
                    xi = xs.index((r["axes"]["over"], r["axes"]["tcp"]))
                    m[yi][xi] = e[0]
                    ax.text(xi, yi, f"{e[0]:.2f}\n[{e[1]:.2f}, {e[2]:.2f}]", ha="center", va="center", fontsize=7)
                im = ax.imshow(m, cmap="RdBu_r", vmin=0.5, vmax=1.5)
                ax.set_xticks(range(len(xs)))
                ax.set_xticklabels([f"{o}\nring {t}" for o, t in xs], fontsize=7)
                ax.set_yticks(range(len(ys)))
                ax.set_yticklabels([f"load {l}\nML {s:.0%}" for l, s in ys], fontsize=7)
                ax.set_title(f"{n} / PANAMA: {title}", fontsize=9)
        fig.colorbar(im, ax=axes, shrink=0.6, label="baseline / PANAMA (above 1: PANAMA better)")
        fig.savefig(os.path.join(out, "regime_map.png"), dpi=120)
        plt.close(fig)
    models = models_of(rows)
    if models and names:
        fig, axes = plt.subplots(1, len(names), figsize=(2.2 + 1.1 * len(models) * len(names), 0.4 * len(rows) + 1.8),
                                 squeeze=False)
        for i, n in enumerate(names):
            ax = axes[0][i]
            m = [[r["schemes"].get(n, {}).get("model_ratio", {}).get(x, float("nan")) for x in models] for r in rows]
            ax.imshow(m, cmap="RdBu_r", vmin=0.5, vmax=1.5, aspect="auto")
            for yi, row in enumerate(m):
                for xi, v in enumerate(row):
                    if v == v:
                        ax.text(xi, yi, f"{v:.2f}", ha="center", va="center", fontsize=7)
            ax.set_xticks(range(len(models)))
            ax.set_xticklabels(models, rotation=30, ha="right", fontsize=7)
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels([r["cell"] for r in rows] if i == 0 else [], fontsize=7)
            ax.set_title(f"iteration time per model, {n} / PANAMA", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "model_ratio.png"), dpi=120)
        plt.close(fig)
    # Bytes per tier: a panel per cell, a stacked bar per variant (host
    # links, then leaf-spine links), its GPU utilisation written beside it.
    import textwrap
    ncols = min(3, len(rows))
    nrows = (len(rows) + ncols - 1) // ncols
    tallest = max(len(r["schemes"]) for r in rows)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, (1.0 + 0.32 * tallest) * nrows + 0.8),
                             squeeze=False)
    for k, r in enumerate(rows):
        ax = axes[k // ncols][k % ncols]
        names_k = list(r["schemes"])
        ys = list(range(len(names_k)))[::-1]
        host = [r["schemes"][n]["tiers"]["host_gb"] for n in names_k]
        fab = [r["schemes"][n]["tiers"]["fabric_gb"] for n in names_k]
        ax.barh(ys, host, color="tab:blue", alpha=0.5, label="host links" if k == 0 else None)
        ax.barh(ys, fab, left=host, color="tab:blue", label="leaf-spine links" if k == 0 else None)
        for y, h, f, n in zip(ys, host, fab, names_k):
            ax.text(h + f, y, f" GPU {r['schemes'][n]['tiers']['gpu_util']:.1%}", va="center", fontsize=7)
        ax.set_ylim(-0.7, max(len(names_k), 3) - 0.3)
        ax.set_yticks(ys)
        ax.set_yticklabels(names_k, fontsize=8)
        ax.set_xlim(0, 1.3 * max(h + f for h, f in zip(host, fab)))
        ax.set_xlabel("GB per run", fontsize=8)
        ax.set_title("\n".join(textwrap.wrap(r["cell"], 48)), fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
    for k in range(len(rows), nrows * ncols):
        axes[k // ncols][k % ncols].axis("off")
    fig.suptitle("bytes per tier (mean over seeds) and GPU utilisation", fontsize=10)
    fig.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "tiers.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", default="quick", help="quick, regime, confirm, contention or a cells JSON file")
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES),
                    help="names of " + ", ".join(SCHEMES) + " or NAME=ARGS")
    ap.add_argument("--out", default="out/study")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build"))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--reverse", action="store_true",
                    help="run the missing runs last first (a second process on the same --out meets the first "
                         "in the middle)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return 0
    schemes = {}
    for s in a.schemes:
        name, _, args = s.partition("=")
        if not args and name not in SCHEMES:
            sys.exit(f"netsim_study: unknown scheme '{name}' (one of {', '.join(SCHEMES)}, or NAME=ARGS)")
        schemes[name] = args or SCHEMES[name]
    if "panama" not in schemes:
        sys.exit("netsim_study: the ratios are against panama: include it in --schemes")
    cells = grid(a.grid)
    os.makedirs(a.out, exist_ok=True)
    exe = os.path.join(ROOT, a.build_dir, "sim/network/panama-netsim")
    runs, todo = {}, []
    for cell in cells:
        for sargs in cell.get("schemes", schemes).values():
            for seed in cell.get("seeds", a.seeds):  # a cell may name its own seeds
                args = run_args(cell, sargs, seed)
                d = os.path.join(a.out, "runs", key_of(args))
                runs[key_of(args)] = d
                if not os.path.exists(os.path.join(d, "summary.json")) and args not in todo:
                    todo.append(args)  # a run two cells share (PANAMA's, whatever the ring's transport) once
    total = len(runs)
    print(f"netsim_study: {len(cells)} cells x {len(schemes)} schemes x {len(a.seeds)} seeds = {total} runs, "
          f"{total - len(todo)} cached, {len(todo)} to run", flush=True)
    t0 = time.time()
    if a.reverse:
        todo.reverse()
    if todo and not a.report_only:
        if not os.access(exe, os.X_OK):
            sys.exit(f"netsim_study: no {exe} (cmake --build {a.build_dir} --target panama-netsim)")
        done = [0]

        def one(args):
            d, wall, _ = run_one(exe, a.out, args, print)
            done[0] += 1
            print(f"  [{done[0]}/{len(todo)}] {wall:.0f} s: {' '.join(args[-12:])}", flush=True)

        with ThreadPoolExecutor(max_workers=max(1, a.parallel)) as pool:
            list(pool.map(one, todo))
    wall = time.time() - t0
    print(f"netsim_study: {len(todo) if not a.report_only else 0} runs in {wall:.0f} s", flush=True)
    report(a.out, cells, schemes, a.seeds, runs, wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
