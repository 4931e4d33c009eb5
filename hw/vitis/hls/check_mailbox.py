#!/usr/bin/python3
"""Checks the HLS kernel's mailbox offsets after synthesis.

Vitis HLS assigns the AXI4-Lite offsets of the top function's arguments
(the Vitis kernel flow does not allow fixing them with `offset=`) and writes
them into the generated driver header x<top>_hw.h as
    #define X<TOP>_CONTROL_ADDR_<ARG>_DATA 0x..
The driver takes the offsets from hw/vitis/kernels.json ("hls" object). This
script compares the two and exits non-zero, naming every argument that
differs or is missing, so a build never ships a kernel the driver would
address wrongly.

usage: check_mailbox.py <x<top>_hw.h> <kernels.json>
"""
import json
import re
import sys

ARGS = ("ctrl_seq", "ctrl_op", "ctrl_addr", "ctrl_wdata", "ctrl_ack", "ctrl_rdata")


def generated_offsets(header_text):
    found = {}
    for m in re.finditer(r"^#define\s+X\w*?_ADDR_(CTRL_[A-Z]+)_DATA\s+(0x[0-9a-fA-F]+|\d+)\s*$",
                         header_text, re.MULTILINE):
        found[m.group(1).lower()] = int(m.group(2), 0)
    return found


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            header = f.read()
        with open(argv[2]) as f:
            hls = json.load(f)["hls"]
    except (OSError, ValueError, KeyError) as e:
        print(f"check_mailbox: cannot read inputs: {e}", file=sys.stderr)
        return 2
    got = generated_offsets(header)
    errors = []
    for arg in ARGS:
        want = int(hls[arg], 0)
        if arg not in got:
            errors.append(f"{arg}: not in {argv[1]} (kernels.json says 0x{want:x})")
        elif got[arg] != want:
            errors.append(f"{arg}: Vitis HLS assigned 0x{got[arg]:x}, kernels.json says 0x{want:x}")
    if errors:
        for e in errors:
            print(f"check_mailbox: {e}", file=sys.stderr)
        print("check_mailbox: update hw/vitis/kernels.json to the generated offsets and rebuild the driver",
              file=sys.stderr)
        return 1
    print(f"check_mailbox: {len(ARGS)} mailbox offsets agree with kernels.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
