#!/bin/sh
# tools/check_include_floors.py passes on lib, and fails, naming the file
# and line, on a copy of lib with one upward include planted (an op
# descriptor including the engine), on a copy with an OS header included
# outside lib/platform, and on a copy with a folder on no floor.
#
#   test_include_floors.sh tools/check_include_floors.py lib
set -u
check=$1
lib=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}

python3 "$check" "$lib" || fail "lib has upward includes"

cp -r "$lib" "$out/lib"
printf '#include "engine/network.h"\n' >>"$out/lib/ops/dense.cpp"
line=$(wc -l <"$out/lib/ops/dense.cpp")
if msg=$(python3 "$check" "$out/lib"); then fail "a planted upward include passed: $msg"; fi
echo "$msg" | grep -q "^lib/ops/dense.cpp:$line: ops (floor 5) includes engine (floor 2)$" ||
    fail "the planted include is not named: $msg"

rm -rf "$out/lib" && cp -r "$lib" "$out/lib"
printf '#include <unistd.h>\n' >>"$out/lib/model/file_io.cpp"
line=$(wc -l <"$out/lib/model/file_io.cpp")
if msg=$(python3 "$check" "$out/lib"); then fail "an OS header outside lib/platform passed: $msg"; fi
echo "$msg" | grep -q "^lib/model/file_io.cpp:$line: <unistd.h> is an OS header outside lib/platform$" ||
    fail "the OS header is not named: $msg"

rm -rf "$out/lib" && cp -r "$lib" "$out/lib" && mkdir "$out/lib/newfolder"
if msg=$(python3 "$check" "$out/lib"); then fail "a folder on no floor passed"; fi
echo "$msg" | grep -q "lib/newfolder is on no floor" || fail "the folder is not named: $msg"
echo "ok: no upward include nor OS header outside lib/platform in lib; planted ones and a folder on no floor are caught"
