#!/usr/bin/env bash
# Installs, idempotently and without prompts, every Debian 12 package PANAMA
# needs to build, test and run. Safe to run repeatedly; does nothing when all
# packages are present. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git python3 clang-format
  # hardware: RTL simulation, co-simulation, synthesis estimates; tclsh runs
  # the Vitis flow's Tcl against stubs of Vivado's commands
  verilator libsystemc-dev yosys tcl
  # formal checks of the RTL (yosys-smtbmc solvers)
  z3 boolector
  # Alveo host stack
  libxrt-dev libxrt-utils uuid-dev
  # host runtime and software PSwitch
  libdpdk-dev libpcap-dev libnuma-dev iproute2
  # libraries: CLI, configuration, formatting, tests
  libcli11-dev nlohmann-json3-dev libfmt-dev catch2
  # cluster-scale network simulation (ns-3; its CMake/pkg-config files need gsl and sqlite3;
  # tcmalloc: ns-3 allocates per packet and event, 12% of the simulation's CPU with glibc's malloc)
  libns3-dev libgsl-dev libsqlite3-dev libtcmalloc-minimal4
  # framework integration (PyTorch c10d backend) and plots
  python3-torch libtorch-dev pybind11-dev python3-numpy python3-matplotlib
  # fuzzing and sanitizers (libFuzzer, ASan, UBSan)
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "setup: must run as root (missing: ${missing[*]})" >&2; exit 1
  fi
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
