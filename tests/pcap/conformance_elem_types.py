#!/usr/bin/python3
"""Conformance of an engine to docs/protocol.md for fp32, bf16 and fp16.

Written from docs/protocol.md (sections 1-7), docs/configuration.md and
docs/pcap-tool.md only: frames are packed here with struct, the numbers
come from numpy's float32 (widening, sums in arrival order) and from the
rounding rule of section 7 restated with float64 comparisons (bf16) and
numpy's float16 conversion (fp16). Nothing of the project's code is used
besides the panama-pcap binary under test.

For every engine given, it runs
  * one engine, per type: random contributions, every special class (zeros
    of both signs, subnormals, infinities, NaNs, ties, overflow at
    emission), several element counts up to a slot's capacity;
  * a three-level tree (two leaf engines -> a middle engine -> the root),
    each engine a panama-pcap run fed with the previous level's output;
and checks every emitted frame bit for bit. Every engine (the model and
the RTL engine alike) sums all three types. The checks for an engine whose
ELEM_TYPES lacks a 16-bit type (drop_bad_elem_type, nothing emitted, fp32
still exact) stay in one_engine() for such engines; none is run here.

Usage: conformance_elem_types.py PANAMA_PCAP [ENGINE ...]   (default: model)
The seed is printed; PANAMA_TEST_SEED=<n> replays a run.
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

FP32, BF16, FP16 = 1, 2, 3
NAMES = {FP32: "fp32", BF16: "bf16", FP16: "fp16"}
WIDTH = {FP32: 4, BF16: 2, FP16: 2}
PORT = 9600
SLOT_ELEMS = 2304  # the default build's SLOT_ELEMS (docs/protocol.md §1)


# ---------------------------------------------------------------- numbers (§7)

def widen(t, pattern):
    """A payload element's bit pattern -> its value as np.float32."""
    if t == FP32:
        return np.array([pattern], dtype=np.uint32).view(np.float32)[0]
    if t == BF16:  # the value of the binary32 pattern h * 2^16
        return np.array([pattern << 16], dtype=np.uint32).view(np.float32)[0]
    return np.float32(np.array([pattern], dtype=np.uint16).view(np.float16)[0])


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def round_to(t, x):
    """A float32 accumulator -> the emitted element pattern of type t."""
    x = np.float32(x)
    if t == FP32:
        return 0x7FC00000 if np.isnan(x) else f32_bits(x)
    if np.isnan(x):
        return 0x7FC0 if t == BF16 else 0x7E00
    if t == FP16:  # IEEE binary16 conversion: nearest even, overflow to infinity, subnormals kept
        with np.errstate(over="ignore"):
            return int(np.array([x], dtype=np.float16).view(np.uint16)[0])
    # bf16: the two neighbouring bf16 values, compared in float64.
    bits = f32_bits(x)
    sign = bits & 0x80000000
    mag = bits & 0x7FFFFFFF
    down = mag & 0xFFFF0000
    up = down + 0x10000  # the next pattern (past the largest finite: the infinity pattern)
    v = abs(float(x))
    vd = float(np.array([down], dtype=np.uint32).view(np.float32)[0])
    if up >= 0x7F800000:
        vu = 2.0 ** 128  # the next step, as if the exponent went on
    else:
        vu = float(np.array([up], dtype=np.uint32).view(np.float32)[0])
    if v - vd < vu - v:
        r = down
    elif v - vd > vu - v:
        r = up
    else:
        r = down if ((down >> 16) & 1) == 0 else up
    return ((sign | r) >> 16) & 0xFFFF


def reference(t, arrivals):
    """First contribution stored, later ones added in float32 in arrival order, rounded once."""
    acc = [widen(t, p) for p in arrivals[0]]
    for contrib in arrivals[1:]:
        with np.errstate(over="ignore", invalid="ignore"):
            acc = [np.float32(a + widen(t, p)) for a, p in zip(acc, contrib)]
    return [round_to(t, a) for a in acc]


