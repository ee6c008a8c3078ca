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
# initcheck) over GPU test programs; with SNN_GPU_BENCH=1 it runs the GPU
# benchmark (bench/gpu_bench, and bench/torch_gpu.py where python3 has
# torch) first, alone on the GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-build-gpu}
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

[ -f "$build/cuda/libsnn_cuda.so" ] || { echo "no $build/cuda/libsnn_cuda.so: build with nvcc first" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/lib" "$out/bin" "$out/data" "$out/golden"

programs=()
for p in "$build"/tests/gpu/test_gpu_* "$build"/tests/gpu/test_device_status "$build"/tests/ops/test_ops \
         "$build"/examples/fashion_mnist/fashion_mnist "$build"/examples/sine \
         "$build"/bench/snn_bench "$build"/bench/gpu_bench; do
  [ -f "$p" ] && [ -x "$p" ] && programs+=("$p")
done
cp "${programs[@]}" "$out/bin/"
cp tests/gpu/*.sh bench/torch_gpu.py bench/torch2_cpu.py "$out/bin/"
cp -P "$build"/libsnn.so "$build"/libsnn.so.0 "$build"/libsnn.so.0.1.0 "$out/lib/"
cp "$build/cuda/libsnn_cuda.so" "$out/lib/"
[ -d "$build/dist" ] && cp -P "$build"/dist/libsnn_dist.so.0* "$out/lib/" 2>/dev/null || true
[ -d tests/golden/data ] && cp tests/golden/data/*.golden "$out/golden/"
# The data travel as xz (smaller than gzip); run.sh unpacks them to raw idx.
for f in "$data"/*-ubyte.gz; do
  [ -f "$f" ] && gzip -dc "$f" | xz -6 > "$out/data/$(basename "$f" .gz).xz"
done

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
find "$out/lib" -type f -size +500k -name '*.so*' -exec xz -6 {} \;

cat > "$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the GPU checks of this bundle; prints a line per check and a summary.
# Phase 1 runs alone on the GPU, since it is timed: with SNN_GPU_BENCH=1 the
# benchmark (gpu_bench, and torch_gpu.py where python3 has torch), and with
# SNN_GPU_FULL=1 the main job and the residual network (SNN_GPU_MEASURE=1:
# the GPU test programs run again with SNN_CUDNN_ALGOS=measure).
# Phase 2 runs the
# checks side by side: the GPU test programs, the end-to-end test, and with
# SNN_GPU_FULL=1 the main job at bf16 and fp16, the saved resnet evaluated on
# the CPU and compute-sanitizer (memcheck with leak check, racecheck,
# synccheck, initcheck) over GPU test programs. Every check has a time limit
# (SNN_GPU_CHECK_TIMEOUT seconds, default 300; the sanitizers' 240).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/out}
mkdir -p "$out"
for z in "$here"/lib/*.xz "$here"/data/*.xz; do
  [ -f "$z" ] && python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$z" && rm -f "$z"
done
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${CUDNN_LIB:-}:${LD_LIBRARY_PATH:-}"
export SNN_CUDA_PLUGIN="$here/lib/libsnn_cuda.so"
export SNN_TEST_HAVE_PLUGIN=1  # the bundle always holds the plugin
export FASHION_MNIST_DIR="$here/data"
unset SNN_TEST_GPU_AS_CPU
limit=${SNN_GPU_CHECK_TIMEOUT:-300}
passed=0 failed=0 skipped=0
tally() {  # name rc seconds
  case $2 in
    0) passed=$((passed + 1)); echo "PASS $1 ($3 s)" ;;
    77) skipped=$((skipped + 1)); echo "SKIP $1: $(tail -1 "$out/$1.log")" ;;
    124) failed=$((failed + 1)); echo "FAIL $1 (timed out after $3 s)"; tail -30 "$out/$1.log" ;;
    *) failed=$((failed + 1)); echo "FAIL $1 (exit $2)"; tail -30 "$out/$1.log" ;;
  esac
}
check() {  # name command...: runs now
  local name=$1; shift
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  tally "$name" $? $((SECONDS - start))
}
jobs_started=()
spawn() {  # name seconds command...: runs in the background until collect
  local name=$1 secs=$2; shift 2
  ( start=$SECONDS; timeout "$secs" "$@" > "$out/$name.log" 2>&1
    echo "$? $((SECONDS - start))" > "$out/$name.rc" ) &
  jobs_started+=("$name")
}
collect() {
  wait
  local n
  for n in "${jobs_started[@]}"; do
    read -r rc secs < "$out/$n.rc"
    tally "$n" "$rc" "$secs"
  done
  jobs_started=()
}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader | sed 's/^/gpu: /'

# Phase 1, alone on the GPU.
if [ "${SNN_GPU_BENCH:-0}" = 1 ]; then
  check gpu_bench "$here/bin/gpu_bench"
  cat "$out/gpu_bench.log"
  check gpu_bench_bf16 "$here/bin/gpu_bench" --precision bf16
  cat "$out/gpu_bench_bf16.log"
  # cuDNN's algorithms by measurement instead of its heuristics.
  check gpu_bench_measured env SNN_CUDNN_ALGOS=measure "$here/bin/gpu_bench"
  cat "$out/gpu_bench_measured.log"
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    check torch_gpu python3 "$here/bin/torch_gpu.py"
    python3 "$here/bin/torch_gpu.py" --version
    cat "$out/torch_gpu.log"
  fi
fi
if [ "${SNN_GPU_FULL:-0}" = 1 ] && [ "${SNN_GPU_TIMED:-1}" = 1 ]; then
  check main_job "$here/bin/fashion_mnist" --device gpu --quiet --data "$here/data" --out "$out"
  tail -10 "$out/main_job.log"
  # The residual network with batchnorm and dropout; its saved model is
  # evaluated again on the CPU in phase 2.
  mkdir -p "$out/resnet"
  check resnet_gpu "$here/bin/fashion_mnist" --model resnet --device gpu --quiet --data "$here/data" --out "$out/resnet"
  tail -4 "$out/resnet_gpu.log"
fi

# Phase 2, side by side.
for t in "$here"/bin/test_gpu_*; do
  case $t in
    */test_gpu_golden) spawn "$(basename "$t")" "$limit" "$t" "$here/golden" ;;
    *) spawn "$(basename "$t")" "$limit" "$t" ;;
  esac
