"""The DDP example (sw/torch/examples/train_ddp.py) under panama-torchrun,
4 ranks: a ResNet-style CNN with bf16 gradient compression, and a small
transformer trained in bfloat16. For each: the loss is finite and goes
down (the mean of the last 3 steps below that of the first 3), and the
gradient allreduces went through PANAMA in bfloat16 (at least one per step),
nothing refused.

Usage: test_examples.py <panama-torchrun>
"""

import json
import os
import subprocess
import sys
import tempfile

torchrun = sys.argv[1]
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sw", "torch", "examples",
                       "train_ddp.py")
STEPS = 12
failures = []
with tempfile.TemporaryDirectory(prefix="panama-examples-") as tmp:
    for args in (["--model", "cnn", "--hook", "bf16", "--batch", "16", "--lr", "0.02"],
                 ["--model", "transformer", "--dtype", "bf16", "--batch", "16"]):
        name = " ".join(args)
        curve = os.path.join(tmp, "curve.json")
        cmd = [torchrun, "--workers", "4", "--", sys.executable, "-W", "ignore::UserWarning", example,
               "--steps", str(STEPS), "--print-every", "4", "--curve", curve] + args
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400)
        print(p.stdout[-3000:], flush=True)
        if p.returncode != 0:
            failures.append(f"{name}: exit {p.returncode}")
            continue
        r = json.load(open(curve))
        loss = r["loss"]
        first, last = sum(loss[:3]) / 3, sum(loss[-3:]) / 3
        if not r["finite"] or not last < first:
            failures.append(f"{name}: loss did not go down: {loss}")
        s = r["stats"]
        if s["allreduces_by_dtype"].get("bf16", 0) < STEPS:
            failures.append(f"{name}: {s['allreduces_by_dtype']} allreduces through PANAMA, expected >= {STEPS} bf16")
        if s["refused_total"] != 0:
            failures.append(f"{name}: refused calls")
        print(f"{name}: loss {first:.4f} -> {last:.4f} (mean of 3 steps), PANAMA allreduces "
              f"{s['allreduces_by_dtype']}, retransmissions {s['retransmissions']}", flush=True)
for f in failures:
    print(f"FAILED: {f}", flush=True)
sys.exit(1 if failures else 0)
