#!/bin/sh
# Builds the fuzz targets with clang, libFuzzer, AddressSanitizer and UBSan in
# build-fuzz/ (or $SNN_FUZZ_BUILD) and runs each for SECONDS seconds (default
# 60) from the seed corpus. New interesting inputs go to build-fuzz/corpus-*/,
# crashes to build-fuzz/crash-*. Exits non-zero if any target crashed.
#   tests/fuzz/run.sh [SECONDS]
set -eu
seconds=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build="${SNN_FUZZ_BUILD:-$root/build-fuzz}"

if [ ! -f "$build/build.ninja" ]; then
  # Everything, libsnn.so included, is built with AddressSanitizer and UBSan
  # and instrumented for coverage (fuzzer-no-link). The shared sanitizer
  # runtime lets libsnn.so keep -Wl,--no-undefined; the rpath finds it.
  runtime_dir=$(dirname "$(clang -print-file-name=libclang_rt.asan-x86_64.so)")
  san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -shared-libsan"
  CC=clang CXX=clang++ \
  CFLAGS="$san -fsanitize=fuzzer-no-link" CXXFLAGS="$san -fsanitize=fuzzer-no-link" \
  LDFLAGS="$san -Wl,-rpath,$runtime_dir" \
    meson setup "$build" "$root" -Dfuzz=true -Db_lundef=false -Dbuildtype=debugoptimized \
      -Dcuda=disabled -Dbenchmarks=false
fi
ninja -C "$build" -j2 tests/fuzz/fuzz_spec tests/fuzz/fuzz_model tests/fuzz/fuzz_run tests/fuzz/fuzz_sequence \
  tests/fuzz/fuzz_onnx

status=0
for target in spec model run sequence onnx; do
  corpus="$build/corpus-$target"
  mkdir -p "$corpus"
  echo "== fuzz_$target for $seconds s"
  # libFuzzer pulls libstdc++ in ahead of the shared ASan runtime; that order
  # is harmless here, so ASan's link-order check is turned off.
  ASAN_OPTIONS=verify_asan_link_order=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 SNN_NUM_THREADS=1 \
    "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
      -artifact_prefix="$build/" -print_final_stats=1 \
      "$corpus" "$root/tests/fuzz/corpus/$target" || status=1
done
exit $status
