#!/usr/bin/env bash
# Builds bench/ort_bench.cpp (ONNX Runtime's C++ API) and the ONNX models of
# snn_bench's inference cases into BUILD_DIR/ort, inside the PyTorch 2 chroot:
#
#   bench/build_ort.sh BUILD_DIR
#
# Environment: TORCH2_DIR, the chroot made by `torch2-root setup DIR --dev
# --onnx` (ONNX Runtime 1.21 with its headers, g++, PyTorch 2 for the export);
# TORCH2_ROOT (default: torch2-root on PATH), the torch2-root command.
# BUILD_DIR must be inside the repository (the chroot sees the repository's
# directory only). ort_bench is compiled again when bench/ort_bench.cpp is
# newer, the models exported again when bench/export_onnx.py or
# bench/torch2_cpu.py is.
set -euo pipefail

die() { echo "build_ort.sh: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: bench/build_ort.sh BUILD_DIR"
root=$(cd "$(dirname "$0")/.." && pwd)
[ -d "$1" ] || die "no build directory $1"
build=$(cd "$1" && pwd)
case $build/ in "$root"/*) ;; *) die "$1 is not inside $root: the chroot would not see it" ;; esac
build=${build#"$root"/}
tool=${TORCH2_ROOT:-torch2-root}
command -v "$tool" >/dev/null || die "no $tool: set TORCH2_ROOT to the torch2-root command"
[ -n "${TORCH2_DIR-}" ] || die "TORCH2_DIR is not set: the PyTorch 2 chroot (torch2-root setup DIR --dev --onnx)"
[ -x "$TORCH2_DIR/usr/bin/python3" ] || die "$TORCH2_DIR is not a torch2-root chroot (no usr/bin/python3)"
if [ ! -f "$TORCH2_DIR/usr/include/onnxruntime/onnxruntime_cxx_api.h" ] || [ ! -x "$TORCH2_DIR/usr/bin/g++" ]; then
    die "no ONNX Runtime C++ API or g++ in $TORCH2_DIR: run torch2-root setup $TORCH2_DIR --dev --onnx"
fi

cd "$root"
out=$build/ort
mkdir -p "$out"
if [ ! -x "$out/ort_bench" ] || [ bench/ort_bench.cpp -nt "$out/ort_bench" ]; then
    "$tool" run "$TORCH2_DIR" -- g++ -O2 -std=c++17 -I/usr/include/onnxruntime \
        bench/ort_bench.cpp -o "$out/ort_bench" -lonnxruntime
fi
stamp=$out/.exported
if [ ! -f "$stamp" ] || [ bench/export_onnx.py -nt "$stamp" ] || [ bench/torch2_cpu.py -nt "$stamp" ]; then
    "$tool" run "$TORCH2_DIR" -- python3 bench/export_onnx.py "$out" >/dev/null
    touch "$stamp"
fi
