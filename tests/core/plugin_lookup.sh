#!/bin/sh
# The CUDA plugin is found next to libsnn: next to libsnn.so, or next to the
# executable of a program that links libsnn.a, however the program was
# started and wherever it went since. Each case copies a probe and a fixture
# plugin (which answers SNN_ERR_NO_GPU, status 18, with its own message)
# into a scratch directory and checks that the probe reached the fixture.
# Usage: plugin_lookup.sh STATIC_PROBE DYNAMIC_PROBE LIBSNN_SO FIXTURE_SO
set -u
static_probe=$1 dynamic_probe=$2 libsnn=$3 fixture=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/snn-plugin-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
tmp=$(cd "$tmp" && pwd -P)  # /proc/self/exe names the real directory
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/elsewhere"
cp "$static_probe" "$tmp/bin/snn_plugin_probe"
cp "$static_probe" "$tmp/elsewhere/snn_plugin_probe"
cp "$fixture" "$tmp/bin/libsnn_cuda.so"
cp "$dynamic_probe" "$tmp/dynamic_probe"
cp "$libsnn" "$tmp/lib/libsnn.so"
cp "$fixture" "$tmp/lib/libsnn_cuda.so"
unset SNN_CUDA_PLUGIN
expected='status 18: snn_gpu_status: the plugin lookup fixture was loaded'
failures=0

check() {  # check NAME OUTPUT
    if [ "$2" = "$expected" ]; then
        echo "ok: $1"
    else
        echo "FAIL: $1"
        echo "  expected: $expected"
        echo "  got:      $2"
        failures=$((failures + 1))
    fi
}

check "libsnn.a, started through PATH" \
    "$(cd "$tmp/elsewhere" && PATH="$tmp/bin:$PATH" snn_plugin_probe 2>&1)"
check "libsnn.a, started by a relative path, then chdir" \
    "$(cd "$tmp" && ./bin/snn_plugin_probe --chdir / 2>&1)"
check "libsnn.so opened by a relative path, then chdir" \
    "$(cd "$tmp" && ./dynamic_probe --dlopen ./lib/libsnn.so --chdir / 2>&1)"
check "libsnn.so found through a relative LD_LIBRARY_PATH, then chdir" \
    "$(cd "$tmp" && LD_LIBRARY_PATH=lib ./dynamic_probe --dlopen libsnn.so --chdir / 2>&1)"
check "SNN_CUDA_PLUGIN names the plugin" \
    "$(cd "$tmp/elsewhere" && SNN_CUDA_PLUGIN="$tmp/lib/libsnn_cuda.so" ./snn_plugin_probe 2>&1)"
expected="status 16: snn_gpu_status: the CUDA plugin was not found at $tmp/elsewhere/libsnn_cuda.so"
check "a missing plugin is reported with the absolute path looked at" \
    "$(cd "$tmp/elsewhere" && ./snn_plugin_probe --chdir / 2>&1 | sed 's/ (set SNN_CUDA_PLUGIN.*//')"
[ "$failures" -eq 0 ]
