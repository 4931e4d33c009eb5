#!/usr/bin/env bash
# Simulator speed of panama-netsim: events per second and simulated time per
# wall-clock second for 16, 64 and 256 hosts (leaf-spine) or a k-ary fat-tree
# (ft4: 16 hosts, ft8: 128, ft16: 1024) at given background loads, with
# PANAMA jobs of 8 workers on a quarter of the hosts. Prints one line per run
# (wall-clock and CPU time: on a shared machine events per CPU second is the
# steadier figure);
# docs/performance.md ("Network simulation") records the figures.
#
# Usage: scripts/netsim-bench.sh [--hosts "16 64 256 ft4 ft8"] [--loads "0.3 0.6"] [--window-ms 2]
#                                [--seed 1] [--lossless]
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS="16 64 256"
LOADS="0.3 0.6"
WINDOW_MS=2
SEED=1
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) HOSTS=$2; shift 2 ;;
    --loads) LOADS=$2; shift 2 ;;
    --window-ms) WINDOW_MS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --lossless) EXTRA+=(--lossless); shift ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "netsim-bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -x "$BUILD_DIR/sim/network/panama-netsim" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPANAMA_WERROR=ON >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target panama-netsim
fi
OUT=$(mktemp -d /tmp/netsim-bench-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
printf '%-6s %-5s %-10s %-12s %-10s %-12s %-14s %-8s %-8s %-7s %-10s\n' hosts load sim_ms events wall_s events/s \
  sim/wall flows pauses cpu_s events/cpu_s
for h in $HOSTS; do
  case $h in
    16) topo=(--racks 4 --hosts-per-rack 4 --spines 2) ;;
    64) topo=(--racks 8 --hosts-per-rack 8 --spines 4) ;;
    256) topo=(--racks 16 --hosts-per-rack 16 --spines 8) ;;
    1024) topo=(--racks 32 --hosts-per-rack 32 --spines 16) ;;
    ft4|ft8|ft16) topo=(--topology fat-tree --k "${h#ft}") ;;
    *) echo "netsim-bench.sh: hosts must be 16, 64, 256, 1024, ft4, ft8 or ft16" >&2; exit 2 ;;
  esac
  case $h in
    ft*) k=${h#ft}; n=$(( k * k * k / 4 )) ;;
    *) n=$h ;;
  esac
  jobs=$(( n / 32 )); [[ $jobs -lt 1 ]] && jobs=1
  for load in $LOADS; do
    /usr/bin/time -f "%U %S" -o "$OUT/cpu" ./"$BUILD_DIR"/sim/network/panama-netsim "${topo[@]}" --host-gbps 10 --fabric-gbps 20 \
      --jobs "$jobs" --workers-per-job 8 --models resnet50,vgg16 --scale 0.002 --iterations 100000 \
      --load "$load" --duration-ms "$WINDOW_MS" --max-time-ms "$(( 2 * WINDOW_MS ))" --seed "$SEED" \
      ${EXTRA[@]+"${EXTRA[@]}"} --out "$OUT/run" > /dev/null
    /usr/bin/python3 - "$OUT/run/summary.json" "$h" "$load" "$OUT/cpu" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = s["performance"]
cpu = sum(float(x) for x in open(sys.argv[4]).read().split()[-2:])
print(f"{sys.argv[2]:<6} {sys.argv[3]:<5} {s['sim_time_ms']:<10.2f} {int(p['events']):<12} {p['wall_s']:<10.1f} "
      f"{p['events_per_s']:<12.0f} {p['sim_over_wall']:<14.2e} {s['background']['flows_started']:<8} "
      f"{s.get('pfc', {}).get('pause_frames', 0):<8} {cpu:<7.1f} {p['events'] / cpu if cpu > 0 else 0:<10.0f}")
PY
  done
done
