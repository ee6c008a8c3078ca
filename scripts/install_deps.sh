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
  # NuGet 2.8: restores the C# binding's .nupkg from a folder feed (its test).
  nuget
  libopenmpi-dev openmpi-bin
  nodejs
  python3-onnx
  # The cross builds (cross/*.ini): aarch64 Linux under qemu-user, with the
  # arm64 OpenBLAS; 64-bit Windows (MinGW-w64, zlib for the examples) under Wine.
  g++-aarch64-linux-gnu qemu-user libc6:arm64 libstdc++6:arm64 libopenblas-dev:arm64
  g++-mingw-w64-x86-64-posix libz-mingw-w64-dev wine wine64
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
# The arm64 packages come from the same archive as the machine's own.
for p in "${missing[@]}"; do
  case $p in
    *:arm64)
      if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        dpkg --add-architecture arm64
      fi
      ;;
  esac
done
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
