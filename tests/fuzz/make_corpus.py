#!/usr/bin/python3
"""Writes the seed corpora of the fuzzers (tests/fuzz/corpus/<target>/).

Seeds are small valid inputs (and a few typical invalid ones) in each
fuzzer's input layout, documented at the top of its source file. Frames are
encoded here from docs/protocol.md, independently of the C++ wire helpers.
Run from anywhere: /usr/bin/python3 tests/fuzz/make_corpus.py
The output is deterministic; commit what it writes.
"""
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "corpus")
PORT = 9600
AGG_UP, RESULT_DOWN, RETRANS = 1, 2, 3


def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def panama_frame(job, tree, child, seq, values, ptype=AGG_UP, ecn=2, cap=0xFFFF, version=1,
                 port=PORT, elem_type=1, bad_checksum=False):
    n = len(values)
    if elem_type == 2:  # bf16: the high half of the binary32 (seed values are exact in bf16)
        payload = b"".join(struct.pack("<f", v)[2:] for v in values)
    elif elem_type == 3:  # fp16
        payload = b"".join(struct.pack("<e", v) for v in values)
    else:
        payload = b"".join(struct.pack("<f", v) for v in values)
    width = 2 if elem_type in (2, 3) else 4
    udp_len = 8 + 22 + width * n
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + udp_len, 0, 0x4000, 64, 17, 0,
                               bytes([10, 0, 0, 1 + child]), bytes([10, 0, 0, 254])))
    csum = ip_checksum(bytes(ip)) ^ (0x1111 if bad_checksum else 0)
    ip[10:12] = struct.pack("!H", csum)
    eth = bytes([2, 0, 0, 0, 0, 0xFE, 2, 0, 0, 0, 1, child & 0xFF]) + struct.pack("!H", 0x0800)
    udp = struct.pack("!HHHH", port, port, udp_len, 0)
    hdr = struct.pack("!BBHBBHIHH", version, ptype, job, tree, elem_type, child, seq, cap, n) + bytes(6)
    return eth + bytes(ip) + udp + hdr + payload


def not_panama():
    # An ARP request: passes every engine untouched.
    return bytes([0xFF] * 6 + [2, 0, 0, 0, 1, 9]) + struct.pack("!H", 0x0806) + bytes(28)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------------ engine
# byte 0: table choice; records: ctl (bit 0 MAC error, bit 1 repair), u16 len, bytes.
def engine_record(frame, ctl=0):
    return bytes([ctl]) + struct.pack("!H", len(frame)) + frame


def engine_seeds():
    v = [1.0, 2.0, -0.0, 3.5]
    # fan-in 4 (b0 & 3 = 3), one slot: four children complete seq 0, a
    # retransmission gets the stored result, seq 1 reuses the other bank.
    s = bytes([0x03])
    for c in range(4):
        s += engine_record(panama_frame(1, 0, c, 0, v))
    s += engine_record(panama_frame(1, 0, 0, 0, v, ptype=RETRANS))
    s += engine_record(panama_frame(1, 0, 2, 0, v))  # duplicate
    for c in range(4):
        s += engine_record(panama_frame(1, 0, c, 1, v))
    write("engine", "root_fan_in_4", s)
    # the non-root entry (job 1 tree 1): aggregate-up to the parent
    s = bytes([0x10])
    for seq in range(6):
        for c in range(2):
            s += engine_record(panama_frame(1, 1, c, seq, v[:2]))
    write("engine", "non_root", s)
    # job 2, fan-in 1, share 2: generations wrap, a late sequence is dropped
    s = bytes([0x00])
    for seq in [0, 1, 2, 3, 4, 5, 1, 9, 6]:
        s += engine_record(panama_frame(2, 0, 0, seq, [float(seq)]))
    write("engine", "generations", s)
    # what passes and what is dropped
    s = bytes([0x01])
    s += engine_record(not_panama())
    s += engine_record(panama_frame(1, 0, 0, 0, v, ptype=RESULT_DOWN))
    s += engine_record(panama_frame(1, 0, 0, 0, v, bad_checksum=True))
    s += engine_record(panama_frame(1, 0, 0, 0, v, version=2))
    s += engine_record(panama_frame(1, 0, 0, 0, v, elem_type=7))
    s += engine_record(panama_frame(1, 0, 9, 0, v))  # child not allowed
    s += engine_record(panama_frame(5, 0, 0, 0, v))  # unknown entry
    s += engine_record(panama_frame(1, 0, 0, 0, v)[:50])  # truncated
    s += engine_record(panama_frame(1, 0, 1, 0, [1.0] * 40))  # over the slot size
    s += engine_record(panama_frame(1, 0, 0, 0, v), ctl=1)  # MAC error
    s += engine_record(panama_frame(1, 0, 1, 0, v))
    write("engine", "pass_and_drop", s)
    # another UDP port; then the engine disabled
    write("engine", "udp_port", bytes([0x20]) + engine_record(panama_frame(1, 0, 0, 0, v, port=4791)) +
          engine_record(panama_frame(1, 0, 0, 0, v)))
    write("engine", "disabled", bytes([0x80]) + engine_record(panama_frame(1, 0, 0, 0, v)))
    # 16-bit types: bf16 completes seq 0, fp16 seq 1 of the same slot's other
    # bank; an fp32 contribution to the open fp16 slot (type mismatch); a
    # retransmission in the wrong type; a bf16 frame over the slot size.
    s = bytes([0x03])
    for c in range(4):
        s += engine_record(panama_frame(1, 0, c, 0, v, elem_type=2))
    s += engine_record(panama_frame(1, 0, 0, 1, v, elem_type=3))
    s += engine_record(panama_frame(1, 0, 1, 1, v))  # fp32 into an fp16 slot
    for c in range(1, 4):
        s += engine_record(panama_frame(1, 0, c, 1, v, elem_type=3))
    s += engine_record(panama_frame(1, 0, 0, 1, v, ptype=RETRANS, elem_type=2))
    s += engine_record(panama_frame(1, 0, 1, 2, [1.0] * 40, elem_type=2))
    write("engine", "elem16", s)


