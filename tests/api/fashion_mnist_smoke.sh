#!/bin/sh
# Smoke test of examples/fashion_mnist: bad options exit with status 2, missing
# data are explained, and one epoch on 2000 images learns well above chance
# (10%) and saves a model that evaluates to the same accuracy when loaded; the
# residual network with batchnorm and dropout does too (its running
# statistics are saved with it, and evaluation runs in inference mode). Both
# also go through ONNX (--export-onnx, then --load and --start FILE.onnx).
# Skipped (status 77) when the Fashion-MNIST data are not installed.
#
#   fashion_mnist_smoke.sh path/to/fashion_mnist
set -u
exe=$1
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() {
    echo "FAIL: $*"
    exit 1
}

# Bad option values give a message and status 2.
for bad in "--epochs zero" "--batch 0" "--lr -1" "--model resnet50" "--threads" "--frobnicate 1" \
           "--spec dense" "--spec input 3; dense 10" "--device tpu"; do
    # shellcheck disable=SC2086
    "$exe" $bad > "$out/stdout" 2> "$out/stderr"
    status=$?
    [ "$status" -eq 2 ] || fail "'$bad' exited with $status, expected 2"
    [ -s "$out/stderr" ] || fail "'$bad' printed no message"
done

# --device gpu without a usable GPU: status 1 and the library's reason.
if [ -d "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" ]; then
    "$exe" --device gpu --limit 500 --epochs 1 --out "$out" > /dev/null 2> "$out/stderr"
    status=$?
    if [ "$status" -ne 0 ]; then
        [ "$status" -eq 1 ] || fail "--device gpu without a GPU exited with $status, expected 1"
        grep -q "snn_to_gpu" "$out/stderr" || fail "--device gpu printed no reason"
    fi
fi

# Missing data: status 1 and directions to get the data.
"$exe" --data "$out/nothing-here" --out "$out" > /dev/null 2> "$out/stderr"
[ $? -eq 1 ] || fail "missing data did not exit with status 1"
grep -q "apt-get install dataset-fashion-mnist" "$out/stderr" || fail "no directions for missing data"

if [ ! -r "$data/train-images-idx3-ubyte.gz" ] && [ ! -r "$data/train-images-idx3-ubyte" ]; then
    echo "no Fashion-MNIST data in $data: skipped"
    exit 77
fi

"$exe" --data "$data" --epochs 1 --limit 2000 --quiet --out "$out" --export-onnx "$out/cnn.onnx" > "$out/train.log" ||
    fail "training failed: $(cat "$out/train.log")"
cat "$out/train.log"
accuracy=$(sed -n 's/^final test accuracy \([0-9.]*\)%.*/\1/p' "$out/train.log")
[ -n "$accuracy" ] || fail "no final accuracy printed"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 50) }' || fail "accuracy $accuracy% is below 50%"

# 2000 images in batches of 64: 32 batches, one row per 50 batches or epoch end.
[ "$(cat "$out/fashion_mnist_loss.csv")" != "" ] || fail "empty loss CSV"
[ "$(sed -n 1p "$out/fashion_mnist_loss.csv")" = "epoch,batch,loss" ] || fail "bad loss CSV header"
sed -n 2p "$out/fashion_mnist_loss.csv" | grep -q '^1,32,[0-9.]*$' || fail "bad loss CSV row"
[ "$(wc -l < "$out/fashion_mnist_epochs.csv")" -eq 2 ] || fail "epochs CSV needs 2 lines"

# The ONNX file it wrote imports as the same network: the same accuracy; and
# training can start from it (fine-tuning).
[ -s "$out/cnn.onnx" ] || fail "--export-onnx wrote nothing"
"$exe" --data "$data" --limit 2000 --quiet --load "$out/cnn.onnx" > "$out/onnx.log" ||
    fail "--load cnn.onnx failed: $(cat "$out/onnx.log")"
grep -q "^test accuracy $accuracy% on 400 images" "$out/onnx.log" ||
    fail "cnn.onnx gives $(cat "$out/onnx.log"), expected $accuracy%"
mkdir "$out/tuned"
"$exe" --data "$data" --start "$out/cnn.onnx" --epochs 1 --limit 2000 --quiet --out "$out/tuned" > "$out/tuned.log" ||
    fail "--start cnn.onnx failed: $(cat "$out/tuned.log")"
grep -q "^network     $out/cnn.onnx" "$out/tuned.log" || fail "--start did not name the ONNX file it trains"
tuned=$(sed -n 's/^final test accuracy \([0-9.]*\)%.*/\1/p' "$out/tuned.log")
awk -v a="$tuned" 'BEGIN { exit !(a >= 50) }' || fail "fine-tuned accuracy $tuned% is below 50%"

# SimpleNNs.jl's network has 1906 parameters.
mkdir "$out/simple"
"$exe" --data "$data" --model simplenns --epochs 1 --limit 500 --quiet --out "$out/simple" > "$out/simple.log" ||
    fail "simplenns failed: $(cat "$out/simple.log")"
grep -q "^parameters  1906$" "$out/simple.log" || fail "simplenns does not have 1906 parameters"

# Both saved models give the same accuracy on the same 400 test images.
for saved in fashion_mnist.params fashion_mnist.safetensors; do
    "$exe" --data "$data" --limit 2000 --quiet --load "$out/$saved" > "$out/load.log" ||
        fail "--load $saved failed: $(cat "$out/load.log")"
    grep -q "^test accuracy $accuracy% on 400 images" "$out/load.log" ||
        fail "$saved gives $(cat "$out/load.log"), expected $accuracy%"
done

# The residual network: its files carry the batchnorm running statistics
# (fashion_mnist.params in format 2), so reloaded models give its accuracy.
mkdir "$out/resnet"
"$exe" --data "$data" --model resnet --epochs 1 --limit 1000 --quiet --out "$out/resnet" \
    --export-onnx "$out/resnet/resnet.onnx" > "$out/resnet.log" ||
    fail "resnet failed: $(cat "$out/resnet.log")"
grep -q "(cosine schedule)" "$out/resnet.log" || fail "resnet does not use its cosine schedule"
resnet_accuracy=$(sed -n 's/^final test accuracy \([0-9.]*\)%.*/\1/p' "$out/resnet.log")
awk -v a="$resnet_accuracy" 'BEGIN { exit !(a >= 30) }' || fail "resnet accuracy $resnet_accuracy% is below 30%"
head -c 12 "$out/resnet/fashion_mnist.params" | grep -q "^snn-params 2" || fail "resnet params file is not format 2"
for saved in fashion_mnist.params fashion_mnist.safetensors resnet.onnx; do
    "$exe" --data "$data" --limit 1000 --quiet --load "$out/resnet/$saved" > "$out/load.log" ||
        fail "--load resnet $saved failed: $(cat "$out/load.log")"
    grep -q "^test accuracy $resnet_accuracy% on 200 images" "$out/load.log" ||
        fail "resnet $saved gives $(cat "$out/load.log"), expected $resnet_accuracy%"
done
echo "ok"
