#!/bin/sh
# snn against PyTorch 2.x (Python, oneDNN convolutions) on snn_bench's CPU
# cases, both pinned to the same two cores:
#
#   bench/run_torch2_compare.sh [BUILD_DIR] [compare.py options ...]
#
# BUILD_DIR (default: build) holds a built bench/snn_bench (with libsnn
# where it was built, or on LD_LIBRARY_PATH); nothing is built, so it may be
# a build directory copied from another machine. bench/sgemm_peak and
# bench/plain_sgemm_mlp are used when they are there.
#
# Environment: PYTHON (default: python3), the Python with PyTorch that runs
# bench/torch2_cpu.py; CPUS (default: 0,1), the CPUs every process is pinned
# to with taskset -c (compare.py's header tells which physical cores those
# are: pick two that are not hyperthreads of one core).
#
# This runs bench/compare.py --peer torch2: for each case, 3 rounds of
# snn_bench, torch2_cpu.py, snn_bench, torch2_cpu.py, ... as separate
# processes with the same SNN_NUM_THREADS (1 or 2, as compare.py's rows
# say), and prints the Markdown table: snn and PyTorch microseconds per call
# (median of the per-process medians) and their ratio, PyTorch / snn (above
# 1: snn is faster). Options after BUILD_DIR go to compare.py and override
# these, e.g. --runs 1, --only CASE ..., --variants default tuned subnormal,
# --output FILE.
set -eu

build=build
case ${1-} in
-* | '') ;;
*)
    build=$1
    shift
    ;;
esac
if [ ! -x "$build/bench/snn_bench" ]; then
    echo "no $build/bench/snn_bench: build it first (meson setup, ninja bench/snn_bench)" >&2
    exit 1
fi
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/.."

exec python3 bench/compare.py "$build" --peer torch2 --python "${PYTHON:-python3}" \
    --taskset "${CPUS:-0,1}" --no-build --runs 3 --variants default \
    --only seed_forward mlp_train_step tiny_train_step tiny_forward cnn_train_step \
    cnn_inference_1000 default_cnn_train_step resnet_train_step "$@"
