#!/usr/bin/env bash
# Data-parallel training with PyTorch over PANAMA: installs what is missing,
# builds the `panama` torch.distributed backend and panama-torchrun, trains
# the example (sw/torch/examples/train_ddp.py) with DDP on 4 ranks of the
# virtual cluster through PANAMA, then the same with Gloo over loopback, and
# prints both loss curves side by side (docs/pytorch.md).
# Environment: BUILD_DIR, JOBS, WORKERS (4), STEPS (60), MODEL (mlp, cnn,
# transformer), DTYPE (fp32, bf16), HOOK (none, fp16, bf16, powersgd).
# Gloo of Debian's torch 1.13 has no bfloat16: with DTYPE=bf16 or HOOK=bf16
# the Gloo run is the same model in float32 without a hook (a reference
# curve, not the same arithmetic).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
WORKERS=${WORKERS:-4}
STEPS=${STEPS:-60}
MODEL=${MODEL:-mlp}
DTYPE=${DTYPE:-fp32}
HOOK=${HOOK:-none}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" --target panama_torch -j "${JOBS:-2}"

out=$(mktemp -d /tmp/panama-train-demo-XXXXXX)
trap 'rm -rf "$out"' EXIT
run() {  # backend dtype hook
  echo "== training with $1 ($WORKERS ranks, $STEPS steps, model $MODEL, dtype $2, hook $3) =="
  "$BUILD_DIR/sw/torch/panama-torchrun" --workers "$WORKERS" -- \
    /usr/bin/python3 -W ignore::UserWarning sw/torch/examples/train_ddp.py \
    --backend "$1" --model "$MODEL" --dtype "$2" --hook "$3" --steps "$STEPS" --curve "$out/$1.json"
}
run panama "$DTYPE" "$HOOK"
if [ "$DTYPE" = bf16 ] || [ "$HOOK" = bf16 ]; then
  echo "(Gloo of this torch has no bfloat16: the Gloo run is float32 without a hook)"
  run gloo fp32 none
else
  run gloo "$DTYPE" "$HOOK"
fi
/usr/bin/python3 - "$out/panama.json" "$out/gloo.json" <<'PY'
import json, sys
p, g = (json.load(open(f)) for f in sys.argv[1:3])
print("\n== loss per step (mean over ranks) ==")
print(f"{'step':>5}  {'panama':>10}  {'gloo':>10}  {'difference':>10}")
for i, (a, b) in enumerate(zip(p["loss"], g["loss"])):
    print(f"{i:5d}  {a:10.6f}  {b:10.6f}  {a - b:10.2e}")
worst = max(abs(a - b) / abs(b) for a, b in zip(p["loss"], g["loss"]))
print(f"PANAMA ({p['dtype']}, hook {p['hook']}): loss {p['loss'][0]:.4f} -> {p['loss'][-1]:.4f} in "
      f"{p['seconds']:.1f} s; Gloo ({g['dtype']}, hook {g['hook']}): {g['loss'][0]:.4f} -> {g['loss'][-1]:.4f} in "
      f"{g['seconds']:.1f} s; largest relative difference {worst:.2e}")
s = p["stats"]
print(f"PANAMA: {s['allreduces']} allreduces {s['allreduces_by_dtype']}, retransmissions {s['retransmissions']}")
PY
