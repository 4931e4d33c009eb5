#!/usr/bin/python3
"""Runs the Vitis flow's Tcl against stubs of the Vivado commands it calls
(in tclsh, which runs the same Tcl language), so what the scripts do on each
kind of platform is checked here, without Vivado:

  * every generated post-system-link hook (<build>/hw/vitis/<board>/<deployment>/post_sys_link.tcl)
    on a simulated block design of each GT naming scheme and each free-running
    clock of hw/vitis/boards.json "probe": it must connect every CMAC kernel's
    transceivers, reference clock and free-running clock to that platform's
    names, choose the first scheme and clock in the table's order when a
    platform has several, and stop with an error naming the candidates when
    it has none;
  * hw/vitis/rtl/package_rtl_kernel.tcl against stubs of the ipx:: commands,
    with and without the s_axi_control memory map that ipx::package_project
    may already have inferred: it must get or create the memory map, its
    address block and register (an add of an existing name is an error in
    Vivado's batch mode, as in the stub), and reach package_xo.

Usage: check_vitis_tcl.py <hw/vitis source dir> <hw/vitis build dir> [--tclsh PATH]
"""
import json
import os
import subprocess
import sys
import tempfile

BD_STUB = r"""
# Simulated block design: platform ports and pins, kernel pins, nets.
proc _has {set name} { upvar #0 $set s; return [expr {[lsearch -exact $s $name] >= 0}] }
proc _find {set args} {
  set name [lindex $args end]
  if {[lsearch -exact $args -of_objects] >= 0} { return {} }
  if {[_has $set $name]} { return [list $name] }
  if {[lsearch -exact $args -quiet] < 0} { error "stub: $name not found" }
  return {}
}
proc get_bd_intf_ports {args} { return [_find ::intf_ports {*}$args] }
proc get_bd_ports {args} { return [_find ::ports {*}$args] }
proc get_bd_intf_pins {args} { return [_find ::intf_pins {*}$args] }
proc get_bd_pins {args} { return [_find ::pins {*}$args] }
proc get_bd_nets {args} {
  set obj [lindex $args end]
  if {[info exists ::nets($obj)]} { return [list $::nets($obj)] }
  return {}
}
proc disconnect_bd_net {net pin} { puts "DISCONNECT $net $pin"; unset ::nets($pin) }
proc connect_bd_intf_net {a b} { puts "CONNECT $a $b" }
proc connect_bd_net {a b} { puts "CONNECT $a $b" }
"""

PKG_STUB = r"""
# Stubs of the Vivado project and ipx:: commands package_rtl_kernel.tcl calls.
proc _log {args} { puts "CALL $args" }
foreach c {create_project add_files update_compile_order close_project package_xo} {
  proc $c {args} "_log $c {*}\$args"
}
proc set_property {args} { _log set_property {*}$args }
proc get_property {args} { return x }
proc get_files {args} { return {a.sv} }
proc current_fileset {args} { return sources_1 }
namespace eval ipx {}
proc ipx::package_project {args} { _log ipx::package_project }
proc ipx::unload_core {args} {}
proc ipx::edit_ip_in_project {args} {}
proc ipx::current_core {args} { return core }
proc ipx::get_user_parameters {args} { return {} }
proc ipx::remove_user_parameter {args} {}
proc ipx::get_bus_interfaces {args} { return [list [lindex $args end]] }
proc ipx::associate_bus_interfaces {args} {}
proc ipx::update_checksums {args} {}
proc ipx::check_integrity {args} { _log ipx::check_integrity }
proc ipx::save_core {args} {}
proc _named {kind args} {
  set name [lindex [lsearch -all -inline -not -glob $args -*] 0]
  if {[info exists ::objs($kind,$name)]} { return [list $kind:$name] }
  return {}
}
proc ipx::get_memory_maps {args} { return [_named mm {*}$args] }
proc ipx::get_address_blocks {args} { return [_named block {*}$args] }
proc ipx::get_registers {args} { return [_named reg {*}$args] }
proc _add {kind name} {
  if {[info exists ::objs($kind,$name)]} { error "stub: $kind $name already exists" }
  set ::objs($kind,$name) 1
  _log add $kind $name
  return $kind:$name
}
proc ipx::add_memory_map {args} { return [_add mm [lindex $args 0]] }
proc ipx::add_address_block {args} { return [_add block [lindex $args 0]] }
proc ipx::add_register {args} { return [_add reg [lindex $args 0]] }
"""


