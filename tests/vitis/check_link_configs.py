#!/usr/bin/python3
"""Checks the v++ link configs and post-system-link hooks CMake generated
(<build>/hw/vitis/<board>/<deployment>/{link.cfg,post_sys_link.tcl}) against
hw/vitis/boards.json and hw/vitis/kernels.json, so they cannot drift from the
board table: kernel instances, SLR placements, stream connections, one clock
for every kernel, and the transceiver / reference-clock / free-running-clock
names of every CMAC kernel.

Usage: check_link_configs.py <hw/vitis source dir> <hw/vitis build dir> [--self-test] [--docs <docs/alveo.md>]
--self-test also checks that a config with one wrong name is refused;
--docs checks that the document's board table matches hw/vitis/boards.json.
"""
import json
import os
import re
import sys


def fail(errors, msg):
    errors.append(msg)


def parse_cfg(text):
    """section -> list of (key, value)"""
    sections, cur = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            cur = m.group(1)
            sections.setdefault(cur, [])
            continue
        key, _, value = line.partition("=")
        sections.setdefault(cur, []).append((key, value))
    return sections


def expand(pattern, n):
    return pattern.replace("{interface}", str(n))


def check(board_name, board, deployment, ports, cmac, kernels, clock_hz, probe, cfg_text, tcl_text, tcl_path):
    errors = []
    where = f"{board_name}/{deployment}"
    engine = kernels["rtl_two_port"] if deployment == "two_port" else kernels["rtl"]
    cu = engine["compute_unit"]
    streams = [(engine["stream_in"], engine["stream_out"])]
    if deployment == "two_port":
        streams.append((engine["stream_in_1"], engine["stream_out_1"]))
    cfg = parse_cfg(cfg_text)
    conn = cfg.get("connectivity", [])
    nk = {v for k, v in conn if k == "nk"}
    slr = {v for k, v in conn if k == "slr"}
    sc = {v for k, v in conn if k == "stream_connect"}
    clocks = {v for k, v in cfg.get("clock", []) if k == "freqHz"}
    cmacs = [expand(cmac["kernel"], n) for n in ports]
    want_nk = {f"{engine['kernel']}:1:{cu}"} | {f"{c}:1:{c}" for c in cmacs}
    if nk != want_nk:
        fail(errors, f"{where}: nk {sorted(nk)} != {sorted(want_nk)}")
    want_slr = {f"{x}:{board['slr']}" for x in [cu] + cmacs}
    if slr != want_slr:
        fail(errors, f"{where}: slr {sorted(slr)} != {sorted(want_slr)}")
    want_sc = set()
    for (s_in, s_out), c in zip(streams, cmacs):
        want_sc.add(f"{c}.{cmac['rx_stream']}:{cu}.{s_in}")
        want_sc.add(f"{cu}.{s_out}:{c}.{cmac['tx_stream']}")
    if sc != want_sc:
        fail(errors, f"{where}: stream_connect {sorted(sc)} != {sorted(want_sc)}")
    want_clk = {f"{clock_hz}:{x}" for x in [cu] + cmacs}
    if clocks != want_clk:
        fail(errors, f"{where}: [clock] {sorted(clocks)} != {sorted(want_clk)} (one clock for every kernel)")
    adv = {v for k, v in cfg.get("advanced", []) if k == "param"}
    if adv != {f"compiler.userPostSysLinkOverlayTcl={tcl_path}"}:
        fail(errors, f"{where}: [advanced] {sorted(adv)} does not name {tcl_path}")
    # The hook: every CMAC's GT port and reference clock of its cage in the
    # probed scheme, the probed free-running clock; the probe lists in the
    # table's order, and the board's own names among them.
    conns = set(re.findall(r"connect_bd_intf_net \[panama_(gt|refclk)_port (\d)\] \[panama_pin intf_pins (\S+)\]", tcl_text))
    free_pins = set(re.findall(r"set _pin \[panama_pin pins (\S+)\]", tcl_text))
    frees = len(re.findall(r"connect_bd_net \$panama_freerun \$_pin", tcl_text))
    want_conns, want_free_pins = set(), set()
    for n, c in zip(ports, cmacs):
        want_conns.add(("gt", str(n), f"{c}/{expand(cmac['gt_pin'], n)}"))
        want_conns.add(("refclk", str(n), f"{c}/{expand(cmac['refclk_pin'], n)}"))
        want_free_pins.add(f"{c}/{cmac['freerun_pin']}")
    if conns != want_conns:
        fail(errors, f"{where}: hook connects {sorted(conns)} != {sorted(want_conns)}")
    if frees != len(cmacs) or free_pins != want_free_pins:
        fail(errors, f"{where}: free-running clock -> {sorted(free_pins)} ({frees} connections), "
                     f"want -> {sorted(want_free_pins)}")
    m = re.search(r"set panama_gt_schemes \{\n(.*?)\n\}", tcl_text, re.S)
    got_schemes = [l.strip().strip("{}").split() for l in m.group(1).splitlines()] if m else []
    want_schemes = [[s["refclk"][0], s["gt"][0], s["refclk"][1], s["gt"][1]] for s in probe["gt_schemes"]]
    if got_schemes != want_schemes:
        fail(errors, f"{where}: hook probes GT schemes {got_schemes} != {want_schemes} (boards.json probe)")
    m = re.search(r"set panama_freerun_clocks \{\n(.*?)\n\}", tcl_text, re.S)
    got_free = [l.strip().strip("{}").split() for l in m.group(1).splitlines()] if m else []
    want_free = [[c["kind"], c["name"]] for c in probe["freerun"]]
    if got_free != want_free:
        fail(errors, f"{where}: hook probes free-running clocks {got_free} != {want_free} (boards.json probe)")
    if not any(s["gt"] == board["gt"] and s["refclk"] == board["refclk"] for s in probe["gt_schemes"]):
        fail(errors, f"{where}: the board's GT names {board['gt']}/{board['refclk']} are not a probed scheme")
    if board["freerun_clk"] not in [c["name"] for c in probe["freerun"]]:
        fail(errors, f"{where}: the board's free-running clock {board['freerun_clk']} is not probed")
    if f"({board['refclk_mhz']} MHz)" not in tcl_text:
        fail(errors, f"{where}: hook does not state the {board['refclk_mhz']} MHz reference clock")
    for stale in ("gt_ref_clk", "init_clk", "refclkb", "gt_serial_port:"):
        if stale in cfg_text or stale in tcl_text:
            fail(errors, f"{where}: stale name {stale!r} in the generated files")
    return errors


