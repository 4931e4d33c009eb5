#!/usr/bin/python3
"""Checks the HLS kernel's processes reached their designed II after csynth_design.

The kernel (hw/hls/src/engine_top.cpp) is a free-running DATAFLOW region of
eight processes, each a function pipelined with the II its PIPELINE pragma
declares (the constants kMailboxII .. kEgressII of
hw/hls/include/panama/kernel.hpp). This reads the csynth XML reports Vitis
HLS writes (solution/syn/report/*_csynth.xml: one per module, and the top's,
which may list its modules) and, for every process, the initiation interval
reported for the module named after it: <PipelineInitiationInterval> or
<PipelineII> where the report gives one, otherwise <Interval-max> of the
module's <SummaryOfOverallLatency> (for a pipelined function both are its
II). A module is matched by the process name appearing in its name
(<TopModelName>, <Name> or <ModuleName>, or the report file's name), so
prefixes and suffixes Vitis adds do not matter.

Exits 1 when a process is not found in any report (nothing would have been
checked: read the reports and fix the names here, do not skip it) or when
one reports an II above its designed II; an II below it passes.

This parser is written against the report layout as documented and tested
on hand-written reports only (tests/hls/data); it has not been run on real
Vitis output (no Vitis installation here).

usage: check_csynth.py <report.xml>...
"""
import os
import sys
import xml.etree.ElementTree as ET

# Process function -> designed II (PIPELINE II in engine_top.cpp).
PROCESSES = {
    "mailbox_in_proc": 1,
    "ingress_proc": 1,
    "classify_proc": 1,
    "slot_state_proc": 2,
    "counters_proc": 1,
    "mailbox_out_proc": 1,
    "accumulate_proc": 1,
    "egress_proc": 1,
}
II_TAGS = ("PipelineInitiationInterval", "PipelineII")
NAME_TAGS = ("TopModelName", "Name", "ModuleName")


def process_of(name):
    """The process whose function name appears in `name`, if any."""
    if not name:
        return None
    return next((p for p in PROCESSES if p in name), None)


def ii_of(el):
    """The II reported under `el` (a module's report or entry), or None."""
    summary = el.find(".//SummaryOfOverallLatency")
    scopes = [summary] if summary is not None else []
    scopes.append(el.find("PerformanceEstimates") if el.find("PerformanceEstimates") is not None else el)
    for scope in scopes:
        for tag in II_TAGS:
            text = scope.findtext(tag)
            if text is not None and text.strip().isdigit():
                return int(text)
    if summary is not None:
        text = summary.findtext("Interval-max")
        if text is not None and text.strip().isdigit():
            return int(text)
    return None


def module_iis(root, path):
    """(process, II) for the report's own module and every module it lists."""
    found = []
    # A module's own report: named by its UserAssignments or its file name.
    own = root.findtext("UserAssignments/TopModelName") or os.path.basename(path)
    proc = process_of(own)
    if proc is not None:
        ii = ii_of(root)
        if ii is not None:
            found.append((proc, ii))
    # Modules listed inside a report (the top's module hierarchy).
    for el in root.iter():
        if el is root:
            continue
        name = next((el.findtext(t) for t in NAME_TAGS if el.findtext(t)), None)
        proc = process_of(name)
        if proc is None:
            continue
        ii = ii_of(el)
        if ii is not None:
            found.append((proc, ii))
    return found


def main(paths):
    if not paths:
        print("check_csynth: no csynth reports given", file=sys.stderr)
        return 1
    results = {}
    for p in paths:
        try:
            root = ET.parse(p).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"check_csynth: cannot read {p}: {e}", file=sys.stderr)
            return 1
        for proc, ii in module_iis(root, p):
            results.setdefault(proc, set()).add(ii)
    failed = False
    for proc, designed in PROCESSES.items():
        iis = results.get(proc)
        if not iis:
            print(f"check_csynth: {proc}: not found in the reports (designed II={designed}); "
                  "nothing was checked for it", file=sys.stderr)
            failed = True
        elif max(iis) > designed:
            print(f"check_csynth: {proc}: II={sorted(iis)}, designed for II={designed}", file=sys.stderr)
            failed = True
        else:
            print(f"check_csynth: {proc}: II={max(iis)} (designed {designed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
