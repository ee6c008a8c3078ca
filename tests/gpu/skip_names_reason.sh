#!/bin/sh
# Without a usable GPU the GPU tests skip (77) and print the library's
# reason: run with SNN_CUDA_PLUGIN naming a file that does not exist, the
# skip must say that the plugin was not found, and where it was looked for.
#   skip_names_reason.sh path/to/test_device_status MISSING_PLUGIN_PATH
set -u
output=$("$1" skip-unless-gpu 2>&1)
status=$?
echo "$output"
[ "$status" -eq 77 ] || { echo "expected exit status 77 (skipped), got $status"; exit 1; }
case $output in
    "skipped: no usable GPU (the CUDA plugin libsnn_cuda.so was not found: "*"$2"*) echo "ok" ;;
    *) echo "the skip does not name the missing plugin $2"; exit 1 ;;
esac
