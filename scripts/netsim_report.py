#!/usr/bin/python3
"""Table and plots of a scripts/reproduce.sh run.

Reads <out>/<scheme>_load<L>/summary.json (panama-netsim outputs) and writes
<out>/report.md (table + ratios against PANAMA), <out>/report.json and
<out>/fct_small.png, <out>/training_time.png, <out>/fabric_bytes.png.
Usage: /usr/bin/python3 scripts/netsim_report.py <out>
"""
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SCHEMES = ["panama", "ring", "single-tree", "fixed-window"]
PAPER = "paper: short-flow FCT p99 up to 4.5x, mean ~2x; training time 1.25-1.34x (PANAMA vs baseline)"


def load_runs(out):
    runs = {}
    for path in glob.glob(os.path.join(out, "*_load*", "summary.json")):
        m = re.match(r"(.+)_load([0-9.]+)$", os.path.basename(os.path.dirname(path)))
        if not m:
            continue
        with open(path) as f:
            runs[(m.group(1), float(m.group(2)))] = json.load(f)
    return runs


def row(s):
    fct = s["background"]["fct_slowdown"]
    jobs = s["jobs"]
    return {
        "small_mean": fct["small_lt_100KB"]["mean"],
        "small_p99": fct["small_lt_100KB"]["p99"],
        "small_count": fct["small_lt_100KB"]["count"],
        "all_mean": fct["all"]["mean"],
        "all_p99": fct["all"]["p99"],
        "measured": s["background"]["flows_measured"],
        "unfinished": s["background"]["measured_unfinished"],
        "iter_ms": [j["iteration_mean_ms"] for j in jobs],
        "iters": [j["iterations_done"] for j in jobs],
        "models": [j["model"] for j in jobs],
        "exact": "n/a" if all(j["bit_exact"] is None for j in jobs) else all(j["bit_exact"] in (True, None) for j in jobs),
        "leaf_spine_gb": s["fabric"]["leaf_spine_bytes"] / 1e9,
        "drops": s["fabric"]["drops"],
        "engine_drops": s["engine_drops_total"],
        "sim_ms": s["sim_time_ms"],
        "wall_s": s["performance"]["wall_s"],
        "finished": s["finished"],
        "pauses": s.get("pfc", {}).get("pause_frames", 0),
        "paused_us": s.get("pfc", {}).get("paused_us", 0.0),
    }


