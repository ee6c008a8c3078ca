#!/bin/sh
# Smoke test of examples/words: bad options exit with status 2, missing word
# lists are explained, and short runs of each task on a small subset train,
# print their tables (per-language accuracy and confusion matrix; bits per
# character per language and sampled words) and learn above chance; the
# export writes the data file bench/words_torch.py reads; a trained model
# written as ONNX (--export-onnx) starts another run (--start FILE.onnx) with
# the same test accuracy, and one for another task is refused.
# Skipped (status 77) when the word lists are not installed.
#
#   words_smoke.sh path/to/words
set -u
exe=$1
dict=${WORDS_DICT_DIR:-/usr/share/dict}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() {
    echo "FAIL: $*"
    exit 1
}

# Bad option values give a message and status 2.
for bad in "--task translate" "--model gpt" "--epochs -1" "--batch 0" "--lr -1" "--threads" \
           "--temperature 0" "--device tpu" "--frobnicate 1"; do
    # shellcheck disable=SC2086
    "$exe" $bad > "$out/stdout" 2> "$out/stderr"
    status=$?
    [ "$status" -eq 2 ] || fail "'$bad' exited with $status, expected 2"
    [ -s "$out/stderr" ] || fail "'$bad' printed no message"
done

# Missing word lists: status 1 and the packages to install.
"$exe" --dict "$out/nothing-here" > /dev/null 2> "$out/stderr"
[ $? -eq 1 ] || fail "missing word lists did not exit with status 1"
grep -q "apt-get install wamerican" "$out/stderr" || fail "no directions for missing word lists"

for f in american-english french ngerman italian spanish portuguese dutch swedish polish; do
    if [ ! -r "$dict/$f" ]; then
        echo "no $dict/$f (the word lists: apt-get install wamerican wfrench wngerman witalian" \
             "wspanish wportuguese wdutch wswedish wpolish): skipped"
        exit 77
    fi
done

small="--dict $dict --train-per-language 400 --test-per-language 40 --threads 2"

# --device gpu without a usable GPU: status 1 and the library's reason.
# shellcheck disable=SC2086
"$exe" $small --device gpu --epochs 1 --quiet > /dev/null 2> "$out/stderr"
status=$?
if [ "$status" -ne 0 ]; then
    [ "$status" -eq 1 ] || fail "--device gpu without a GPU exited with $status, expected 1"
    grep -q "snn_to_gpu" "$out/stderr" || fail "--device gpu printed no reason"
fi

# Language identification: 9 x 400 words, 3 epochs of 57 steps.
# shellcheck disable=SC2086
"$exe" $small --epochs 3 --export-onnx "$out/lang.onnx" > "$out/lang.log" 2>&1 ||
    fail "lang lstm failed: $(cat "$out/lang.log")"
cat "$out/lang.log"
grep -q "^training and 40 test words per language" "$out/lang.log" || fail "no data summary"
grep -q "^8 polish " "$out/lang.log" || fail "no per-language table"
grep -q "^confusion matrix" "$out/lang.log" || fail "no confusion matrix"
accuracy=$(sed -n 's/^final test accuracy \([0-9.]*\)%.*/\1/p' "$out/lang.log")
[ -n "$accuracy" ] || fail "no final accuracy printed"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 25) }' || fail "accuracy $accuracy% is not above chance (11%)"

# The ONNX file: the same network and accuracy when started from with no
# training, and it fine-tunes; the lm task refuses it (other outputs).
# shellcheck disable=SC2086
"$exe" $small --start "$out/lang.onnx" --epochs 0 --quiet > "$out/start.log" 2>&1 ||
    fail "--start lang.onnx failed: $(cat "$out/start.log")"
grep -q "^final test accuracy $accuracy% " "$out/start.log" ||
    fail "--start lang.onnx gives $(grep final "$out/start.log"), expected $accuracy%"
grep -q "^network     input tokens [0-9]* vocab=[0-9]*; embedding 32 pad=0; lstm 128 last; dense 9$" "$out/start.log" ||
    fail "--start lang.onnx does not name the imported network: $(grep network "$out/start.log")"
# shellcheck disable=SC2086
"$exe" $small --start "$out/lang.onnx" --epochs 1 --quiet > "$out/start.log" 2>&1 ||
    fail "--start lang.onnx --epochs 1 failed: $(cat "$out/start.log")"
# shellcheck disable=SC2086
"$exe" $small --task lm --start "$out/lang.onnx" --epochs 1 --quiet > /dev/null 2> "$out/stderr"
[ $? -eq 2 ] || fail "--task lm --start lang.onnx was not refused with status 2"
grep -q "the task needs" "$out/stderr" || fail "--task lm --start lang.onnx printed no reason"

# The language model: bits per character below the uniform 6.2 bits, and
# eight sampled words per language.
# shellcheck disable=SC2086
"$exe" $small --task lm --epochs 2 > "$out/lm.log" 2>&1 || fail "lm lstm failed: $(cat "$out/lm.log")"
cat "$out/lm.log"
bpc=$(sed -n 's/^final test bits per character \([0-9.]*\) .*/\1/p' "$out/lm.log")
[ -n "$bpc" ] || fail "no bits per character printed"
awk -v b="$bpc" 'BEGIN { exit !(b > 0 && b < 4.5) }' || fail "bits per character $bpc not below 4.5"
grep -q "^sampled words" "$out/lm.log" || fail "no sampled words"
[ "$(grep -c '^polish  *[^ ]' "$out/lm.log")" -ge 1 ] || fail "no sampled Polish words"

# The transformers run on both tasks.
for task in lang lm; do
    # shellcheck disable=SC2086
    "$exe" $small --task $task --model transformer --epochs 1 --quiet > "$out/t.log" 2>&1 ||
        fail "$task transformer failed: $(cat "$out/t.log")"
    grep -q "^final test" "$out/t.log" || fail "$task transformer printed no result"
done

# The export for the PyTorch twin: the data and the initial parameters.
# shellcheck disable=SC2086
"$exe" $small --task lm --seed 7 --export "$out/data" --quiet > /dev/null || fail "--export failed"
head -n 1 "$out/data/words.bin" | grep -q "^snn-words 1$" || fail "bad export header"
grep -a -q "^train 3600$" "$out/data/words.bin" || fail "export does not hold 3600 training words"
[ -s "$out/data/lm_lstm_seed7.safetensors" ] || fail "no initial parameters exported"
echo "ok"
