#!/usr/bin/env bash
# snn against PyTorch on the four networks of examples/words, both pinned to
# the same two cores:
#
#   bench/words_compare.sh [BUILD_DIR] [--rounds N] [--steps N] [--train]
#
# (--rounds 0 --train: the training runs alone)
#
# BUILD_DIR (default: build) holds the built examples/words/words and
# bench/words_bench; nothing is built. The word lists must be installed
# (scripts/train_words.sh installs them). Environment: PYTHON (default
# python3), the command that runs Python with PyTorch 2, for example
#   PYTHON="torch2-root run TORCH2_DIR -- python3"
# (it is run from the repository root, which holds the data it reads);
# CPUS (default 0,1), the CPUs every process is pinned to with taskset -c.
#
# 1. The example exports its data to BUILD_DIR/words-data/words.bin and the
#    initial parameters of each network (seed 1), which bench/words_torch.py
#    reads (--init): both train the same networks from the same parameters
#    on the same batches.
# 2. Step times: for each network, N rounds (default 3) of words_bench
#    (SNN_NUM_THREADS=1, then 2) and words_torch.py --time-steps (which tries
#    torch.set_num_threads 1 and 2 itself), one process after the other.
#    PyTorch runs with OPENBLAS_NUM_THREADS=1: its OpenBLAS (Debian's
#    pthreads build) otherwise starts threads of its own inside each of
#    PyTorch's, which made its steps several times slower on two cores (snn
#    keeps OpenBLAS single-threaded inside its own pool in any case).
#    Each side's step time is its fastest setting's median, and the
#    table shows the median over the rounds: model, snn ms/step, PyTorch
#    ms/step, ratio (PyTorch / snn: above 1, snn is faster), and snn's heap
#    allocations per step.
# 3. With --train, each network is then trained once by the example and
#    once by the twin with the example's default settings (the same epochs,
#    batches and learning rate, from the same parameters; snn on 2 threads,
#    PyTorch on TORCH_THREADS, default 1: on a shared two-core machine its
#    two OpenMP threads wait on each other and trained 3 to 7 times slower
#    than one), and
#    a second table shows the test accuracy (lang) or bits per character
#    (lm) of both and their training times; the whole outputs are kept in
#    BUILD_DIR/words-results.
set -euo pipefail

build=build
case ${1-} in
-* | '') ;;
*)
    build=$1
    shift
    ;;
esac
rounds=3
steps=100
train=0
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --train) train=1; shift ;;
    *) echo "usage: bench/words_compare.sh [BUILD_DIR] [--rounds N] [--steps N] [--train]" >&2; exit 2 ;;
    esac
done
for exe in examples/words/words bench/words_bench; do
    if [ ! -x "$build/$exe" ]; then
        echo "no $build/$exe: build it first (meson setup, ninja $exe)" >&2
        exit 1
    fi
done
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
cpus=${CPUS:-0,1}
torch_threads=${TORCH_THREADS:-1}
pin() { taskset -c "$cpus" "$@"; }

data=$build/words-data
mkdir -p "$data"
cases="lang_lstm lang_transformer lm_lstm lm_transformer"
for c in $cases; do
    pin "$build/examples/words/words" --quiet --task "${c%%_*}" --model "${c#*_}" --export "$data" > /dev/null
done
# The twin runs from the repository root: it reads the data by a relative path.
rel_data=$(realpath --relative-to=. "$data")
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
min2() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b) ? a : b }'; }

# Rounds of step times, then the table.
timing() {
    for round in $(seq "$rounds"); do
        for c in $cases; do
            snn1=$(SNN_NUM_THREADS=1 pin "$build/bench/words_bench" --steps "$steps" "$c")
            snn2=$(SNN_NUM_THREADS=2 pin "$build/bench/words_bench" --steps "$steps" "$c")
            min2 "$(echo "$snn1" | awk '{ print $2 }')" "$(echo "$snn2" | awk '{ print $2 }')" >> "$log/$c.snn"
            echo "$snn1" "$snn2" | awk '{ print ($3 > $6) ? $3 : $6 }' >> "$log/$c.allocs"
            # shellcheck disable=SC2086
            OPENBLAS_NUM_THREADS=1 pin $python bench/words_torch.py --data "$rel_data" --task "${c%%_*}" \
                --model "${c#*_}" --init "$rel_data/${c}_seed1.safetensors" --time-steps "$steps" |
                awk '/^time best/ { print $4 }' >> "$log/$c.torch"
            echo "round $round/$rounds $c: snn $(tail -n 1 "$log/$c.snn") ms," \
                 "PyTorch $(tail -n 1 "$log/$c.torch") ms" >&2
        done
    done
    echo "| model | snn ms/step | PyTorch ms/step | ratio | snn allocations/step |"
    echo "| --- | --- | --- | --- | --- |"
    for c in $cases; do
        awk -v c="$c" -v s="$(median < "$log/$c.snn")" -v t="$(median < "$log/$c.torch")" \
            -v a="$(sort -g "$log/$c.allocs" | tail -n 1)" \
            'BEGIN { printf "| %s | %.2f | %.2f | %.2fx | %s |\n", c, s, t, t / s, a }'
    done
}

# One training run of each side per network; their whole outputs are kept
# in BUILD_DIR/words-results.
training() {
    results=$build/words-results
    mkdir -p "$results"
    echo "| model | snn | PyTorch | snn training s | PyTorch training s ($torch_threads thread(s)) |"
    echo "| --- | --- | --- | --- | --- |"
    for c in $cases; do
        pin "$build/examples/words/words" --task "${c%%_*}" --model "${c#*_}" --threads 2 \
            > "$results/$c.snn.txt"
        # shellcheck disable=SC2086
        OPENBLAS_NUM_THREADS=1 pin $python bench/words_torch.py --data "$rel_data" --task "${c%%_*}" \
            --model "${c#*_}" --threads "$torch_threads" --init "$rel_data/${c}_seed1.safetensors" \
            > "$results/$c.torch.txt"
        read -r s_metric s_time <<< "$(final_result "$results/$c.snn.txt")"
        read -r t_metric t_time <<< "$(final_result "$results/$c.torch.txt")"
        echo "| $c | $s_metric | $t_metric | $s_time | $t_time |"
    done
}

# "final test accuracy 91.23% after ..., 120.3 s of training, ..." -> "91.23% 120.3"
final_result() {
    sed -n 's/^final test \(accuracy\|bits per character\) \([0-9.%]*\) .*, \([0-9.]*\) s of training.*/\2 \3/p' "$1"
}

[ "$rounds" -eq 0 ] || timing
[ "$rounds" -eq 0 ] || [ "$train" -eq 0 ] || echo
[ "$train" -eq 0 ] || training
