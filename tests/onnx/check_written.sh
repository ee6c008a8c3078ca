#!/bin/sh
# Writes a model with write_model (the program WRITER) and runs onnx's checker
# on it (CHECKER, a Python script). Exits 77 (skipped) when no python3 with
# the onnx module is found: python3 on PATH first, then the system's, where
# the Debian package python3-onnx installs it.
#   check_written.sh WRITER CHECKER
set -u
writer=$1
checker=$2
python=
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import onnx' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "skipped: no python3 with the onnx module (pip install onnx, or the package python3-onnx)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$writer" "$dir/sample.onnx" || exit 1
"$python" "$checker" "$dir/sample.onnx"
