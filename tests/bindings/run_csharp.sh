#!/bin/bash
# Compiles bindings/csharp with Mono's mcs and runs it against the libsnn built
# by Meson.
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT           the NUnit 2.6 tests
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT package [RID=FILE ...]
#                                                  the package (other platforms'
#                                                  libraries added), restored and run
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT exit-runs tests/ExitProgram.cs, 20 times
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT readme    every ```csharp block of README.md,
#                                                  compiled as written and run
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT net5-resolver
#                                                  the binding as .NET 5 compiles it
#                                                  (its library-name resolver), type-checked
#                                                  against .NET's signatures
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT game-loop [ARGS...]
#                                                  tests/GameLoop.cs with the allocation
#                                                  counter preloaded: 0 managed bytes and
#                                                  0 native allocations per frame
#                                                  (ARGS: --allocate-per-frame or
#                                                  --malloc-per-frame, which must fail)
#   run_csharp.sh SOURCE_ROOT BUILD_ROOT package   pack.sh's .nupkg, restored from a local
#                                                  folder feed by `nuget install`, and the
#                                                  game loop built against it, run without
#                                                  any environment variable (the library
#                                                  found in the package layout)
# Exit status 0 only when everything ran and passed: nunit-console's status
# (its count of failures, taken modulo 256) and its XML result must both say so,
# every run of the exit program and every README program must exit with 0.
set -eu
src=$1; build=$2; mode=${3:-nunit}
shift $(( $# < 3 ? $# : 3 ))
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

# tests/core/alloc_counter.c as a library to preload: it counts every heap
# allocation of the process while counting is on (the game loop turns it on).
build_counter() {
    command -v "${CC:-cc}" >/dev/null || { echo "no C compiler for the allocation counter: skipped"; exit 77; }
    "${CC:-cc}" -shared -fPIC -O2 -o "$1" "$src/tests/core/alloc_counter.c"
}

case $mode in
    game-loop)
        # A folder for each set of arguments: meson runs the three at once.
        out=$build/bindings-csharp-game-loop$(printf '%s' "$*" | tr -c 'a-z-' '_')
        build_binding "$out"
        mcs -nologo -warnaserror -out:"$out/GameLoop.exe" -r:"$out/Snn.dll" tests/GameLoop.cs
        build_counter "$out/alloc_counter.so"
        LD_PRELOAD=$out/alloc_counter.so mono "$out/GameLoop.exe" --require-native-count "$@"
        exit
        ;;
    package)
        out=$build/bindings-csharp-package
        rm -rf "$out"
        mkdir -p "$out/feed" "$out/app" "$out/home"
        # The package, from the library of this build, checked by pack.sh.
        bash pack.sh "$out/feed" "$build" "$@"
        version=$(sed -n 's|.*<Version>\(.*\)</Version>.*|\1|p' Snn.csproj)
        nupkg=$(ls "$out"/feed/Snn.*.nupkg)
        [ "$nupkg" = "$out/feed/Snn.$version.nupkg" ] ||
            { echo "Snn.csproj's version $version is not the package's ($nupkg)"; exit 1; }
        # Restored as a program's package reference is: from the folder feed
        # alone, with a NuGet client when Debian's nuget is installed.
        if command -v nuget >/dev/null; then
            HOME=$out/home timeout 120 nuget install Snn -Version "$version" -Source "$out/feed" \
                -OutputDirectory "$out/packages" -NonInteractive </dev/null
        else
            echo "nuget not found: the package is unzipped instead of restored"
            mkdir -p "$out/packages/Snn.$version"
            python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
                "$nupkg" "$out/packages/Snn.$version"
        fi
        restored=$out/packages/Snn.$version
        [ -f "$restored/lib/netstandard2.1/Snn.dll" ] || { echo "the restore left no lib/netstandard2.1/Snn.dll"; exit 1; }
        # The build output of a program referencing the package, as the .NET SDK
        # lays it out: the assembly (and Mono's config) beside the program, the
        # native libraries under runtimes/RID/native/.
        cp "$restored"/lib/netstandard2.1/* "$out/app/"
        cp -r "$restored/runtimes" "$out/app/"
        mcs -nologo -warnaserror -out:"$out/app/GameLoop.exe" -r:"$out/app/Snn.dll" tests/GameLoop.cs
        build_counter "$out/alloc_counter.so"
        # No LD_LIBRARY_PATH nor any other variable: the binding must find the
        # library in the package layout (--require-package checks it did).
        cd /
        env -i PATH=/usr/bin:/bin HOME="$out/home" mono "$out/app/GameLoop.exe" --require-package
        # The same with the allocation counter preloaded, for the native count.
        env -i PATH=/usr/bin:/bin HOME="$out/home" LD_PRELOAD="$out/alloc_counter.so" \
            mono "$out/app/GameLoop.exe" --require-package --require-native-count
        # Without the runtimes folder the same program must not find the
        # library: it was the package layout that made it work.
        mkdir "$out/bare"
        cp "$out"/app/*.dll "$out"/app/*.config "$out"/app/*.exe "$out/bare/"
        status=0
        bare=$(env -i PATH=/usr/bin:/bin HOME="$out/home" mono "$out/bare/GameLoop.exe" 2>&1) || status=$?
        if [ "$status" -eq 0 ] || ! grep -q DllNotFoundException <<< "$bare"; then
            echo "without runtimes/ the program exited with $status:"
            echo "$bare" | head -5
            exit 1
        fi
        echo "without runtimes/: DllNotFoundException, as it should"
        exit
        ;;
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
