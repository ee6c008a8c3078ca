#!/bin/bash
# ONNX export checked by others: test_onnx_export writes every harness case
# (model, inputs, snn's outputs), ONNX Runtime (onnxruntime-node) runs them
# against snn's outputs, and onnx's checker (python3-onnx) checks each file.
#   test_export_ort.sh TEST_ONNX_EXPORT TESTS_ONNX_DIR
# Exits 77 (skipped), naming what is missing, without node, the npm package
# or python's onnx.
set -u
exporter=$1
here=$2
ort=$here/ort

command -v node >/dev/null || { echo "node not found (apt-get install nodejs): skipped"; exit 77; }
python=
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import onnx' 2>/dev/null; then python=$p; break; fi
done
[ -n "$python" ] || { echo "python3's onnx module not found (apt-get install python3-onnx): skipped"; exit 77; }

# The package comes from tests/onnx/ort/package-lock.json (npm ci; its
# install script, which fetches GPU binaries, is not run: the CPU binaries
# are in the package). One test installs it while others wait on the lock.
install() {
    [ -f "$ort/node_modules/.installed" ] && return 0
    command -v npm >/dev/null || return 1
    (cd "$ort" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null 2>&1) &&
        touch "$ort/node_modules/.installed"
}
if command -v flock >/dev/null; then
    (flock 9 && install) 9>"$ort/.npm-install.lock"
else
    install
fi
(cd "$ort" && node -e "require('onnxruntime-node')" 2>/dev/null) ||
    { echo "onnxruntime-node not installed in tests/onnx/ort (npm ci --ignore-scripts there): skipped"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/snn_onnx_cases.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "=== snn: export every harness case and run it"
SNN_ONNX_CASES_DIR=$work "$exporter" --gtest_filter=OnnxExport.Cases --gtest_brief=1 || exit 1
[ -f "$work/cases.json" ] || { echo "no cases.json written"; exit 1; }
status=0
echo "=== ONNX Runtime against snn's outputs"
node "$ort/run_cases.js" "$work" || status=1
echo "=== onnx.checker.check_model(full_check=True)"
"$python" "$here/check_models.py" "$work" || status=1
exit $status
