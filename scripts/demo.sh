#!/usr/bin/env bash
# The main job: installs what is missing, builds panama-cluster and runs the
# default virtual cluster (one software PSwitch, 4 workers, 2 trees, three
# 64 MiB allreduces checked bit for bit), every node a thread of one process
# linked by net_ring pairs (--nodes threads: on a small machine this measures
# better than a process per node, docs/performance.md). Arguments go to
# panama-cluster, e.g. scripts/demo.sh --topology two-tier --iterations 5,
# or scripts/demo.sh --nodes processes (a DPDK process per node over memif).
# (scripts/pcap-demo.sh runs the engine alone over the bundled capture.)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" --target panama-cluster -j "${JOBS:-2}"
exec "$BUILD_DIR/sw/cluster/panama-cluster" --nodes threads "$@"
