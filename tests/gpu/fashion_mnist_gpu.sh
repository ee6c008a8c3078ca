#!/bin/sh
# The main job on a GPU, end to end: examples/fashion_mnist --device gpu
# trains on 2000 images, saves its model in both formats, and the saved
# files evaluate on the CPU to the accuracy the GPU run printed. Skipped
# (status 77) when the Fashion-MNIST data are not installed, or when
# test_device_status skip-unless-gpu skips (no GPU, and the library says
# why); once a GPU is there, every failure of the example is a failure.
#
#   fashion_mnist_gpu.sh path/to/fashion_mnist path/to/test_device_status
set -u
exe=$1
device_status=$2
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() {
    echo "FAIL: $*"
    exit 1
}

if [ ! -r "$data/train-images-idx3-ubyte.gz" ] && [ ! -r "$data/train-images-idx3-ubyte" ]; then
    echo "skipped: no Fashion-MNIST data in $data"
    exit 77
fi

"$device_status" skip-unless-gpu
status=$?
[ "$status" -eq 0 ] || exit "$status"

"$exe" --data "$data" --device gpu --epochs 2 --limit 2000 --quiet --out "$out" \
    > "$out/train.log" 2> "$out/stderr"
status=$?
[ "$status" -eq 0 ] ||
    fail "training on the GPU exited with $status: $(cat "$out/stderr") $(cat "$out/train.log")"
cat "$out/train.log"
grep -q "^device      GPU 0$" "$out/train.log" || fail "the run did not say it trained on GPU 0"
accuracy=$(sed -n 's/^final test accuracy \([0-9.]*\)%.*/\1/p' "$out/train.log")
[ -n "$accuracy" ] || fail "no final accuracy printed"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 50) }' || fail "accuracy $accuracy% is below 50%"

# The trained model was saved in both formats and evaluates on the CPU to
# the accuracy the GPU run measured on the same 400 test images (within two
# images: the CPU sums in another order, which may flip a near tie).
for saved in fashion_mnist.safetensors fashion_mnist.params; do
    [ -s "$out/$saved" ] || fail "$saved was not written"
    "$exe" --data "$data" --limit 2000 --quiet --load "$out/$saved" > "$out/load.log" ||
        fail "--load $saved failed: $(cat "$out/load.log")"
    loaded=$(sed -n 's/^test accuracy \([0-9.]*\)% on 400 images.*/\1/p' "$out/load.log")
    [ -n "$loaded" ] || fail "--load $saved printed no accuracy: $(cat "$out/load.log")"
    awk -v a="$accuracy" -v b="$loaded" 'BEGIN { d = a - b; exit !(d <= 0.5 && d >= -0.5) }' ||
        fail "$saved gives $loaded%, the GPU run measured $accuracy%"
done
echo "ok"
