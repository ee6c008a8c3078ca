#!/usr/bin/env bash
# snn against PyTorch 2 (float32 and torch.autocast bf16) on the training
# steps and against ONNX Runtime (C++ API) on inference, all pinned to the
# same cores and interleaved:
#
#   bench/precision_compare.sh BUILD_DIR [--rounds N] [--isa avx2] [--float32] [CASE ...]
#
# BUILD_DIR holds a built bench/snn_bench; it must be inside the repository
# (the chroot sees the repository only). bench/build_ort.sh builds
# ort_bench and the ONNX models into BUILD_DIR/ort first (when missing or
# stale). Environment: TORCH2_DIR, the chroot of `torch2-root setup DIR
# --dev --onnx` (PyTorch 2.6, ONNX Runtime 1.21); TORCH2_ROOT (default:
# torch2-root on PATH); CPUS (default 0,1), the CPUs every process is pinned
# to with taskset -c.
#
# Training cases (resnet_train_step default_cnn_train_step cnn_train_step
# mlp_train_step): snn_bench --precision float32 and bf16, and
# bench/torch2_cpu.py --precision float32 and bf16 (autocast). Inference
# cases (default_cnn_inference_1 default_cnn_inference_64 cnn_inference_1
# cnn_inference_1000 seed_forward_1 mlp_inference_1): snn_bench against
# ort_bench. Each peer runs in every thread setting: SNN_NUM_THREADS 1 and 2
# for snn, intra-op threads 1 and 2 for ONNX Runtime, and for PyTorch
# torch.set_num_threads 1 and 2 with OPENBLAS_NUM_THREADS=1, plus 2 threads
# with OPENBLAS_NUM_THREADS as found (unset, Debian's pthreads OpenBLAS
# starts a thread per core inside each of PyTorch's: "2, OpenBLAS as is").
# N rounds (default 3) of one process per peer and setting, in turn (A, B,
# A, B, ...); each process prints the median microseconds of one call, a
# peer's time is the median of its rounds in its fastest setting (shown in
# parentheses); a setting more than twice as slow as the peer's fastest in
# the first round is not run again. Ratios are times over times: above 1,
# the second named is faster. A peer that fails (snn refusing bf16 on a
# processor or build without it) shows its error in the table. The raw
# lines go to BUILD_DIR/precision_compare.log.
#
# --isa avx2: a processor without AVX-512 on this one: snn under
# SNN_CPU_ISA=avx2, PyTorch under ONEDNN_MAX_CPU_ISA=AVX2 and
# ATEN_CPU_CAPABILITY=avx2 (ONNX Runtime has no such setting: its column is
# uncapped). OpenBLAS chooses its kernels as the environment says: run with
# OPENBLAS_CORETYPE=Haswell for the kernels such a processor gets.
# --float32: the training cases without the bf16 columns.
set -euo pipefail

die() { echo "precision_compare.sh: $*" >&2; exit 1; }
usage() { die "usage: bench/precision_compare.sh BUILD_DIR [--rounds N] [CASE ...]"; }