# ---------------------------------------------------------------- frames (§1-§3)

def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def mac(s):
    return bytes(int(b, 16) for b in s.split(":"))


def ip(s):
    return bytes(int(b) for b in s.split("."))


def frame(t, job, tree, child, seq, payload, ptype=1, src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:10",
          src_ip="10.0.0.1", dst_ip="10.0.0.10", ecn=2, cwnd_cap=0xFFFF):
    n = len(payload)
    w = WIDTH[t]
    body = b"".join(struct.pack("<I" if w == 4 else "<H", p) for p in payload)
    panama = struct.pack("!BBHBBHIHH", 1, ptype, job, tree, t, child, seq, cwnd_cap, n) + bytes(6)
    udp = struct.pack("!HHHH", PORT, PORT, 8 + 22 + w * n, 0)
    iph = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + 8 + 22 + w * n, 0, 0x4000, 64, 17, 0,
                                ip(src_ip), ip(dst_ip)))
    iph[10:12] = struct.pack("!H", ip_checksum(bytes(iph)))
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + bytes(iph) + udp + panama + body


def parse(f):
    """(type, elem_type, job, tree, child, seq, ecn, elem_count, payload patterns) of a PANAMA frame."""
    ptype, job, tree, t, child, seq, _cap, n = struct.unpack("!xBHBBHIHH", f[42:58])
    w = WIDTH[t]
    assert len(f) == 64 + w * n, f"frame of {len(f)} bytes for {n} elements of type {t}"
    fmt = "<%d%s" % (n, "I" if w == 4 else "H")
    return ptype, t, job, tree, child, seq, f[15] & 3, n, list(struct.unpack(fmt, f[64:]))


# ---------------------------------------------------------------- pcap files

def write_pcap(path, frames):
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, f in enumerate(frames):
            out.write(struct.pack("<IIII", 1795219200, i, len(f), len(f)))
            out.write(f)


