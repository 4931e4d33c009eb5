#!/usr/bin/env python3
"""Logic depth of register-to-register paths in a Yosys netlist.

Reads the JSON netlist Yosys writes after `synth_xilinx -family xcup
-flatten` (scripts/yosys-synth.sh) and finds the deepest combinational paths
between sequential elements. How a path is counted:

  LUT1..LUT6, LUT6_2, INV  one level each
  MUXF7 / MUXF8 / MUXF9    one level each (conservative: in the fabric they
                           are cheaper than a LUT, but they do add delay)
  CARRY4 / CARRY8          a run of consecutive carry cells on a path counts
                           as one level (the dedicated carry chain is much
                           faster than a LUT); the number of carry cells is
                           reported separately
  LUT RAM (RAM32M, RAM64M, RAM64X1D, ...)
                           its asynchronous read (address to data out) counts
                           as one level; its write side ends a path

levels = LUT + MUXF + carry chains. Paths start at flip-flop outputs
(FD*), block RAM / UltraRAM / DSP / SRL outputs and LUT-RAM data, and end at
their inputs. Module ports are not registers: paths from inputs or to
outputs are reported apart (they depend on what surrounds the engine).

Usage: rtl_logic_depth.py NETLIST.json [--top N] [--limit L]
Exit status 1 when --limit is given and some register-to-register path has
more than L levels.
"""
import argparse
import collections
import json
import sys

SEQ_PREFIXES = ("FD", "RAMB", "URAM", "DSP48", "SRL", "FIFO")
LUTRAM_PREFIXES = ("RAM32", "RAM64", "RAM128", "RAM256", "RAM512")


def kind_of(t):
    if t.startswith("LUT") or t == "INV":
        return "lut"
    if t.startswith("MUXF"):
        return "muxf"
    if t.startswith("CARRY"):
        return "carry"
    if t.startswith(LUTRAM_PREFIXES):
        return "lutram"
    if t.startswith(SEQ_PREFIXES):
        return "seq"
    if t in ("BUFG", "IBUF", "OBUF", "BUFGCE", "VCC", "GND"):
        return "buf"
    return "unknown"


