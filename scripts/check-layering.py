#!/usr/bin/env python3
"""Checks the layering of the source tree from the code's own #includes.

Every C/C++ file belongs to a unit (a folder: include/panama, hw/hls, sw/engine,
sw/runtime/core, sim/cosim, ...). An #include of a project header makes the
including unit depend on the unit that holds the header. The rules
(docs/architecture.md, "Layers"):
  1. nothing in sw/ includes anything in sim/, bench/ or tests/;
  2. nothing outside tests/ includes anything in tests/;
  3. the units form no cycle.
Prints the unit graph with --graph. Exit status 1 names each violation.
"""
import argparse
import os
import re
import subprocess
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
SOURCE_EXT = (".cpp", ".hpp", ".h", ".cc")


def unit_of(path):
    parts = path.split("/")
    if parts[0] == "sw" and len(parts) > 2 and parts[1] == "runtime":
        return "/".join(parts[:3])
    if parts[0] == "include":
        return "include/panama"
    if parts[0] in ("sw", "sim", "hw", "bench", "tests") and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--graph", action="store_true", help="print every unit's dependencies")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                           check=True, capture_output=True, text=True).stdout.split()
    files = [f for f in files if f.endswith(SOURCE_EXT) and os.path.exists(os.path.join(root, f))]
    # Header path as included ("panama/engine/backend.hpp") -> the file that holds it.
    headers = {}
    for f in files:
        m = re.search(r"(?:^|/)include/(.+)$", f)
        if m:
            headers.setdefault(m.group(1), f)
    edges = {}
    where = {}
    for f in files:
        src = unit_of(f)
        text = open(os.path.join(root, f), errors="replace").read()
        for inc in INCLUDE_RE.findall(text):
            target = headers.get(inc)
            if not target:
                continue
            dst = unit_of(target)
            if dst == src:
                continue
            edges.setdefault(src, set()).add(dst)
            where.setdefault((src, dst), f"{f} includes {inc}")
    problems = []
    for src, dsts in sorted(edges.items()):
        for dst in sorted(dsts):
            if src.startswith("sw/") and dst.split("/")[0] in ("sim", "bench", "tests"):
                problems.append(f"{src} -> {dst}: sw/ must not depend on {dst.split('/')[0]}/ ({where[(src, dst)]})")
            if dst.startswith("tests") and not src.startswith("tests"):
                problems.append(f"{src} -> {dst}: only tests may include tests/ ({where[(src, dst)]})")
    # Cycles: depth-first search over the unit graph.
    state = {}
    stack = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                cyc = stack[stack.index(v):] + [v]
                problems.append("cycle: " + " -> ".join(cyc) + " (" + "; ".join(
                    where[(x, y)] for x, y in zip(cyc, cyc[1:])) + ")")
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if u not in state:
            visit(u)
    if a.graph:
        for src in sorted(edges):
            print(f"{src:22} -> " + ", ".join(sorted(edges[src])))
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"layering: {len(files)} files, {len(edges)} units with dependencies, no violation")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