[ $# -ge 1 ] || usage
root=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$1/bench/snn_bench" ] || die "no $1/bench/snn_bench: build it first (ninja -C $1 bench/snn_bench)"
build=$(cd "$1" && pwd)
shift
case $build/ in "$root"/*) build=${build#"$root"/} ;; *) die "BUILD_DIR must be inside $root" ;; esac
rounds=3
isa=""
float32_only=0
cases=()
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    --isa) [ $# -ge 2 ] && [ "$2" = avx2 ] || usage; isa=avx2; shift 2 ;;
    --float32) float32_only=1; shift ;;
    -*) usage ;;
    *) cases+=("$1"); shift ;;
    esac
done
train_cases=(resnet_train_step default_cnn_train_step cnn_train_step mlp_train_step)
infer_cases=(default_cnn_inference_1 default_cnn_inference_64 cnn_inference_1 cnn_inference_1000
    seed_forward_1 mlp_inference_1)
[ ${#cases[@]} -gt 0 ] || cases=("${train_cases[@]}" "${infer_cases[@]}")
for name in "${cases[@]}"; do
    case " ${train_cases[*]} ${infer_cases[*]} " in
    *" $name "*) ;;
    *) die "unknown case $name (cases: ${train_cases[*]} ${infer_cases[*]})" ;;
    esac
done
tool=${TORCH2_ROOT:-torch2-root}
cpus=${CPUS:-0,1}
command -v "$tool" >/dev/null || die "no $tool: set TORCH2_ROOT to the torch2-root command"
[ -n "${TORCH2_DIR-}" ] || die "TORCH2_DIR is not set: the PyTorch 2 chroot (torch2-root setup DIR --dev --onnx)"
[ -d "$TORCH2_DIR" ] || die "no chroot at TORCH2_DIR=$TORCH2_DIR (torch2-root setup DIR --dev --onnx)"
cd "$root"
"$tool" run "$TORCH2_DIR" -- python3 -c "import torch, onnxruntime" 2>/dev/null ||
    die "PyTorch or ONNX Runtime missing in $TORCH2_DIR: run torch2-root setup $TORCH2_DIR --dev --onnx"
bench/build_ort.sh "$build"

log=$build/precision_compare.log
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$log"

is_train() { case $1 in *_train_step) return 0 ;; *) return 1 ;; esac; }

# Runs one process of PEER (snn32 snn16 torch32 torch16 ort) in SETTING (1, 2
# or 2b) on CASE; prints its median microseconds, or nothing on failure.
run_one() {
    local peer=$1 setting=$2 name=$3 threads=${2%b} err=$tmp/err out
    local ob=(env OPENBLAS_NUM_THREADS=1) snn_cap=(env) torch_cap=(env)
    [ "$setting" != 2b ] || ob=(env)
    if [ "$isa" = avx2 ]; then
        snn_cap=(env SNN_CPU_ISA=avx2)
        torch_cap=(env ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2)
    fi
    case $peer in
    snn32 | snn16)
        local p=float32
        [ "$peer" = snn32 ] || p=bf16
        out=$(SNN_NUM_THREADS=$threads "${snn_cap[@]}" taskset -c "$cpus" "$build/bench/snn_bench" "$name" \
            --precision $p 2>"$err") || true ;;
    torch32 | torch16)
        local p=float32
        [ "$peer" = torch32 ] || p=bf16
        out=$(SNN_NUM_THREADS=$threads "${ob[@]}" "${torch_cap[@]}" "$tool" run "$TORCH2_DIR" --cpus "$cpus" -- \
            python3 bench/torch2_cpu.py "$name" --precision $p --interop-threads 1 2>"$err") || true ;;
    ort)
        out=$("$tool" run "$TORCH2_DIR" --cpus "$cpus" -- "$build/ort/ort_bench" \
            "$build/ort/$name.onnx" "$name" --threads "$threads" 2>"$err") || true ;;
    esac
    out=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$out")
    if [ -z "$out" ]; then
        # ONNX Runtime's library prints schema warnings when it loads: keep the last line.
        tail -n 1 "$err" | sed 's/^.* failed: //' >"$tmp/fail.$peer.$name"
    fi
    echo "$peer $setting $name ${out:-failed}" >>"$log"
    echo "$out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# PEER's time on CASE: "us setting" of its fastest setting, or "" if it failed.
best() {
    local peer=$1 name=$2 s m bm="" bs=""
    for s in 1 2 2b; do
        [ -f "$tmp/t.$peer.$s.$name" ] || continue
        m=$(median <"$tmp/t.$peer.$s.$name")
        [ -n "$m" ] || continue
        if [ -z "$bm" ] || awk -v a="$m" -v b="$bm" 'BEGIN { exit !(a < b) }'; then bm=$m bs=$s; fi
    done
    [ -z "$bm" ] || echo "$bm $bs"
}

cell() { # "us (threads)" or the failure
    local us setting
    read -r us setting <<<"$(best "$1" "$2")"
    if [ -n "$us" ]; then
        case $setting in 2b) echo "$us (2, OpenBLAS as is)" ;; *) echo "$us ($setting)" ;; esac
    else
        echo "failed: $(tr '|' '/' <"$tmp/fail.$1.$2" 2>/dev/null)"
    fi
}

ratio() { # time of peer $1 / time of peer $2 on case $3
    local a b
    a=$(best "$1" "$3")
    b=$(best "$2" "$3")
    if [ -n "$a" ] && [ -n "$b" ]; then
        awk -v a="${a% *}" -v b="${b% *}" 'BEGIN { printf "%.2fx", a / b }'
    else
        echo "-"
    fi
}

for name in "${cases[@]}"; do
    if is_train "$name"; then peers=(snn32 torch32 snn16 torch16); else peers=(snn32 ort); fi
    [ "$float32_only" = 0 ] || peers=("${peers[@]/*16/}")
    read -r -a peers <<<"${peers[*]}"
    echo "$name: ${peers[*]}, $rounds rounds" >&2
    for ((r = 0; r < rounds; ++r)); do
        for s in 1 2 2b; do
            for peer in "${peers[@]}"; do
                case $peer:$s in torch*:*) ;; *:2b) continue ;; esac
                [ ! -f "$tmp/fail.$peer.$name" ] || continue # failed once: it would again
                [ ! -f "$tmp/slow.$peer.$s.$name" ] || continue
                v=$(run_one "$peer" "$s" "$name")
                [ -z "$v" ] || echo "$v" >>"$tmp/t.$peer.$s.$name"
            done
        done
        [ "$r" = 0 ] || continue
        for peer in "${peers[@]}"; do # settings twice as slow as the peer's best: not again
            read -r fastest _ <<<"$(best "$peer" "$name")"
            [ -n "$fastest" ] || continue
            for s in 1 2 2b; do
                [ -f "$tmp/t.$peer.$s.$name" ] || continue
                if awk -v t="$(cat "$tmp/t.$peer.$s.$name")" -v f="$fastest" 'BEGIN { exit !(t > 2 * f) }'; then
                    touch "$tmp/slow.$peer.$s.$name"
                fi
            done
        done
    done
done

ob_core=${OPENBLAS_CORETYPE:-not set}
version_cap=(env)
[ "$isa" != avx2 ] || version_cap=(env ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2)
echo "snn ($build/bench/snn_bench) against $("${version_cap[@]}" "$tool" run "$TORCH2_DIR" -- python3 bench/torch2_cpu.py --version)"
echo "and ONNX Runtime $("$tool" run "$TORCH2_DIR" -- python3 -c 'import onnxruntime; print(onnxruntime.__version__)') (C++ API, CPU provider, IoBinding)."
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); taskset -c $cpus;"
[ -z "$isa" ] || echo "Instruction sets capped at AVX2: snn SNN_CPU_ISA=avx2, PyTorch ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 (ONNX Runtime uncapped)."
echo "OPENBLAS_CORETYPE: $ob_core; $rounds rounds, interleaved; median of per-process medians, us per call (threads)."
echo
header=0
for name in "${cases[@]}"; do
    is_train "$name" || continue
    if [ "$float32_only" = 1 ]; then
        if [ $header = 0 ]; then
            echo "| case | snn float32 | PyTorch float32 | PyTorch / snn |"
            echo "|---|---|---|---|"
            header=1
        fi
        echo "| $name | $(cell snn32 "$name") | $(cell torch32 "$name") | $(ratio torch32 snn32 "$name") |"
        continue
    fi
    if [ $header = 0 ]; then
        echo "| case | snn float32 | PyTorch float32 | PyTorch / snn | snn bf16 | snn float32 / bf16 | PyTorch autocast bf16 | PyTorch bf16 / snn bf16 |"
        echo "|---|---|---|---|---|---|---|---|"
        header=1
    fi
    echo "| $name | $(cell snn32 "$name") | $(cell torch32 "$name") | $(ratio torch32 snn32 "$name") |" \
        "$(cell snn16 "$name") | $(ratio snn32 snn16 "$name") | $(cell torch16 "$name") | $(ratio torch16 snn16 "$name") |"
done
[ $header = 0 ] || echo
header=0
for name in "${cases[@]}"; do
    ! is_train "$name" || continue
    if [ $header = 0 ]; then
        echo "| case | snn float32 | ONNX Runtime float32 | ORT / snn |"
        echo "|---|---|---|---|"
        header=1
    fi
    echo "| $name | $(cell snn32 "$name") | $(cell ort "$name") | $(ratio ort snn32 "$name") |"
done
