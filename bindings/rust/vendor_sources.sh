#!/bin/bash
# Copies the snn sources that the Meson build of libsnn reads into
# snn-sys/native/, which `cargo package` bundles into the snn-sys crate
# (its build script builds them when neither SNN_LIB_DIR nor pkg-config
# gives a libsnn). Run it before `cargo package`; native/ is not committed.
#   bash vendor_sources.sh [SOURCE_ROOT]
# SOURCE_ROOT: the snn checkout to copy from (default: the one holding this
# script), for a copy of bindings/rust made elsewhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "${1:-$here/../..}" && pwd)
native=$here/snn-sys/native
rm -rf "$native"
mkdir -p "$native/examples/fashion_mnist"
cp "$root/meson.build" "$root/meson_options.txt" "$root/LICENSE" "$native/"
cp -r "$root/include" "$root/lib" "$root/cuda" "$root/dist" "$native/"
# The top meson.build names this directory for the examples' model header.
cp "$root/examples/fashion_mnist/models.h" "$native/examples/fashion_mnist/"
echo "vendor_sources.sh: $(find "$native" -type f | wc -l) files, $(du -sk "$native" | cut -f1) KiB in snn-sys/native"
