#!/bin/bash
# cargo test (and clippy, when installed) of bindings/rust against the libsnn
# built by Meson.  run_rust.sh SOURCE_ROOT BUILD_ROOT [clippy]
# Every test binary runs even after one fails (each prints its counts); the
# exit status is cargo's, non-zero when any test failed.
set -eu
src=$1; build=$2
command -v cargo >/dev/null || { echo "cargo not found: skipped"; exit 77; }
export SNN_LIB_DIR=$build
export CARGO_TARGET_DIR=$build/bindings-rust-target
cd "$src/bindings/rust"
if [ "${3:-}" = clippy ]; then
    cargo clippy --version >/dev/null 2>&1 || { echo "clippy not installed: skipped"; exit 77; }
    exec cargo clippy --offline --all-targets -- -D warnings
fi
exec cargo test --offline --no-fail-fast
