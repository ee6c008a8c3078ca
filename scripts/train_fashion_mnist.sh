#!/usr/bin/env bash
# The main job: installs what snn needs (as root), builds it, and trains the
# Fashion-MNIST CNN (default network and epochs). Extra arguments go to the
# example, e.g. --model simplenns --epochs 3.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh --minimal
if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
ninja -C build
exec build/examples/fashion_mnist/fashion_mnist --out build "$@"
