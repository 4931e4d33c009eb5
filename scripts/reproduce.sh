#!/usr/bin/env bash
# The paper-like experiment on the ns-3 network simulation: a 64-host
# leaf-spine cluster shared by four data-parallel jobs and web-search
# background traffic, at several background loads, for each scheme (panama,
# ring, single-tree, fixed-window) on the same topology, jobs and traffic
# (same seed). Writes every run's outputs, a table (report.md) and plots
# (PNG) into the output folder. docs/reproduction.md explains the set-up and
# shows the results of one run.
#
# Usage: scripts/reproduce.sh [--out DIR] [--seed N] [--loads "0.3 0.6"]
#                             [--window-ms MS] [--parallel N] [--quick]
#                             [--fat-tree K] [--lossless]
#   --quick: 16 hosts and a 2 ms window (a few minutes), to try the pipeline.
#   --fat-tree K: a k-ary fat-tree (K^3/4 hosts, all links 10 Gb/s) instead of
#                 the leaf-spine fabric; --lossless: PFC instead of tail drop.
#
#        scripts/reproduce.sh --study regime|confirm|contention|quick [--seeds "1 2"] [--parallel N] [--out DIR]
#   --study: the paired, pooled study of docs/reproduction.md (the regime
#            map and its confirmations; docs/contention.md) through scripts/netsim_study.py;
#            every run cached under DIR/runs, so a stopped study resumes.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == --study ]]; then
  GRID=${2:?--study needs a grid: regime, confirm, contention or quick}
  shift 2
  SEEDS=(1)
  ARGS=()
  STUDY_OUT=out/study-$GRID
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --seeds) read -r -a SEEDS <<< "$2"; shift 2 ;;
      --parallel) ARGS+=(--parallel "$2"); shift 2 ;;
      --out) STUDY_OUT=$2; shift 2 ;;
      --report-only) ARGS+=(--report-only); shift ;;
      *) echo "reproduce.sh --study: unknown option '$1' (--seeds, --parallel, --out, --report-only)" >&2; exit 2 ;;
    esac
  done
  BUILD_DIR=${BUILD_DIR:-build}
  if [[ ! -x "$BUILD_DIR/sim/network/panama-netsim" ]]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$BUILD_DIR" -j2 --target panama-netsim
  fi
  exec /usr/bin/python3 scripts/netsim_study.py --grid "$GRID" --seeds "${SEEDS[@]}" --out "$STUDY_OUT" \
    --build-dir "$BUILD_DIR" "${ARGS[@]}"
fi

OUT=out/reproduction
SEED=1
LOADS="0.3 0.5 0.7"
WINDOW_MS=6
PARALLEL=2
TOPO=(--racks 8 --hosts-per-rack 8 --spines 4 --host-gbps 10 --fabric-gbps 20)
JOBS=(--jobs 4 --workers-per-job 8 --models resnet50,vgg16,bert-large,vgg16 --scale 0.002 --iterations 100000)
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --loads) LOADS=$2; shift 2 ;;
    --window-ms) WINDOW_MS=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --quick)
      [[ ${TOPO[0]} == --topology ]] || TOPO=(--racks 4 --hosts-per-rack 4 --spines 2 --host-gbps 10 --fabric-gbps 20)
      JOBS=(--jobs 2 --workers-per-job 4 --models resnet50,vgg16 --scale 0.002 --iterations 100000)
      WINDOW_MS=2; shift ;;
    --fat-tree)
      TOPO=(--topology fat-tree --k "$2" --host-gbps 10 --fabric-gbps 10); shift 2 ;;
    --lossless) EXTRA+=(--lossless); shift ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "reproduce.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -x "$BUILD_DIR/sim/network/panama-netsim" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPANAMA_WERROR=ON >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target panama-netsim
fi
NETSIM=$BUILD_DIR/sim/network/panama-netsim
mkdir -p "$OUT"
COMMON=("${TOPO[@]}" "${JOBS[@]}" --duration-ms "$WINDOW_MS" --seed "$SEED" --buffer-kb 1024 --ecn-k-kb 100 ${EXTRA[@]+"${EXTRA[@]}"})
echo "reproduce: $NETSIM ${COMMON[*]}" | tee "$OUT/command.txt"
echo "reproduce: loads $LOADS, schemes panama ring single-tree fixed-window, $PARALLEL at a time"
start=$(date +%s)
runs=()
for load in $LOADS; do
  for scheme in panama ring single-tree fixed-window; do
    runs+=("$scheme $load")
  done
done
printf '%s\n' "${runs[@]}" | xargs -P "$PARALLEL" -L 1 bash -c '
  scheme=$0; load=$1; dir='"$OUT"'/${scheme}_load${load}
  t0=$(date +%s)
  if '"$NETSIM"' '"${COMMON[*]}"' --scheme "$scheme" --load "$load" --out "$dir" --progress > "$dir.log" 2>&1; then
    echo "  done: $scheme load $load in $(( $(date +%s) - t0 )) s"
  else
    echo "  FAILED: $scheme load $load (see $dir.log)"; exit 255
  fi'
echo "reproduce: all runs in $(( $(date +%s) - start )) s"
/usr/bin/python3 scripts/netsim_report.py "$OUT"