def check_docs(path, boards):
    """The board table of docs/alveo.md: one row per board with its names."""
    errors = []
    rows = {}
    for line in open(path).read().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in boards["boards"]:
            rows[cells[0]] = cells
    for name, b in boards["boards"].items():
        row = rows.get(name)
        if not row:
            errors.append(f"{path}: no board table row for {name}")
            continue
        want = [name, b["platform"], "`, `".join(b["gt"]), "`, `".join(b["refclk"]),
                str(b['refclk_mhz']), b["freerun_clk"], b["slr"]]
        if row != want:
            errors.append(f"{path}: board table row {row} != {want} (hw/vitis/boards.json)")
    # The deployment packages table: one row per board, the table's globs.
    for line in open(path).read().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in boards["boards"] and "`" in cells[1]:
            b = boards["boards"][cells[0]]
            globs = re.findall(r"`([^`]+)`", cells[1])
            if globs != b["deployment_packages"]:
                errors.append(f"{path}: {cells[0]} deployment packages {globs} != {b['deployment_packages']}")
            if cells[2].startswith("two") != b["two_stage"]:
                errors.append(f"{path}: {cells[0]} platform stages '{cells[2]}' disagree with two_stage")
            b["_docs_packages"] = True
    for name, b in boards["boards"].items():
        if not b.get("_docs_packages"):
            errors.append(f"{path}: no deployment package row for {name}")
    return errors


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, build = sys.argv[1], os.path.abspath(sys.argv[2])
    self_test = "--self-test" in sys.argv[3:]
    boards = json.load(open(os.path.join(src, "boards.json")))
    kernels = json.load(open(os.path.join(src, "kernels.json")))
    cmac, clock_hz = boards["cmac"], boards["kernel_clock_hz"]
    errors, checked = [], 0
    for name, board in boards["boards"].items():
        # The QSFP28 transceivers of every U5x card are in SLR1 (VNx's Makefile
        # rewrites SLR2 to SLR1 for them; ACCL's gen_config.py: gt_slr 1 for
        # u50 and u55c), those of the U280 and U250 in SLR2.
        want_slr = "SLR1" if name.startswith("u5") else "SLR2"
        if board["slr"] != want_slr:
            errors.append(f"{name}: engine and CMAC placed in {board['slr']}, the transceivers are in {want_slr}")
        # Table sanity: reference clock A (VNx), the per-board frequencies.
        if board["refclk_mhz"] not in (156.25, 161.1328125):
            errors.append(f"{name}: GT reference clock {board['refclk_mhz']} MHz is neither 156.25 nor 161.1328125")
        for dep, d in boards["deployments"].items():
            d_dir = os.path.join(build, name, dep)
            tcl_path = os.path.join(d_dir, "post_sys_link.tcl")
            try:
                cfg_text = open(os.path.join(d_dir, "link.cfg")).read()
                tcl_text = open(tcl_path).read()
            except OSError as e:
                errors.append(f"{name}/{dep}: {e}")
                continue
            args = (name, board, dep, d["ports"], cmac, kernels, clock_hz, boards["probe"])
            errors += check(*args, cfg_text, tcl_text, tcl_path)
            checked += 1
            if self_test:
                # Each mutation must be caught.
                mutations = [
                    (cfg_text.replace(f":{board['slr']}", ":SLR0", 1), tcl_text),
                    (cfg_text.replace(f"freqHz={clock_hz}:cmac_0", "freqHz=322265625:cmac_0"), tcl_text),
                    (cfg_text.replace("cmac_0.M_AXIS", "cmac_0.M_AXIS0"), tcl_text),
                    (cfg_text, tcl_text.replace("io_clk_qsfp0_refclka_00", "io_clk_qsfp0_refclkb_00")),
                    (cfg_text, tcl_text.replace("gt_serial_port0", "gt_serial_port")),
                    (cfg_text, tcl_text.replace("[panama_refclk_port 0]", "[panama_refclk_port 1]")),
                    (cfg_text, tcl_text.replace("{pins blp_s_aclk_freerun_ref_00}\n", "")),
                    (cfg_text, tcl_text.replace("connect_bd_net $panama_freerun $_pin", "connect_bd_net $_pin $_pin", 1)),
                ]
                for i, (c, t) in enumerate(mutations):
                    if not check(*args, c, t, tcl_path):
                        errors.append(f"{name}/{dep}: self-test mutation {i} was not caught")
    if "--docs" in sys.argv:
        errors += check_docs(sys.argv[sys.argv.index("--docs") + 1], boards)
    for e in errors:
        print("FAIL:", e)
    print(f"{checked} generated link configs checked against hw/vitis/boards.json"
          + (" (with mutation self-test)" if self_test else "") + f": {len(errors)} problems")
    return 1 if errors or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