def run_tcl(tclsh, script):
    with tempfile.NamedTemporaryFile("w", suffix=".tcl", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        r = subprocess.run([tclsh, path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    return r.returncode, r.stdout, r.stderr


def tcl_list(items):
    return "{" + " ".join("{" + i + "}" for i in items) + "}"


def check_hook(tclsh, hook_path, ports, cmac, probe, errors):
    hook = open(hook_path).read()
    cmacs = [cmac["kernel"].replace("{interface}", str(n)) for n in ports]
    kernel_intf = []
    kernel_pins = []
    for n, c in zip(ports, cmacs):
        kernel_intf += [f"{c}/" + cmac["gt_pin"].replace("{interface}", str(n)),
                        f"{c}/" + cmac["refclk_pin"].replace("{interface}", str(n))]
        kernel_pins.append(f"{c}/{cmac['freerun_pin']}")
    schemes, clocks = probe["gt_schemes"], probe["freerun"]

    def platform(scheme_ids, clock_ids):
        intf = list(kernel_intf)
        for i in scheme_ids:
            intf += schemes[i]["gt"] + schemes[i]["refclk"]
        ports_, pins = [], list(kernel_pins)
        for j in clock_ids:
            (ports_ if clocks[j]["kind"] == "ports" else pins).append(clocks[j]["name"])
        # The kernel's free-running pin comes connected to a default net, as in a linked design.
        nets = " ".join(f"{{{p}}} net_default" for p in kernel_pins)
        return (f"set ::intf_ports {tcl_list(intf)}\nset ::intf_pins {tcl_list(kernel_intf)}\n"
                f"set ::ports {tcl_list(ports_)}\nset ::pins {tcl_list(pins)}\narray set ::nets {{{nets}}}\n")

    def expect(si, cj):
        want = set()
        for n, c in zip(ports, cmacs):
            want.add(f"CONNECT {schemes[si]['gt'][n]} {c}/" + cmac["gt_pin"].replace("{interface}", str(n)))
            want.add(f"CONNECT {schemes[si]['refclk'][n]} {c}/" + cmac["refclk_pin"].replace("{interface}", str(n)))
            want.add(f"CONNECT {clocks[cj]['name']} {c}/{cmac['freerun_pin']}")
            want.add(f"DISCONNECT net_default {c}/{cmac['freerun_pin']}")
        return want

    cases = [([si], [cj], si, cj) for si in range(len(schemes)) for cj in range(len(clocks))]
    # Several candidates present: the first in the table's order wins.
    cases.append((list(range(len(schemes)))[::-1], list(range(len(clocks)))[::-1], 0, 0))
    for present_s, present_c, si, cj in cases:
        rc, out, err = run_tcl(tclsh, BD_STUB + platform(present_s, present_c) + hook)
        got = {l for l in out.splitlines() if l.startswith(("CONNECT", "DISCONNECT"))}
        if rc != 0 or got != expect(si, cj):
            errors.append(f"{hook_path}: platform with GT schemes {present_s}, clocks {present_c}: "
                          f"rc {rc} {err.strip()[:300]}; connections {sorted(got ^ expect(si, cj))} differ")
    for present_s, present_c, what in (([], [0], "QSFP GT schemes"), ([0], [], "free-running clocks")):
        rc, out, err = run_tcl(tclsh, BD_STUB + platform(present_s, present_c) + hook)
        if rc == 0 or what not in err or any(l.startswith("CONNECT") for l in out.splitlines()):
            errors.append(f"{hook_path}: a platform without {what} must stop before connecting anything "
                          f"(rc {rc}, stderr {err.strip()[:200]!r})")
    return len(cases) + 2


def check_packaging(tclsh, script_path, errors):
    args = "xcu55c-fsvh2892-2L-e panama_engine_kernel panama_engine xilinx.com:panama:panama_engine:1.0 k.xml o.xo /tmp/w a.sv"
    script = open(script_path).read()
    runs = 0
    for preexisting in ([], ["mm,s_axi_control"], ["mm,s_axi_control", "block,reg0"],
                        ["mm,s_axi_control", "block,reg0", "reg,CTRL"]):
        pre = "".join(f"set ::objs({o}) 1\n" for o in preexisting)
        rc, out, err = run_tcl(tclsh, PKG_STUB + f"set argv {{{args}}}\nproc exit {{c}} {{ puts EXIT$c; return -level 2 }}\n"
                               + pre + script)
        runs += 1
        adds = [l for l in out.splitlines() if l.startswith("CALL add ")]
        want = [f"CALL add {k} {n}" for k, n in (("mm", "s_axi_control"), ("block", "reg0"), ("reg", "CTRL"))
                if f"{k},{n}" not in preexisting]
        if rc != 0 or "EXIT0" not in out or "CALL package_xo" not in out or adds != want:
            errors.append(f"{script_path} with {preexisting or 'nothing'} inferred: rc {rc}, "
                          f"adds {adds} (want {want}), stderr {err.strip()[:300]!r}")
    return runs


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    tclsh = sys.argv[sys.argv.index("--tclsh") + 1] if "--tclsh" in sys.argv else "tclsh"
    boards = json.load(open(os.path.join(src, "boards.json")))
    errors, runs = [], 0
    for name, board in boards["boards"].items():
        for dep, d in boards["deployments"].items():
            hook = os.path.join(build, name, dep, "post_sys_link.tcl")
            if not os.path.exists(hook):
                errors.append(f"{hook}: missing")
                continue
            runs += check_hook(tclsh, hook, d["ports"], boards["cmac"], boards["probe"], errors)
    runs += check_packaging(tclsh, os.path.join(src, "rtl", "package_rtl_kernel.tcl"), errors)
    for e in errors:
        print("FAIL:", e)
    print(f"{runs} Tcl runs against Vivado stubs: {len(errors)} problems")
    return 1 if errors or runs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
