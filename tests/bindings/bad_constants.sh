#!/bin/bash
# Runs a binding's constant check on a copy of the binding's real files with
# the same deliberate faults planted in each (see expect_failure.sh): the
# status SNN_ERR_INTERNAL missing, SNN_HP_ALPHA (C#: OptimiserKind.RmsProp and
# SNN_MAX_LAYERS) with a wrong value, SNN_ERR_TIMEOUT (23) added although the
# header lacks it, and SNN_LOG_INFO left out with an abi-omitted line, which is
# allowed. Every other constant is the binding's own, so a constant added to
# the header needs no change here.
#   bad_constants.sh SOURCE_ROOT rust|csharp|julia
set -u
src=$1; lang=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# plant FILE SED-SCRIPT CHECK-PATTERN: edit FILE in place; exit 2 (not the
# checker's 1) when the edit found nothing to change.
plant() {
    cp "$1" "$1.before"
    sed -i -E "$2" "$1"
    if cmp -s "$1" "$1.before" || ! grep -qE -- "$3" "$1"; then
        echo "bad_constants.sh: '$2' changed nothing in $(basename "$1"): update this script"
        exit 2
    fi
}
omit='abi-omitted: SNN_LOG_INFO this binding logs only errors and warnings'

case $lang in
    rust)
        f=$tmp/sys.rs
        cp "$src/bindings/rust/snn-sys/src/lib.rs" "$f"
        plant "$f" '/^pub const SNN_ERR_INTERNAL:/d' '^pub const SNN_ERR_TOKEN:'
        plant "$f" 's/^(pub const SNN_HP_ALPHA: [a-z_0-9]+ = )8;/\19;/' '^pub const SNN_HP_ALPHA: .* = 9;'
        plant "$f" 's/^pub const SNN_OK: snn_status = 0;/&\npub const SNN_ERR_TIMEOUT: snn_status = 23;/' 'SNN_ERR_TIMEOUT'
        plant "$f" "s#^pub const SNN_LOG_INFO: .*#// $omit#" "$omit"
        python3 "$src/tools/abi_check.py" --header "$src/include/snn.h" --constants-only --rust "$f" ;;
    csharp)
        f=$tmp/Snn.cs; n=$tmp/NativeMethods.cs
        cp "$src/bindings/csharp/src/Snn.cs" "$f"
        cp "$src/bindings/csharp/src/NativeMethods.cs" "$n"
        plant "$f" 's/\bInternal = 21, //' 'Cuda = 20, Token = 22'
        plant "$f" 's/\bToken = 22\b/Token = 22, Timeout = 23/' 'Timeout = 23'
        plant "$f" 's/\bRmsProp = 4\b/RmsProp = 5/' 'RmsProp = 5'
        plant "$f" "s#, Info = 2 \}# } // $omit#" "$omit"
        plant "$n" 's/\bSNN_MAX_LAYERS = 100000;/SNN_MAX_LAYERS = 1000;/' 'SNN_MAX_LAYERS = 1000;'
        python3 "$src/tools/abi_check.py" --header "$src/include/snn.h" --constants-only --csharp "$n" "$f" ;;
    julia)
        f=$tmp/libsnn.jl
        cp "$src/bindings/julia/src/libsnn.jl" "$f"
        plant "$f" '/^const SNN_ERR_INTERNAL = /d' '^const SNN_ERR_TOKEN = '
        plant "$f" 's/^const SNN_HP_ALPHA = Int32\(8\)/const SNN_HP_ALPHA = Int32(9)/' 'SNN_HP_ALPHA = Int32\(9\)'
        plant "$f" 's/^const SNN_OK = Int32\(0\)/&\nconst SNN_ERR_TIMEOUT = Int32(23)/' 'SNN_ERR_TIMEOUT'
        plant "$f" "s/^const SNN_LOG_INFO = .*/# $omit/" "$omit"
        bash "$src/tests/bindings/run_julia_checks.sh" "$src" bad-constants "$f" ;;
    *) echo "unknown binding $lang"; exit 2 ;;
esac