def exact_text(e):
    return e if e == "n/a" else ("yes" if e else "NO")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: netsim_report.py <reproduce output folder>")
    out = sys.argv[1]
    runs = load_runs(out)
    if not runs:
        sys.exit(f"netsim_report.py: no <scheme>_load<L>/summary.json under {out}")
    loads = sorted({load for (_, load) in runs})
    schemes = [s for s in SCHEMES if any((s, l) in runs for l in loads)]
    rows = {k: row(v) for k, v in runs.items()}
    any_run = next(iter(runs.values()))
    opt = any_run["options"]

    if opt.get("topology") == "fat-tree":
        shape = f"fat-tree k={opt['k']}: {opt['racks']} edges x {opt['hosts_per_rack']}"
    else:
        shape = f"{opt['racks']} racks x {opt['hosts_per_rack']}, {opt['spines']} spines"
    lossless = any(v["options"].get("lossless") for v in runs.values())
    queues = (f"lossless (PFC XOFF {opt['pfc_xoff_kb']} KB, XON {opt['pfc_xon_kb']} KB per ingress port and class)"
              if lossless else f"buffer {opt['buffer_kb']} KB/port")
    lines = [
        f"Set-up: {opt['hosts']} hosts ({shape}), "
        f"hosts {opt['host_gbps']} Gb/s, fabric {opt['fabric_gbps']} Gb/s, K {opt['ecn_k_kb']} KB, "
        f"{queues}; {opt['jobs']} jobs x {opt['workers_per_job']} workers "
        f"({', '.join(opt['models'])}), scale {opt['scale']}, window {opt['duration_ms']} ms, seed {opt['seed']}.",
        "",
        "| load | scheme | short-flow FCT slowdown mean | p99 | all flows mean | p99 | flows (short) | "
        "mean iteration per job (ms) | switch-to-switch GB | drops | engine drops | bit-exact | sim ms | wall s |"
        + (" PFC pauses | paused us |" if lossless else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if lossless else ""),
    ]
    for load in loads:
        for sc in schemes:
            r = rows.get((sc, load))
            if r is None:
                continue
            its = " / ".join(f"{m:.2f}" for m in r["iter_ms"])
            lines.append(
                f"| {load} | {sc} | {r['small_mean']:.2f} | {r['small_p99']:.2f} | {r['all_mean']:.2f} | "
                f"{r['all_p99']:.2f} | {r['measured']} ({r['small_count']}) | {its} | {r['leaf_spine_gb']:.2f} | "
                f"{r['drops']} | {r['engine_drops']} | {exact_text(r['exact'])} | {r['sim_ms']:.1f} | "
                f"{r['wall_s']:.0f} |" + (f" {r['pauses']} | {r['paused_us']:.0f} |" if lossless else ""))
    lines += ["", "Ratios baseline / PANAMA (above 1: PANAMA better). " + PAPER + ".", "",
              "| load | baseline | short-flow FCT mean | short-flow FCT p99 | training time (per job) |",
              "|---|---|---|---|---|"]
    ratios = []
    for load in loads:
        p = rows.get(("panama", load))
        if p is None:
            continue
        for sc in schemes:
            if sc == "panama" or (sc, load) not in rows:
                continue
            b = rows[(sc, load)]
            per_job = [bi / pi for bi, pi in zip(b["iter_ms"], p["iter_ms"]) if pi > 0]
            rr = {"load": load, "baseline": sc,
                  "fct_mean": b["small_mean"] / p["small_mean"] if p["small_mean"] else 0,
                  "fct_p99": b["small_p99"] / p["small_p99"] if p["small_p99"] else 0,
                  "training": per_job}
            ratios.append(rr)
            lines.append(f"| {load} | {sc} | {rr['fct_mean']:.2f} | {rr['fct_p99']:.2f} | "
                         + " / ".join(f"{x:.2f}" for x in per_job) + " |")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"rows": {f"{k[0]}@{k[1]}": v for k, v in rows.items()}, "ratios": ratios}, f, indent=2)
    print("\n".join(lines))

    colors = {"panama": "tab:green", "ring": "tab:red", "single-tree": "tab:orange", "fixed-window": "tab:blue"}
    width = 0.8 / len(schemes)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, title in [(axes[0], "small_mean", "mean"), (axes[1], "small_p99", "99th percentile")]:
        for i, sc in enumerate(schemes):
            xs = [li + i * width for li in range(len(loads)) if (sc, loads[li]) in rows]
            ys = [rows[(sc, l)][key] for l in loads if (sc, l) in rows]
            ax.bar(xs, ys, width, label=sc, color=colors[sc])
        ax.set_xticks([li + width * (len(schemes) - 1) / 2 for li in range(len(loads))])
        ax.set_xticklabels([f"load {l}" for l in loads])
        ax.set_ylabel("FCT slowdown (FCT / ideal)")
        ax.set_title(f"short flows (< 100 KB): {title}")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fct_small.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, sc in enumerate(schemes):
        xs, ys = [], []
        for li, l in enumerate(loads):
            if (sc, l) in rows and ("panama", l) in rows:
                b, p = rows[(sc, l)]["iter_ms"], rows[("panama", l)]["iter_ms"]
                xs.append(li + i * width)
                ys.append(sum(bi / pi for bi, pi in zip(b, p)) / len(p))
        ax.bar(xs, ys, width, label=sc, color=colors[sc])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([li + width * (len(schemes) - 1) / 2 for li in range(len(loads))])
    ax.set_xticklabels([f"load {l}" for l in loads])
    ax.set_ylabel("training time / PANAMA's (mean over jobs)")
    ax.set_title("time per training iteration, relative to PANAMA")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "training_time.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, sc in enumerate(schemes):
        xs = [li + i * width for li in range(len(loads)) if (sc, loads[li]) in rows]
        ys = [rows[(sc, l)]["leaf_spine_gb"] for l in loads if (sc, l) in rows]
        ax.bar(xs, ys, width, label=sc, color=colors[sc])
    ax.set_xticks([li + width * (len(schemes) - 1) / 2 for li in range(len(loads))])
    ax.set_xticklabels([f"load {l}" for l in loads])
    ax.set_ylabel("GB on switch-to-switch links (whole run)")
    ax.set_title("bytes carried by the fabric core")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fabric_bytes.png"), dpi=110)


if __name__ == "__main__":
    main()