done
# The op harness's GPU mode: every op case and kernel path, node by node.
ops_gpu=(--gtest_filter='*/Op.Gpu/*:*/KernelPath.Gpu/*')
spawn test_ops_gpu "$limit" "$here/bin/test_ops" "$here/golden" "${ops_gpu[@]}"
if [ "${SNN_GPU_MEASURE:-0}" = 1 ]; then  # again with measured cuDNN algorithms
  for t in "$here"/bin/test_gpu_*; do
    case $t in
      */test_gpu_golden) spawn "$(basename "$t")_measured" "$limit" env SNN_CUDNN_ALGOS=measure "$t" "$here/golden" ;;
      *) spawn "$(basename "$t")_measured" "$limit" env SNN_CUDNN_ALGOS=measure "$t" ;;
    esac
  done
fi
spawn device_status "$limit" "$here/bin/test_device_status" status
spawn fashion_mnist_gpu "$limit" sh "$here/bin/fashion_mnist_gpu.sh" "$here/bin/fashion_mnist" "$here/bin/test_device_status"
if [ "${SNN_GPU_FULL:-0}" = 1 ]; then
  [ -f "$out/resnet/fashion_mnist.safetensors" ] &&
    spawn resnet_reload_cpu "$limit" "$here/bin/fashion_mnist" --quiet --data "$here/data" --load "$out/resnet/fashion_mnist.safetensors"
  for p in bf16 fp16; do
    mkdir -p "$out/$p"
    spawn "main_job_$p" "$limit" "$here/bin/fashion_mnist" --device gpu --precision "$p" --quiet --data "$here/data" --out "$out/$p"
  done
  if command -v compute-sanitizer >/dev/null; then
    slimit=${SNN_GPU_SANITIZER_TIMEOUT:-240}
    cs=(compute-sanitizer --error-exitcode 3)
    b=$here/bin
    spawn memcheck_follow "$slimit" "${cs[@]}" --tool memcheck --leak-check full "$b/test_gpu_follow"
    spawn memcheck_training "$slimit" "${cs[@]}" --tool memcheck --leak-check full "$b/test_gpu_training"
    spawn memcheck_precision "$slimit" "${cs[@]}" --tool memcheck --leak-check full "$b/test_gpu_precision"
    spawn memcheck_golden "$slimit" "${cs[@]}" --tool memcheck --leak-check full "$b/test_gpu_golden" "$here/golden"
    spawn memcheck_ops "$slimit" "${cs[@]}" --tool memcheck --leak-check full "$b/test_ops" "$here/golden" "${ops_gpu[@]}"
    spawn memcheck_sequences "$slimit" "${cs[@]}" --tool memcheck --leak-check full "$b/test_gpu_sequences"
    spawn racecheck_ops "$slimit" "${cs[@]}" --tool racecheck "$b/test_ops" "$here/golden" "${ops_gpu[@]}"
    spawn initcheck_ops "$slimit" "${cs[@]}" --tool initcheck "$b/test_ops" "$here/golden" "${ops_gpu[@]}"
    spawn racecheck_layers "$slimit" "${cs[@]}" --tool racecheck "$b/test_gpu_layers"
    spawn synccheck_training "$slimit" "${cs[@]}" --tool synccheck "$b/test_gpu_training"
    spawn initcheck_follow "$slimit" "${cs[@]}" --tool initcheck "$b/test_gpu_follow"
  fi
fi
collect
if [ "${SNN_GPU_FULL:-0}" = 1 ]; then
  for p in bf16 fp16; do tail -2 "$out/main_job_$p.log"; done
  [ -f "$out/resnet_reload_cpu.log" ] && tail -1 "$out/resnet_reload_cpu.log"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
EOF
chmod +x "$out/run.sh"
du -sh "$out"