def lutram_read_port(port):
    """Inputs of a LUT RAM that reach its data outputs combinationally."""
    if port.startswith("ADDR") or port.startswith("DPRA"):
        return True
    return port == "A" or (port.startswith("A") and port[1:].isdigit())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("netlist")
    ap.add_argument("--top", type=int, default=10, help="paths to list (distinct endpoints)")
    ap.add_argument("--limit", type=int, default=None, help="fail when a path has more levels")
    args = ap.parse_args()

    with open(args.netlist) as f:
        design = json.load(f)
    mods = design["modules"]
    top = next((n for n, m in mods.items() if m.get("attributes", {}).get("top")), None)
    if top is None:
        top = max(mods, key=lambda n: len(mods[n].get("cells", {})))
    mod = mods[top]

    # Readable names for nets (prefer user names over $-generated ones).
    net_name = {}
    for name, info in mod.get("netnames", {}).items():
        hidden = info.get("hide_name", 0) or name.startswith("$")
        for i, b in enumerate(info["bits"]):
            if isinstance(b, str):
                continue
            label = name if len(info["bits"]) == 1 else f"{name}[{i}]"
            old = net_name.get(b)
            if old is None or (old[1] and not hidden):
                net_name[b] = (label, hidden)

    port_in, port_out = set(), set()
    for pname, p in mod.get("ports", {}).items():
        for b in p["bits"]:
            if isinstance(b, int):
                (port_in if p["direction"] == "input" else port_out).add(b)

    # Combinational edges: net -> list of (cell, kind, out nets).
    fanout = collections.defaultdict(list)
    driver_kind = {}
    starts = set()  # nets driven by sequential elements
    ends = set()  # nets read by sequential elements
    end_reg = {}  # net -> an output net of a sequential element that reads it
    unknown = collections.Counter()
    cells = mod["cells"]
    for cname, c in cells.items():
        t = c["type"]
        k = kind_of(t)
        dirs = c.get("port_directions", {})
        ins, outs = [], []
        for port, bits in c["connections"].items():
            d = dirs.get(port)
            if d is None:
                d = "output" if port in ("O", "O5", "O6", "Q", "CO", "DO", "SPO", "DPO") or port.startswith("DO") else "input"
            nets = [b for b in bits if isinstance(b, int)]
            (outs if d == "output" else ins).append((port, nets))
        if k in ("seq", "unknown", "buf"):
            if k == "unknown":
                unknown[t] += 1
            q = next((n for _, nets in outs for n in nets), None)
            for _, nets in outs:
                starts.update(nets)
            for _, nets in ins:
                ends.update(nets)
                for n in nets:
                    if q is not None:
                        end_reg.setdefault(n, q)
            continue
        out_nets = [n for _, nets in outs for n in nets]
        for n in out_nets:
            driver_kind[n] = k
        if k == "lutram":
            starts.update(out_nets)  # data written earlier
            for port, nets in ins:
                if lutram_read_port(port):
                    for n in nets:
                        fanout[n].append((cname, k, out_nets))
                else:
                    ends.update(nets)
            continue
        for _, nets in ins:
            for n in nets:
                fanout[n].append((cname, k, out_nets))

    # Longest path by dynamic programming in topological order.
    indeg = collections.Counter()
    for n, lst in fanout.items():
        for _, _, outs in lst:
            for o in outs:
                indeg[o] += 1
    best = {}  # net -> (levels, luts, muxf, carry_cells, from_net, via_cell, start_net)
    for n in starts | port_in:
        best[n] = (0, 0, 0, 0, None, None, n)
    queue = collections.deque(n for n in list(fanout) if indeg[n] == 0)
    seen = 0
    while queue:
        n = queue.popleft()
        seen += 1
        cur = best.get(n)
        for cname, k, outs in fanout[n]:
            if cur is not None:
                lv, lu, mx, ca, _, _, st = cur
                if k == "lut" or k == "lutram":
                    cand = (lv + 1, lu + 1, mx, ca)
                elif k == "muxf":
                    cand = (lv + 1, lu, mx + 1, ca)
                else:  # carry: free when continuing a chain
                    step = 0 if driver_kind.get(n) == "carry" else 1
                    cand = (lv + step, lu, mx, ca + 1)
            for o in outs:
                if cur is not None and (o not in best or best[o][:4] < cand):
                    best[o] = cand + (n, cname, st)
                indeg[o] -= 1
                if indeg[o] == 0:
                    queue.append(o)
    loops = sum(1 for n, d in indeg.items() if d > 0)

    def label(n):
        return net_name.get(n, (f"net{n}", True))[0]

    def trace(n):
        cells_on = []
        while n is not None and best.get(n) and best[n][5] is not None:
            cells_on.append(cells[best[n][5]]["type"])
            n = best[n][4]
        return list(reversed(cells_on))

    reg_paths, io_paths = [], []
    for n in ends | port_out:
        if n not in best:
            continue
        lv, lu, mx, ca, _, _, st = best[n]
        from_port = st in port_in and st not in starts
        to_port = n in port_out and n not in ends
        (io_paths if from_port or to_port else reg_paths).append((lv, lu, mx, ca, st, n))
    reg_paths.sort(reverse=True)
    io_paths.sort(reverse=True)

    print(f"netlist {args.netlist}: top {top}, {len(cells)} cells")
    if unknown:
        print("cells treated as path boundaries (not recognised): " +
              ", ".join(f"{t} x{c}" for t, c in unknown.most_common()))
    if loops:
        print(f"warning: {loops} nets on combinational loops were left out")
    if not reg_paths:
        print("no register-to-register paths found")
        return 0
    worst = reg_paths[0]
    print(f"deepest register-to-register path: {worst[0]} levels "
          f"({worst[1]} LUT, {worst[2]} MUXF, {worst[3]} CARRY cells)")
    print(f"max LUT cells on any register-to-register path: {max(p[1] for p in reg_paths)}")
    hist = collections.Counter(p[0] for p in reg_paths)
    print("endpoints by levels: " + ", ".join(f"{lv}:{hist[lv]}" for lv in sorted(hist, reverse=True)))
    print(f"top {args.top} register-to-register paths (levels LUT/MUXF/CARRY: start -> end):")
    for lv, lu, mx, ca, st, en in reg_paths[:args.top]:
        reg = f" (register {label(end_reg[en])})" if en in end_reg else ""
        print(f"  {lv:3d}  {lu}/{mx}/{ca}: {label(st)} -> {label(en)}{reg}")
        print(f"        via {' '.join(trace(en))}")
    if args.limit is not None:
        # Where the paths over the limit are: grouped by the module (first
        # hierarchy level of the flattened name) of their start and end.
        def module_of(name):
            return name.split(".", 1)[0] if "." in name else "(top)"
        groups = {}
        for lv, lu, mx, ca, st, en in reg_paths:
            if lv <= args.limit:
                break
            key = (module_of(label(st)), module_of(label(end_reg.get(en, en))))
            cnt, deepest = groups.get(key, (0, 0))
            groups[key] = (cnt + 1, max(deepest, lv))
        if groups:
            print(f"endpoints over {args.limit} levels by start -> end module (count, deepest):")
            for (a, b), (cnt, deepest) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
                print(f"  {a} -> {b}: {cnt} endpoints, {deepest} levels")
    if io_paths:
        lv, lu, mx, ca, st, en = io_paths[0]
        print(f"deepest path from or to a module port: {lv} levels: {label(st)} -> {label(en)}")
    if args.limit is not None and worst[0] > args.limit:
        print(f"FAIL: {worst[0]} levels > limit {args.limit}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
