#!/usr/bin/env bash
# Installs the Debian packages snn builds and tests with (idempotent).
# Run as root (or with sudo); does nothing for packages already present.
set -euo pipefail

packages=(
  build-essential pkg-config meson ninja-build python3
  libopenblas-dev zlib1g-dev nlohmann-json3-dev libgtest-dev
  dataset-fashion-mnist
  wamerican wfrench wngerman witalian wspanish wportuguese wdutch wswedish wpolish
  valgrind clang libclang-rt-14-dev
  mono-mcs nunit-console libnunit-cil-dev
  libopenmpi-dev openmpi-bin
  nodejs
  python3-onnx
)
# npm installs onnxruntime-node for the onnx suite (tests/onnx/ort). Some
# nodejs packages (NodeSource's) bring npm with them and conflict with
# Debian's npm package: ask for it only when no npm is there.
if ! command -v npm >/dev/null; then
  packages+=(npm)
fi
if [ "${1:-}" = "--minimal" ]; then
  packages=(build-essential pkg-config meson ninja-build python3 libopenblas-dev zlib1g-dev
            nlohmann-json3-dev libgtest-dev dataset-fashion-mnist)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "snn needs these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