# ---------------------------------------------------------- allreduce core
# byte 0: plan choice; records: 0 frame, 1 time (the fabric runs), 2 start, 3 answer,
# 4 release, 5 loss.
def core_seeds():
    # two trees, 4 elements per packet (b0 = 1 | 3 << 1), cap 4
    s = bytes([0x17])
    s += bytes([2, 10])  # allreduce of 11 floats: 3 chunks
    s += bytes([1, 0])  # poll: chunks sent
    for k in range(3):
        s += bytes([3, k, 0])  # each comes back as its result
    s += bytes([4])
    s += bytes([2, 0, 1, 0, 3, 0, 7, 3, 0, 0])  # one float; a result, a changed duplicate
    s += bytes([1, 50, 1, 50])  # timeouts: retransmissions
    write("allreduce_core", "two_trees", s)
    # one tree, one element per packet, retry budget 2: the allreduce fails
    s = bytes([0x40, 2, 3, 1, 0] + [1, 255] * 6 + [4])
    write("allreduce_core", "retry_budget", s)
    # raw frames: a result-down for this job (tree 10, seq 0), a malformed
    # one, one of another job, an aggregate-up
    f = panama_frame(7, 10, 0, 0, [1.0, 2.0], ptype=RESULT_DOWN)
    s = bytes([0x02, 2, 1, 1, 0])
    for frame, ctl in [(f, 0), (f[:-3], 0), (panama_frame(8, 10, 0, 0, [1.0], ptype=RESULT_DOWN), 0),
                       (panama_frame(7, 10, 0, 0, [1.0]), 1), (panama_frame(7, 99, 0, 0, [1.0]), 3)]:
        s += bytes([0, ctl]) + struct.pack("!H", len(frame)) + frame
    write("allreduce_core", "frames", s)
    # both workers start 11 floats and the fabric runs: results from the
    # engine; then the next four frames are lost and retransmissions recover
    s = bytes([0x17, 2, 10, 1, 1, 1, 1, 5, 0x0F, 2, 3, 1, 10, 1, 10, 1, 10, 4])
    write("allreduce_core", "fabric", s)


# ------------------------------------------------------------ node config
def config_seeds():
    shutil.copy(os.path.join(ROOT, "..", "..", "samples", "basic.json"),
                os.path.join(CORPUS, "node_config", "basic.json"))
    entry = {"index": 0, "job": 1, "tree": 0, "root": False, "fan_in": 2, "children": [0, 1],
             "slot_base": 0, "slot_count": 16, "out_child_id": 3, "eth_src": "02:00:00:00:00:10",
             "eth_dst": "02:00:00:00:00:20", "ip_src": "10.0.0.1", "ip_dst": "10.0.0.2",
             "udp_src": 9600, "udp_dst": 9600, "ttl": 64, "dscp": 0}
    root = dict(entry, index=1, tree=1, root=True, slot_base=16, out_child_id=0, ip_dst="239.0.1.1")
    doc = {"node": "leaf0", "engine": {"udp_port": 9600}, "entries": [entry, root],
           "pswitch": {"ports": [{"name": "w0", "vdev": "net_null0"}],
                       "trees": [{"job": 1, "tree": 0, "parent": "w0", "children": []}]}}
    write("node_config", "two_entries.json", json.dumps(doc, indent=1).encode())
    bad = dict(doc, entries=[entry, dict(root, slot_base=8)])  # overlapping slots
    write("node_config", "overlap.json", json.dumps(bad).encode())
    write("node_config", "bad_types.json",
          json.dumps({"node": 3, "entries": [dict(entry, children=[64], eth_src="x")]}).encode())
    write("node_config", "empty_entries.json", b'{"node": "n", "entries": []}')


# -------------------------------------------------------------------- pcap
def pcap_file(frames, nano=False, big_endian=False, linktype=1):
    e = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for i, f in enumerate(frames):
        out += struct.pack(e + "IIII", 1, i, len(f), len(f)) + f
    return out


def pcapng_file(frames):
    def block(btype, body):
        body += bytes((4 - len(body) % 4) % 4)
        n = 12 + len(body)
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", 1, 0, 65535))
    for i, f in enumerate(frames):
        out += block(6, struct.pack("<IIIII", 0, 0, i, len(f), len(f)) + f)
    return out


def pcap_seeds():
    frames = [panama_frame(1, 0, c, 0, [1.0, 2.0]) for c in range(2)] + [not_panama()]
    write("pcap", "micro.pcap", pcap_file(frames))
    write("pcap", "nano_big_endian.pcap", pcap_file(frames, nano=True, big_endian=True))
    write("pcap", "raw_ip.pcap", pcap_file(frames[:1], linktype=101))
    write("pcap", "cut_off.pcap", pcap_file(frames)[:-20])
    write("pcap", "frames.pcapng", pcapng_file(frames))
    write("pcap", "empty.pcap", pcap_file([]))


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    for t in ["engine", "allreduce_core", "node_config", "pcap"]:
        os.makedirs(os.path.join(CORPUS, t))
    engine_seeds()
    core_seeds()
    config_seeds()
    pcap_seeds()
    for t in sorted(os.listdir(CORPUS)):
        print(f"{t}: {len(os.listdir(os.path.join(CORPUS, t)))} seeds")


if __name__ == "__main__":
    main()
