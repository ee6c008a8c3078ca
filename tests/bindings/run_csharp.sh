#!/bin/bash
# Compiles bindings/csharp with Mono's mcs and runs it against the libsnn built
# by Meson.
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT           the NUnit 2.6 tests
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT exit-runs tests/ExitProgram.cs, 20 times
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT readme    every ```csharp block of README.md,
#                                                  compiled as written and run
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT net5-resolver
#                                                  the binding as .NET 5 compiles it
#                                                  (its library-name resolver), type-checked
#                                                  against .NET's signatures
# Exit status 0 only when everything ran and passed: nunit-console's status
# (its count of failures, taken modulo 256) and its XML result must both say so,
# every run of the exit program and every README program must exit with 0.
set -eu
src=$1; build=$2; mode=${3:-nunit}
command -v mcs >/dev/null || { echo "mcs not found: skipped"; exit 77; }
command -v mono >/dev/null || { echo "mono not found: skipped"; exit 77; }
cd "$src/bindings/csharp"
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# Snn.dll and its Mono config (which maps "snn" to libsnn.so.0) into $1.
build_binding() {
    mkdir -p "$1"
    mcs -nologo -warnaserror -unsafe -target:library -out:"$1/Snn.dll" src/NativeLibraryName.cs src/Handles.cs src/NativeMethods.cs src/Snn.cs
    cp src/snn.dll.config "$1/Snn.dll.config"
}

case $mode in
    exit-runs)
        out=$build/bindings-csharp-exit
        build_binding "$out"
        mcs -nologo -warnaserror -out:"$out/ExitProgram.exe" -r:"$out/Snn.dll" tests/ExitProgram.cs
        runs=20
        failed=0
        for run in $(seq "$runs"); do
            status=0
            mono "$out/ExitProgram.exe" || status=$?
            if [ "$status" -ne 0 ]; then
                echo "run $run exited with status $status"
                failed=$((failed + 1))
            fi
        done
        echo "exit program: $failed of $runs runs did not exit with 0"
        [ "$failed" -eq 0 ]
        exit
        ;;
    readme)
        out=$build/bindings-csharp-readme
        rm -rf "$out"
        build_binding "$out"
        # Block n of README.md into $out/readme-n.cs, exactly as written.
        awk -v dir="$out" '
            /^```csharp[[:space:]]*$/ { n++; file = dir "/readme-" n ".cs"; printf "" > file; inside = 1; next }
            /^```/ && inside { inside = 0; close(file); next }
            inside { print > file }
        ' README.md
        blocks=$(find "$out" -name 'readme-*.cs' | sort)
        [ -n "$blocks" ] || { echo "README.md has no csharp block"; exit 1; }
        failed=0
        for cs in $blocks; do
            exe=${cs%.cs}.exe
            status=0
            mcs -nologo -warnaserror -out:"$exe" -r:"$out/Snn.dll" "$cs" || status=$?
            if [ "$status" -eq 0 ]; then
                (cd "$out" && mono "$exe") || status=$?
            fi
            echo "$(basename "$cs"): status $status"
            [ "$status" -eq 0 ] || failed=$((failed + 1))
        done
        echo "README programs: $failed of $(echo "$blocks" | wc -l) failed"
        [ "$failed" -eq 0 ]
        exit
        ;;
    net5-resolver)
        # No .NET runs here: mcs compiles the NET5_0_OR_GREATER block against
        # declarations of the .NET 5 types it uses (fixtures/Net5Stubs.cs;
        # warning 436: those shadow Mono's own OperatingSystem).
        out=$build/bindings-csharp-net5
        mkdir -p "$out"
        mcs -nologo -warnaserror -nowarn:436 -unsafe -d:NET5_0_OR_GREATER -target:library \
            -out:"$out/Snn.dll" "$src/tests/bindings/fixtures/Net5Stubs.cs" src/NativeLibraryName.cs src/Handles.cs src/NativeMethods.cs src/Snn.cs
        grep -q 'NativeLibrary.SetDllImportResolver' src/NativeLibraryName.cs
        echo "the NET5_0_OR_GREATER build of the binding compiles"
        exit
        ;;
    nunit) ;;
    *) echo "unknown mode $mode"; exit 2 ;;
esac

command -v nunit-console >/dev/null || { echo "nunit-console not found: skipped"; exit 77; }
nunit=$(pkg-config --variable=pkglibdir nunit 2>/dev/null || echo /usr/lib/cli)/nunit.framework-2.6.3/nunit.framework.dll
[ -f "$nunit" ] || { echo "nunit.framework.dll not found: skipped"; exit 77; }
out=$build/bindings-csharp
build_binding "$out"
mcs -nologo -warnaserror -target:library -out:"$out/Snn.Tests.dll" -r:"$out/Snn.dll" -r:"$nunit" -r:System.Xml tests/*Tests.cs
cd "$out"
result=$out/TestResult.xml
rm -f "$result"
status=0
nunit-console -nologo -noshadow -result="$result" Snn.Tests.dll || status=$?
if [ "$status" -ne 0 ]; then
    echo "nunit-console exited with status $status"
    exit 1
fi
[ -f "$result" ] || { echo "nunit-console wrote no result file"; exit 1; }
# The counts of the <test-results> element: every test must have run and passed.
count() {
    sed -n "s/.*<test-results [^>]* $1=\"\([0-9]*\)\".*/\1/p" "$result" | head -n 1
}
total=$(count total); errors=$(count errors); failures=$(count failures); invalid=$(count invalid)
if [ -z "$total" ] || [ "$total" -eq 0 ] || [ "$errors" != 0 ] || [ "$failures" != 0 ] || [ "$invalid" != 0 ]; then
    echo "the NUnit result file says total=${total:-?} errors=${errors:-?} failures=${failures:-?} invalid=${invalid:-?}"
    exit 1
fi
