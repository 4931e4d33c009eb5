#!/usr/bin/env python3
"""Prepare the RTL engine's sources for Yosys 0.23.

Yosys 0.23 reads SystemVerilog packages and `pkg::name` references but not
`import pkg::*;` statements. This writes a copy of every source listed in
hw/rtl/sources.txt (plus any extra files given) into OUT_DIR, with each
import statement replaced by the body of the package it names, and prints the
copied paths in compile order (packages first, so `pkg::type` port types
resolve too). The copies share one folder: sources in subfolders of hw/rtl
(fp32_add/) must have base names unique across the list.

Usage: rtl-yosys-sources.py OUT_DIR [EXTRA.sv ...]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RTL = ROOT / "hw" / "rtl"


def package_bodies(files):
    bodies = {}
    for f in files:
        text = f.read_text()
        m = re.search(r"^\s*package\s+(\w+)\s*;\n(.*?)^\s*endpackage", text, re.S | re.M)
        if m:
            bodies[m.group(1)] = m.group(2)
    return bodies


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    listed = [l.strip() for l in (RTL / "sources.txt").read_text().splitlines()]
    files = [RTL / l for l in listed if l and not l.startswith("#")]
    files += [pathlib.Path(p).resolve() for p in sys.argv[2:]]
    seen = {}
    for f in files:
        if not f.exists():
            sys.exit(f"rtl-yosys-sources: {f} not found")
        # The copies share one folder (sources.txt has files in subfolders
        # such as fp32_add/): base names must not collide.
        if f.name in seen:
            sys.exit(f"rtl-yosys-sources: {f} and {seen[f.name]} have the same name")
        seen[f.name] = f
    bodies = package_bodies(files)
    imp = re.compile(r"^\s*import\s+(\w+)::\*\s*;\s*$", re.M)
    for f in files:
        def inline(m):
            name = m.group(1)
            if name not in bodies:
                sys.exit(f"rtl-yosys-sources: {f.name} imports unknown package {name}")
            return f"  // ---- package {name} inlined for Yosys\n{bodies[name]}"
        dst = out / f.name
        dst.write_text(imp.sub(inline, f.read_text()))
        print(dst)


if __name__ == "__main__":
    main()
