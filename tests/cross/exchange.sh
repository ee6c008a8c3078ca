#!/bin/sh
# Model files between two platforms (tests/cross/file_exchange.c).
#
#   exchange.sh --one EXE DIR
#       EXE writes its files in DIR/one and reads them back. In a cross
#       build's tests EXE runs through $MESON_EXE_WRAPPER, as Meson sets it.
#   exchange.sh --two NAME_A RUN_A NAME_B RUN_B DIR
#       RUN_A and RUN_B (commands, split at spaces: a wrapper and its
#       program) write their files in DIR/NAME_A and DIR/NAME_B; every file
#       must be equal byte for byte, and each reads the other's files.
#
# Both run with SNN_CPU_KERNELS=reference: the reference kernels' arithmetic
# is the same everywhere, as the products of BLAS libraries need not be.
set -u
export SNN_CPU_KERNELS=reference
failures=0

run() {  # what command...
  what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAIL: $what"
    failures=$((failures + 1))
  fi
}

case ${1:-} in
  --one)
    exe=$2 dir=$3
    rm -rf "$dir/one" && mkdir -p "$dir/one" || exit 1
    # shellcheck disable=SC2086
    run "write" ${MESON_EXE_WRAPPER:-} "$exe" write "$dir/one"
    # shellcheck disable=SC2086
    run "read back" ${MESON_EXE_WRAPPER:-} "$exe" read "$dir/one"
    ;;
  --two)
    a=$2 run_a=$3 b=$4 run_b=$5 dir=$6
    rm -rf "$dir/$a" "$dir/$b" && mkdir -p "$dir/$a" "$dir/$b" || exit 1
    # shellcheck disable=SC2086
    run "$a writes" $run_a write "$dir/$a"
    # shellcheck disable=SC2086
    run "$b writes" $run_b write "$dir/$b"
    for f in model.snn checkpoint.snn checkpoint_v2.snn model.onnx outputs.bin; do
      run "$f written by $a and by $b is the same bytes" cmp "$dir/$a/$f" "$dir/$b/$f"
    done
    # shellcheck disable=SC2086
    run "$a reads $b's files" $run_a read "$dir/$b"
    # shellcheck disable=SC2086
    run "$b reads $a's files" $run_b read "$dir/$a"
    ;;
  *)
    echo "usage: exchange.sh --one EXE DIR | --two NAME_A RUN_A NAME_B RUN_B DIR" >&2
    exit 2
    ;;
esac
[ "$failures" -eq 0 ]
