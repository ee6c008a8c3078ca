#!/bin/bash
# Runs tools/gen_bindings.py --check against a copy of include/snn.h with one
# more constant and one more function: each committed file is then older than
# the header, and the check must say so (see expect_failure.sh).
#   gen_bindings_stale.sh SOURCE_ROOT
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's|^#define SNN_MAX_SPEC_LENGTH .*|&\n#define SNN_STALE_CHECK 7\nSNN_API snn_status snn_stale_check(int32_t n);|' \
    "$src/include/snn.h" >"$tmp/snn.h"
if ! grep -q '^#define SNN_STALE_CHECK 7$' "$tmp/snn.h"; then
    echo "the header has no '#define SNN_MAX_SPEC_LENGTH' line to add a constant after"
    exit 2
fi
python3 "$src/tools/gen_bindings.py" --header "$tmp/snn.h" --check
