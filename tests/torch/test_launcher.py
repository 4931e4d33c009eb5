"""panama-torchrun's supervision: output prefixes, a failing rank, Ctrl-C.

The ranks run a small Python command (no torch): each writes its pid, the pid
of a `sleep` it started, and the PSwitch pids the launcher exported, then
waits. Checks:
- a rank that exits with status 7 makes the launcher stop the others and
  exit with 7;
- SIGINT to the launcher stops everything, exit status 130;
- either way no process of the run is left (ranks, their children, the
  PSwitch) and no DPDK runtime directory of the launcher remains;
- output lines carry the rank prefix; bad options exit with status 2.
Usage: test_launcher.py <panama-torchrun>
"""

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

TORCHRUN = sys.argv[1]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAILED: {what}", flush=True)
    else:
        print(f"ok: {what}", flush=True)


RANK_CMD = r"""
import os, subprocess, sys, time
d = sys.argv[1]
child = subprocess.Popen(["sleep", "600"])
with open(os.path.join(d, "pids.%s" % os.environ["RANK"]), "w") as f:
    f.write("%d %d %s\n" % (os.getpid(), child.pid, os.environ["PANAMA_PSWITCH_PIDS"]))
print("rank says hello", flush=True)
print("rank says hello on stderr", file=sys.stderr, flush=True)
if os.environ["RANK"] == "2" and sys.argv[2] == "fail":
    time.sleep(0.5)
    sys.exit(7)
time.sleep(600)
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waiting for its parent counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for_pid_files(d, n, proc):
    # A hang guard only: the ranks start within seconds.
    for _ in range(1200):
        if len(glob.glob(os.path.join(d, "pids.*"))) == n or proc.poll() is not None:
            return
        time.sleep(0.1)


def run_case(mode):
    d = tempfile.mkdtemp(prefix="panama-launcher-test-")
    proc = subprocess.Popen([TORCHRUN, "--workers", "4", "--", "/usr/bin/python3", "-c", RANK_CMD, d, mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_pid_files(d, 4, proc)
    pids = []
    for path in glob.glob(os.path.join(d, "pids.*")):
        own, child, switches = open(path).read().split()
        pids += [int(own), int(child)] + [int(kv.split("=")[1]) for kv in switches.split(",")]
    check(len(pids) == 4 * 3, f"{mode}: four ranks reported their pids")
    if mode == "interrupt":
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        check(False, f"{mode}: the launcher did not stop")
    expected = 7 if mode == "fail" else 130
    check(proc.returncode == expected, f"{mode}: exit status {proc.returncode}, expected {expected}")
    check(not [p for p in set(pids) if alive(p)], f"{mode}: no rank, rank child or PSwitch left")
    check(not glob.glob(f"/var/run/dpdk/pnm{proc.pid}-*"), f"{mode}: no DPDK runtime directory left")
    for r in range(4):
        check(f"[rank {r}] rank says hello" in out, f"{mode}: rank {r}'s stdout forwarded with its prefix")
        check(f"[rank {r}] rank says hello on stderr" in err, f"{mode}: rank {r}'s stderr forwarded")
    if mode == "fail":
        check("rank 2 failed (exit 7)" in err, f"{mode}: the launcher names the failed rank")
    for path in glob.glob(os.path.join(d, "pids.*")):
        os.remove(path)
    os.rmdir(d)


run_case("fail")
run_case("interrupt")
bad = subprocess.run([TORCHRUN, "--jobs", "2", "--", "true"], capture_output=True, text=True)
check(bad.returncode == 2 and "one job" in bad.stderr, "more than one job is rejected with status 2")
bad = subprocess.run([TORCHRUN, "--workers", "2", "--link-rate", "-1", "--", "true"], capture_output=True, text=True)
check(bad.returncode != 0 and "link-rate" in bad.stderr, "a bad cluster option is rejected")

if failures:
    print(f"test_launcher: {len(failures)} check(s) failed", flush=True)
    sys.exit(1)
print("test_launcher: all checks passed", flush=True)
