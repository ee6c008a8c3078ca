#!/usr/bin/env bash
# Packs what the GPU checks need into one folder, for a GPU machine that has
# the NVIDIA driver, CUDA, cuBLAS and cuDNN but none of the Debian packages
# snn builds with: libsnn, the CUDA plugin, the GPU test programs, the
# Fashion-MNIST example and its data, the benchmark, and every shared library
# they need beyond the C and C++ runtimes. The folder's run.sh runs them all.
#
#   bash scripts/gpu_bundle.sh [BUILD_DIR [OUT_DIR]]   (default build, build-gpu)
#
# On the GPU machine:
#   CUDNN_LIB=<folder of libcudnn.so.9> bash build-gpu/run.sh [OUT]
# With SNN_GPU_FULL=1 it also trains the main job with --device gpu and runs
# compute-sanitizer (memcheck with leak check, racecheck, synccheck,
# initcheck) over GPU test programs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-build-gpu}
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

[ -f "$build/cuda/libsnn_cuda.so" ] || { echo "no $build/cuda/libsnn_cuda.so: build with nvcc first" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/lib" "$out/bin" "$out/data" "$out/golden"

programs=()
for p in "$build"/tests/gpu/test_gpu_* "$build"/tests/gpu/test_device_status \
         "$build"/examples/fashion_mnist/fashion_mnist "$build"/examples/sine \
         "$build"/bench/snn_bench; do
  [ -f "$p" ] && [ -x "$p" ] && programs+=("$p")
done
cp "${programs[@]}" "$out/bin/"
cp tests/gpu/*.sh "$out/bin/"
cp -P "$build"/libsnn.so "$build"/libsnn.so.0 "$build"/libsnn.so.0.1.0 "$out/lib/"
cp "$build/cuda/libsnn_cuda.so" "$out/lib/"
[ -d "$build/dist" ] && cp -P "$build"/dist/libsnn_dist.so.0* "$out/lib/" 2>/dev/null || true
[ -d tests/golden/data ] && cp tests/golden/data/*.golden "$out/golden/"
cp "$data"/*.gz "$out/data/" 2>/dev/null || true

# Shared libraries from this system that a bare machine lacks.
for p in "${programs[@]}" "$build"/libsnn.so.0; do
  ldd "$p" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
    libsnn*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done

# Large libraries travel compressed; run.sh unpacks them.
find "$out/lib" -type f -size +4M -name '*.so*' -exec xz -6 {} \;

cat > "$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the GPU checks of this bundle; prints a line per check and a summary.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/out}
mkdir -p "$out"
for z in "$here"/lib/*.xz; do
  [ -f "$z" ] && python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$z" && rm -f "$z"
done
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${CUDNN_LIB:-}:${LD_LIBRARY_PATH:-}"
export SNN_CUDA_PLUGIN="$here/lib/libsnn_cuda.so"
export SNN_TEST_HAVE_PLUGIN=1  # the bundle always holds the plugin
export FASHION_MNIST_DIR="$here/data"
unset SNN_TEST_GPU_AS_CPU
passed=0 failed=0 skipped=0
check() {  # name command...
  local name=$1; shift
  local start=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  case $rc in
    0) passed=$((passed + 1)); echo "PASS $name ($((SECONDS - start)) s)" ;;
    77) skipped=$((skipped + 1)); echo "SKIP $name: $(tail -1 "$out/$name.log")" ;;
    *) failed=$((failed + 1)); echo "FAIL $name (exit $rc)"; tail -30 "$out/$name.log" ;;
  esac
}
for t in "$here"/bin/test_gpu_*; do
  case $t in
    */test_gpu_golden) check "$(basename "$t")" "$t" "$here/golden" ;;
    *) check "$(basename "$t")" "$t" ;;
  esac
done
check device_status "$here/bin/test_device_status" status
check fashion_mnist_gpu sh "$here/bin/fashion_mnist_gpu.sh" "$here/bin/fashion_mnist" "$here/bin/test_device_status"
if [ "${SNN_GPU_FULL:-0}" = 1 ]; then
  # The main job on the GPU, then compute-sanitizer over GPU test programs.
  check main_job "$here/bin/fashion_mnist" --device gpu --data "$here/data" --out "$out"
  tail -25 "$out/main_job.log"
  # The residual network with batchnorm and dropout, and its saved model
  # evaluated again on the CPU.
  mkdir -p "$out/resnet"
  check resnet_gpu "$here/bin/fashion_mnist" --model resnet --device gpu --quiet --data "$here/data" --out "$out/resnet"
  tail -4 "$out/resnet_gpu.log"
  check resnet_reload_cpu "$here/bin/fashion_mnist" --quiet --data "$here/data" --load "$out/resnet/fashion_mnist.safetensors"
  tail -1 "$out/resnet_reload_cpu.log"
  # The main job at bf16 and at fp16 with loss scaling.
  for p in bf16 fp16; do
    mkdir -p "$out/$p"
    check "main_job_$p" "$here/bin/fashion_mnist" --device gpu --precision "$p" --quiet --data "$here/data" --out "$out/$p"
    tail -2 "$out/main_job_$p.log"
  done
  if command -v compute-sanitizer >/dev/null; then
    cs() {  # tool program
      local tool=$1 prog=$2
      compute-sanitizer --tool "$tool" --error-exitcode 3 ${3:-} "$here/bin/$prog"
    }
    check memcheck_follow cs memcheck test_gpu_follow "--leak-check full"
    check memcheck_training cs memcheck test_gpu_training "--leak-check full"
    check memcheck_precision cs memcheck test_gpu_precision "--leak-check full"
    check memcheck_golden compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full \
      "$here/bin/test_gpu_golden" "$here/golden"
    check memcheck_ops cs memcheck test_gpu_ops "--leak-check full"
    check racecheck_ops cs racecheck test_gpu_ops
    check initcheck_ops cs initcheck test_gpu_ops
    check racecheck_layers cs racecheck test_gpu_layers
    check synccheck_training cs synccheck test_gpu_training
    check initcheck_follow cs initcheck test_gpu_follow
  fi
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
EOF
chmod +x "$out/run.sh"
du -sh "$out"
