#!/bin/bash
# Compiles bindings/csharp with Mono's mcs and runs its NUnit 2.6 tests against
# the libsnn built by Meson.  run_csharp.sh SOURCE_ROOT BUILD_ROOT
set -eu
src=$1; build=$2
command -v mcs >/dev/null || { echo "mcs not found: skipped"; exit 77; }
command -v nunit-console >/dev/null || { echo "nunit-console not found: skipped"; exit 77; }
nunit=$(pkg-config --variable=pkglibdir nunit 2>/dev/null || echo /usr/lib/cli)/nunit.framework-2.6.3/nunit.framework.dll
[ -f "$nunit" ] || { echo "nunit.framework.dll not found: skipped"; exit 77; }
out=$build/bindings-csharp
mkdir -p "$out"
cd "$src/bindings/csharp"
mcs -nologo -warnaserror -target:library -out:"$out/Snn.dll" src/NativeMethods.cs src/Snn.cs
cp src/snn.dll.config "$out/Snn.dll.config"
mcs -nologo -warnaserror -target:library -out:"$out/Snn.Tests.dll" -r:"$out/Snn.dll" -r:"$nunit" tests/SnnTests.cs
cd "$out"
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec nunit-console -nologo -noshadow Snn.Tests.dll
