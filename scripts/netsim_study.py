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
arguments]}; schemes are given with --schemes as NAME=ARGS (e.g.
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
    if name == "regime":
        # 64 hosts (8 racks of 8, 10 Gbit/s): load x ML share of the hosts x
        # oversubscription (4 spines at 20 or at 5 Gbit/s) x the baseline's
        # transport; H100 bf16 workloads, jobs packed into racks.
        cells = []
        for load in (0.3, 0.7):
            for share in (0.5, 1.0):
                for over, fabric in (("1:1", 20), ("4:1", 5)):
                    for tcp in ("dctcp", "cubic"):
                        jobs = int(8 * share)
                        args = (f"--racks 8 --hosts-per-rack 8 --spines 4 --host-gbps 10 --fabric-gbps {fabric} "
                                f"--jobs {jobs} --workers-per-job 8 --placement packed --workload h100 "
                                f"--models bert-large,resnet50,vgg16,gpt2-medium --dtype bf16 --scale 0.01 "
                                f"--iterations 5 --load {load} --min-short-flows 1000")
                        cells.append({"name": f"load {load}, ML {share:.0%}, {over}, ring {tcp}",
                                      "args": shlex.split(args), "ring_tcp": tcp})
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


def iteration_means(d):
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)
    return [j["iteration_mean_ms"] for j in s["jobs"] if j["iteration_ms"]], s


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
    print("netsim_study: self-test passed (bootstrap ratios of known samples, percentiles, run keys)")


# ------------------------------------------------------------------ report

def report(out, cells, schemes, seeds, runs, wall_total):
    rows = []
    for cell in cells:
        per = {}
        for name, sargs in schemes.items():
            dirs = [runs.get(key_of(run_args(cell, sargs, s))) for s in seeds]
            dirs = [d for d in dirs if d and os.path.exists(os.path.join(d, "summary.json"))]
            if len(dirs) != len(seeds):
                continue
            per[name] = {"short": [short_slowdowns(d) for d in dirs],
                         "iter": [iteration_means(d)[0] for d in dirs],
                         "finished": all(iteration_means(d)[1]["finished"] for d in dirs)}
        if "panama" not in per:
            continue
        row = {"cell": cell["name"], "schemes": {}}
        base = per["panama"]
        for name, v in per.items():
            entry = {"short_flows": sum(len(g) for g in v["short"]),
                     "short_mean": mean([x for g in v["short"] for x in g]),
                     "short_p99": percentile([x for g in v["short"] for x in g], 99),
                     "finished": v["finished"]}
            if name != "panama" and entry["short_flows"] and sum(len(g) for g in base["short"]):
                entry["mean_ratio"] = bootstrap_ratio(base["short"], v["short"], mean)
                entry["p99_ratio"] = bootstrap_ratio(base["short"], v["short"], lambda x: percentile(x, 99))
                # Iterations: per seed the mean over jobs, ratio to PANAMA's, paired.
                ratios = [mean(o) / mean(b) for o, b in zip(v["iter"], base["iter"]) if o and b]
                entry["iteration_ratio"] = bootstrap_ratio([[1.0] * len(ratios)], [ratios], mean)
            row["schemes"][name] = entry
        rows.append(row)
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"seeds": seeds, "schemes": schemes, "rows": rows, "wall_s": wall_total}, f, indent=1)
    fmt = lambda t: f"{t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]"  # noqa: E731
    lines = [f"Seeds {' '.join(map(str, seeds))}; ratios are baseline / PANAMA (above 1: PANAMA better), "
             f"point estimate with a 90% bootstrap interval (resampled within each seed); short flows: "
             f"under 100 KB, pooled over the seeds.", "",
             "| cell | baseline | short flows (baseline / PANAMA) | mean FCT ratio | p99 FCT ratio | "
             "iteration time ratio |", "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        p = row["schemes"]["panama"]
        for name, e in row["schemes"].items():
            if name == "panama":
                continue
            lines.append(f"| {row['cell']} | {name} | {e['short_flows']} / {p['short_flows']} | "
                         f"{fmt(e['mean_ratio']) if 'mean_ratio' in e else '-'} | "
                         f"{fmt(e['p99_ratio']) if 'p99_ratio' in e else '-'} | "
                         f"{fmt(e['iteration_ratio']) if 'iteration_ratio' in e else '-'} |"
                         + ("" if e["finished"] and p["finished"] else " (a run did not finish)"))
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
    for metric, fname, title in (("p99_ratio", "fct_ratio.png", "short-flow p99 FCT, baseline / PANAMA"),
                                 ("iteration_ratio", "iteration_ratio.png", "iteration time, baseline / PANAMA")):
        names = sorted({n for r in rows for n in r["schemes"] if n != "panama"})
        if not rows or not names:
            continue
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows) * len(names)), 4))
        width = 0.8 / len(names)
        for i, n in enumerate(names):
            xs, ys, errs = [], [], [[], []]
            for j, r in enumerate(rows):
                e = r["schemes"].get(n, {}).get(metric)
                if e:
                    xs.append(j + i * width)
                    ys.append(e[0])
                    errs[0].append(e[0] - e[1])
                    errs[1].append(e[2] - e[0])
            ax.bar(xs, ys, width, yerr=errs, capsize=3, label=n)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
        ax.set_xticklabels([r["cell"] for r in rows], rotation=30, ha="right", fontsize=8)
        ax.set_title(title + " (90% bootstrap intervals)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, fname), dpi=120)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", default="quick", help="quick, regime or a cells JSON file")
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--schemes", nargs="+", default=list(SCHEMES),
                    help="names of " + ", ".join(SCHEMES) + " or NAME=ARGS")
    ap.add_argument("--out", default="out/study")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build"))
    ap.add_argument("--report-only", action="store_true")
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
        for sargs in schemes.values():
            for seed in a.seeds:
                args = run_args(cell, sargs, seed)
                d = os.path.join(a.out, "runs", key_of(args))
                runs[key_of(args)] = d
                if not os.path.exists(os.path.join(d, "summary.json")):
                    todo.append(args)
    total = len(runs)
    print(f"netsim_study: {len(cells)} cells x {len(schemes)} schemes x {len(a.seeds)} seeds = {total} runs, "
          f"{total - len(todo)} cached, {len(todo)} to run", flush=True)
    t0 = time.time()
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
