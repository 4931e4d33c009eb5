#!/usr/bin/python3
"""Checks that the HLS kernel's beat loops reached II=1 after csynth_design.

Reads the csynth XML reports Vitis HLS writes (solution/syn/report/
*_csynth.xml) and looks, anywhere in them, for the loops named in the kernel
(PANAMA_LOOP labels in hw/hls/include/panama/kernel.hpp) and the initiation
interval reported for each (<PipelineII>, or the interval of a function
Vitis made out of the loop, named <stage>_Pipeline_<label>). Exits 1 when a
loop reports an II other than 1; a loop not found is reported but does not
fail (report layouts differ between Vitis releases): read the report then.

This parser is written against the report layout as documented and has not
been run on real Vitis output here (no Vitis installation).

usage: check_csynth.py <report.xml>...
"""
import sys
import xml.etree.ElementTree as ET

LOOPS = ("ingress_beats", "accumulate_beats", "reemit_beats", "egress_beats")
II_TAGS = ("PipelineII", "PipelineInitiationInterval")


def loop_iis(root):
    """(label, II) for every element naming one of LOOPS with an II child."""
    found = []
    for el in root.iter():
        name = el.findtext("Name") or el.tag
        label = next((l for l in LOOPS if l in name), None)
        if label is None:
            continue
        for tag in II_TAGS:
            text = el.findtext(tag)
            if text is not None and text.strip().isdigit():
                found.append((label, int(text)))
                break
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
        for label, ii in loop_iis(root):
            results.setdefault(label, set()).add(ii)
    bad = {l: iis for l, iis in results.items() if iis != {1}}
    for label in LOOPS:
        if label not in results:
            print(f"check_csynth: {label}: not found in the reports, check its II by hand")
        elif label not in bad:
            print(f"check_csynth: {label}: II=1")
    for label, iis in bad.items():
        print(f"check_csynth: {label}: II={sorted(iis)}, designed for II=1", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
