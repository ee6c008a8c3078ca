#!/bin/bash
# Builds the NuGet package of the C# binding, Snn.<version>.nupkg, and checks
# its contents.
#   pack.sh OUT_DIR LIB_DIR [RID=NATIVE_FILE ...]
# OUT_DIR: where the package goes. LIB_DIR: the directory holding libsnn.so.0
# (a Meson build directory, an installation's lib directory), packed as
# runtimes/linux-x64/native/libsnn.so (linux-arm64 on an aarch64 machine).
# RID=FILE adds another platform's library, e.g. win-x64=path/to/snn.dll or
# linux-arm64=path/to/libsnn.so.0; it is packed under runtimes/RID/native/ as
# snn.dll, libsnn.so or libsnn.dylib.
#
# The version is the header's (SNN_VERSION_MAJOR.MINOR.PATCH of include/snn.h).
# Snn.dll is compiled with Mono's mcs against Mono's 4.5 profile (mscorlib),
# which has Span<T>; a `dotnet pack` of Snn.csproj builds the netstandard2.1
# and net6.0 assemblies instead. The package is written as the zip a .nupkg
# is ([Content_Types].xml, _rels/.rels, Snn.nuspec, lib/, runtimes/), so
# packing needs only mcs and python3; `nuget install` restores it.
set -eu
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
out=$1; libdir=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
header=$root/include/snn.h
v() { sed -n "s/^#define SNN_VERSION_$1 \([0-9]*\).*/\1/p" "$header"; }
version=$(v MAJOR).$(v MINOR).$(v PATCH)
case $version in
    *[0-9].*[0-9].*[0-9]) ;;
    *) echo "pack.sh: no version in $header"; exit 1 ;;
esac

case $(uname -m) in
    x86_64) host_rid=linux-x64 ;;
    aarch64) host_rid=linux-arm64 ;;
    *) host_rid=linux-$(uname -m) ;;
esac
natives=("$host_rid=$libdir/libsnn.so.0" "$@")

mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib/netstandard2.1"
mcs -nologo -warnaserror -unsafe -optimize -target:library -out:"$stage/lib/netstandard2.1/Snn.dll" \
    "$here"/src/*.cs
cp "$here/src/snn.dll.config" "$stage/lib/netstandard2.1/Snn.dll.config"
for entry in "${natives[@]}"; do
    rid=${entry%%=*}; file=${entry#*=}
    [ -f "$file" ] || { echo "pack.sh: $file (for $rid) does not exist"; exit 1; }
    case $rid in
        win-*) name=snn.dll ;;
        osx-*) name=libsnn.dylib ;;
        *) name=libsnn.so ;;
    esac
    mkdir -p "$stage/runtimes/$rid/native"
    cp -L "$file" "$stage/runtimes/$rid/native/$name"
done
sed "s/[$]version[$]/$version/" "$here/Snn.nuspec" > "$stage/Snn.nuspec"
cp "$root/LICENSE" "$stage/LICENSE.txt"
cp "$here/README.md" "$stage/README.md"

package=$out/Snn.$version.nupkg
python3 - "$stage" "$package" <<'PY'
import os, sys, zipfile
stage, package = sys.argv[1], sys.argv[2]
files = sorted(os.path.relpath(os.path.join(d, f), stage).replace(os.sep, '/')
               for d, _, fs in os.walk(stage) for f in fs)
extensions = sorted({os.path.splitext(f)[1].lstrip('.') for f in files if os.path.splitext(f)[1]} | {'rels', 'psmdcp'})
content_types = ('<?xml version="1.0" encoding="utf-8"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">\n' +
    ''.join('  <Default Extension="%s" ContentType="application/octet" />\n' % e for e in extensions) +
    '  <Default Extension="0" ContentType="application/octet" />\n'
    '</Types>\n')
rels = ('<?xml version="1.0" encoding="utf-8"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">\n'
    '  <Relationship Type="http://schemas.microsoft.com/packaging/2010/07/manifest" Target="/Snn.nuspec" Id="R0" />\n'
    '</Relationships>\n')
def add(z, name, data):
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    z.writestr(info, data)
tmp = package + '.tmp'
with zipfile.ZipFile(tmp, 'w') as z:
    add(z, '[Content_Types].xml', content_types)
    add(z, '_rels/.rels', rels)
    for f in files:
        with open(os.path.join(stage, f), 'rb') as fh:
            add(z, f, fh.read())
os.replace(tmp, package)
PY

# The contents: every part a restore needs, the version, each native library
# an ELF or PE file of the right name.
python3 - "$package" "$version" "${natives[@]}" <<'PY'
import sys, zipfile, re
package, version, natives = sys.argv[1], sys.argv[2], sys.argv[3:]
z = zipfile.ZipFile(package)
names = set(z.namelist())
problems = []
need = ['[Content_Types].xml', '_rels/.rels', 'Snn.nuspec', 'lib/netstandard2.1/Snn.dll',
        'lib/netstandard2.1/Snn.dll.config']
for entry in natives:
    rid = entry.split('=', 1)[0]
    name = 'snn.dll' if rid.startswith('win-') else 'libsnn.dylib' if rid.startswith('osx-') else 'libsnn.so'
    need.append('runtimes/%s/native/%s' % (rid, name))
for n in need:
    if n not in names:
        problems.append(n + ' is missing')
nuspec = z.read('Snn.nuspec').decode() if 'Snn.nuspec' in names else ''
m = re.search(r'<version>([^<]*)</version>', nuspec)
if not m or m.group(1) != version:
    problems.append('the nuspec version is %s, the header says %s' % (m.group(1) if m else None, version))
if not re.search(r'<id>Snn</id>', nuspec):
    problems.append('the nuspec id is not Snn')
# The machine each file is built for, from its runtime identifier.
elf_machines = {'x64': 62, 'arm64': 183}
pe_machines = {'x64': 0x8664, 'arm64': 0xAA64}
for n in names:
    if n.startswith('runtimes/') and n.endswith(('.so', '.dll', '.dylib')):
        data = z.read(n)
        arch = n.split('/')[1].rsplit('-', 1)[-1]
        if n.endswith('.so'):
            if data[:4] != b'\x7fELF':
                problems.append(n + ' is not an ELF file')
            elif arch in elf_machines and int.from_bytes(data[18:20], 'little') != elf_machines[arch]:
                problems.append(n + ' is not built for ' + arch)
        if n.endswith('.dll'):
            if data[:2] != b'MZ':
                problems.append(n + ' is not a PE file')
            else:
                pe = int.from_bytes(data[0x3c:0x40], 'little')
                if arch in pe_machines and int.from_bytes(data[pe + 4:pe + 6], 'little') != pe_machines[arch]:
                    problems.append(n + ' is not built for ' + arch)
if z.read('lib/netstandard2.1/Snn.dll')[:2] != b'MZ':
    problems.append('lib/netstandard2.1/Snn.dll is not an assembly')
for n in sorted(names):
    print('  %9d  %s' % (z.getinfo(n).file_size, n))
for p in problems:
    print('pack.sh: ' + p)
sys.exit(1 if problems else 0)
PY
echo "$package"