def read_pcap(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic in (0xA1B2C3D4, 0xA1B23C4D), hex(magic)
    off, frames = 24, []
    while off < len(data):
        _s, _f, incl, _orig = struct.unpack("<IIII", data[off:off + 16])
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


# ---------------------------------------------------------------- engines

ENGINE_MAC = "02:00:00:00:00:10"


def entry(index, job, tree, root, children, slot_base, out_child_id=0, parent_mac="02:00:00:00:01:00",
          parent_ip="10.0.1.1"):
    return {"index": index, "job": job, "tree": tree, "root": root, "fan_in": len(children),
            "children": children, "slot_base": slot_base, "slot_count": 4, "out_child_id": out_child_id,
            "eth_src": ENGINE_MAC, "eth_dst": "01:00:5e:00:00:01" if root else parent_mac,
            "ip_src": "10.0.0.10", "ip_dst": "239.0.0.1" if root else parent_ip,
            "udp_src": PORT, "udp_dst": PORT, "ttl": 64, "dscp": 0}


class Runner:
    def __init__(self, pcap_bin, engine, workdir):
        self.bin, self.engine, self.dir, self.n = pcap_bin, engine, workdir, 0

    def run(self, entries, frames):
        """Runs one engine over `frames`; returns (emitted frames, global counters)."""
        self.n += 1
        base = os.path.join(self.dir, f"{self.engine}-{self.n}")
        with open(base + ".json", "w") as f:
            json.dump({"node": f"n{self.n}", "engine": {"udp_port": PORT}, "entries": entries}, f)
        write_pcap(base + ".in.pcap", frames)
        r = subprocess.run([self.bin, "--config", base + ".json", "--in", base + ".in.pcap", "--out",
                            base + ".out.pcap", "--engine", self.engine, "--json", "-q"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"panama-pcap failed ({r.returncode}): {r.stderr}")
        return read_pcap(base + ".out.pcap"), json.loads(r.stdout)["counters"]["global"]


# ---------------------------------------------------------------- traffic

def special_patterns(t):
    """Every special class of the type, as element patterns."""
    if t == FP32:
        return [0, 0x80000000, 1, 0x807FFFFF, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00001, 0x3F800000]
    if t == BF16:
        return [0, 0x8000, 1, 0x807F, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7F81, 0xFFC1, 0x3F80, 0x3F81]
    return [0, 0x8000, 1, 0x83FF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7C01, 0xFE01, 0x3C00, 0x3C01, 0x0400]


def random_pattern(rng, t):
    k = rng.random()
    specials = special_patterns(t)
    if k < 0.2:
        return rng.choice(specials)
    if t == FP32:
        return (rng.getrandbits(1) << 31) | (rng.randint(100, 140) << 23) | rng.getrandbits(23)
    mbits, bias = (7, 127) if t == BF16 else (10, 15)
    return (rng.getrandbits(1) << 15) | (rng.randint(bias - 10, bias + 4) << mbits) | rng.getrandbits(mbits)


def tie_arrivals(t):
    """Two contributions per element whose float32 sums are exact and need rounding to the type."""
    if t == BF16:
        # 1 + 2^-8: halfway between 1 and 1 + 2^-7, to the even 1.0; 1 + 3*2^-8: halfway between
        # 1 + 2^-7 and 1 + 2^-6, to the even 1 + 2^-6; 1 + 1.5*2^-8: above halfway, to 1 + 2^-7.
        return [[0x3F80, 0x3F80, 0x3F80], [0x3B80, 0x3C40, 0x3BC0]]
    if t == FP16:
        # 1 + 2^-11: to 1.0; 1 + 3*2^-11: to 1 + 2^-9; 2^-24 + 0: the smallest subnormal.
        return [[0x3C00, 0x3C00, 0x0001], [0x1000, 0x1600, 0x0000]]
    return [[0x3F800000], [0x33800000]]  # 1 + 2^-24: a tie in fp32 itself, to 1.0


def check(cond, msg, failures):
    if not cond:
        failures.append(msg)
        if len(failures) <= 10:
            print("FAIL:", msg)


def one_engine(runner, rng, failures, summing):
    """Per type: a root entry with fan-in 3, random and special contributions."""
    entries, frames, expect = [], [], {}
    for t in (FP32, BF16, FP16):
        job = 10 + t
        entries.append(entry(len(entries), job, 0, True, [0, 1, 2], 4 * len(entries)))
        cases = [[special_patterns(t)[i % len(special_patterns(t))] for i in range(40)] for _ in range(3)]
        cases = [cases]  # seq 0: specials, rotated differently per child
        cases[0][1] = cases[0][1][5:] + cases[0][1][:5]
        cases[0][2] = cases[0][2][11:] + cases[0][2][:11]
        tie = tie_arrivals(t)
        cases.append([tie[0], tie[1], [0] * len(tie[0])])
        for n in (1, 2, 31, 32, 33, 257, SLOT_ELEMS if t != FP32 else 2288):
            cases.append([[random_pattern(rng, t) for _ in range(n)] for _ in range(3)])
        for seq, arrivals in enumerate(cases):
            order = [0, 1, 2]
            rng.shuffle(order)
            for c in order:
                frames.append(frame(t, job, 0, c, seq, arrivals[c], src_mac=f"02:00:00:00:{t:02x}:{c + 1:02x}"))
            expect[(job, seq)] = (t, reference(t, [arrivals[c] for c in order]))
    out, counters = runner.run(entries, frames)
    got = {}
    for f in out:
        ptype, t, job, _tree, _child, seq, _ecn, _n, payload = parse(f)
        check(ptype == 2, f"{runner.engine}: job {job} seq {seq}: type {ptype}, expected result-down", failures)
        got[(job, seq)] = (t, payload)
    for key, (t, want) in expect.items():
        if t in summing:
            check(key in got, f"{runner.engine}: no result for {NAMES[t]} job/seq {key}", failures)
            if key in got:
                gt, gp = got[key]
                bad = [i for i, (a, b) in enumerate(zip(gp, want)) if a != b]
                check(gt == t and len(gp) == len(want) and not bad,
                      f"{runner.engine}: {NAMES[t]} seq {key[1]}: {len(bad)} elements differ, first "
                      f"{[(i, hex(gp[i]), hex(want[i])) for i in bad[:3]]}", failures)
        else:
            check(key not in got, f"{runner.engine}: result for unsupported {NAMES[t]} {key}", failures)
    unsupported = sum(3 for (t, _) in expect.values() if t not in summing)
    check(counters["drop_bad_elem_type"] == unsupported,
          f"{runner.engine}: drop_bad_elem_type {counters['drop_bad_elem_type']}, expected {unsupported}",
          failures)
    check(counters["emitted"] == sum(1 for (t, _) in expect.values() if t in summing),
          f"{runner.engine}: emitted {counters['emitted']}", failures)


def three_levels(runner, rng, failures, t):
    """Leaves A (workers 0,1) and B (workers 2,3) -> middle M -> root R (M and worker 4)."""
    job, n, seqs = 40 + t, 100, 3
    leaf_a = [entry(0, job, 0, False, [0, 1], 0, out_child_id=0)]
    leaf_b = [entry(0, job, 0, False, [0, 1], 0, out_child_id=1)]
    mid = [entry(0, job, 0, False, [0, 1], 0, out_child_id=0)]
    root = [entry(0, job, 0, True, [0, 1], 0)]
    worker = [[[random_pattern(rng, t) for _ in range(n)] for _ in range(seqs)] for _ in range(5)]

    def level(entries, sources):
        frames = []
        for seq in range(seqs):
            for child, w in sources:
                frames.append(frame(t, job, 0, child, seq, worker[w][seq]))
        return frames

    out_a, _ = runner.run(leaf_a, level(leaf_a, [(0, 0), (1, 1)]))
    out_b, _ = runner.run(leaf_b, level(leaf_b, [(0, 2), (1, 3)]))
    out_m, _ = runner.run(mid, out_b + out_a)  # B's partials first, then A's
    direct = [frame(t, job, 0, 1, seq, worker[4][seq]) for seq in range(seqs)]
    out_r, _ = runner.run(root, direct + out_m)
    check(len(out_r) == seqs, f"{runner.engine}: {NAMES[t]} three levels: {len(out_r)} results", failures)
    for f in out_r:
        _p, ft, _j, _tr, _c, seq, _e, _n, payload = parse(f)
        a = reference(t, [worker[0][seq], worker[1][seq]])
        b = reference(t, [worker[2][seq], worker[3][seq]])
        m = reference(t, [b, a])
        want = reference(t, [worker[4][seq], m])
        bad = sum(1 for x, y in zip(payload, want) if x != y)
        check(ft == t and bad == 0, f"{runner.engine}: {NAMES[t]} three levels seq {seq}: {bad} differ", failures)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    pcap_bin, engines = sys.argv[1], sys.argv[2:] or ["model"]
    env_seed = os.environ.get("PANAMA_TEST_SEED", "") or os.environ.get("PANAMA_SEED", "")
    seed = int(env_seed, 0) if env_seed else random.SystemRandom().getrandbits(48)
    print(f"conformance_elem_types: seed {seed} (replay with PANAMA_TEST_SEED={seed})")
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for engine in engines:
            rng = random.Random(seed)
            runner = Runner(pcap_bin, engine, d)
            summing = {FP32, BF16, FP16}
            one_engine(runner, rng, failures, summing)
            for t in sorted(summing):
                three_levels(runner, rng, failures, t)
            print(f"{engine}: checked {', '.join(NAMES[t] for t in sorted(summing))}")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all results bit-exact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
