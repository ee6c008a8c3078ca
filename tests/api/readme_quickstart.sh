#!/bin/sh
# The README's C quick start is a complete program: its code block compiles
# as shown with -Wall -Wextra -Werror, links against the build tree's libsnn
# with an rpath, and against a copy installed under a prefix of its own (the
# loader finds it through the rpath or LD_LIBRARY_PATH, and a program with
# neither stops with the loader's message the README quotes); each run
# trains below the MSE of 1e-4 the README promises, to a line of the form
# it prints. The figures themselves depend on OpenBLAS's kernels (the README
# gives two), so the test asks that the Julia binding's README, whose sine
# example is the same configuration, quotes the same two.
#
#   readme_quickstart.sh README.md julia-README.md include-dir build-dir
set -u
readme=$1
julia_readme=$2
include=$3
build=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() {
    echo "FAIL: $*"
    exit 1
}

# Whether a printed line is of the README's form, trained below 1e-4, with
# the model's value within 0.01 of sin(x).
good() {  # line
    python3 - "$1" <<'PY'
import math, re, sys
m = re.match(r"MSE (\S+); sin\(([0-9.]+)\) = ([0-9.-]+), the model says ([0-9.-]+)$", sys.argv[1])
ok = m and float(m.group(1)) < 1e-4 and abs(math.sin(float(m.group(2))) - float(m.group(3))) < 1e-3 \
    and abs(float(m.group(4)) - float(m.group(3))) < 0.01
sys.exit(0 if ok else 1)
PY
}

# The first ```c block after the "## C quick start" heading.
awk '/^## C quick start/ { section = 1 }
     section && /^```c$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" >"$out/quickstart.c"
[ -s "$out/quickstart.c" ] || fail "no C block under '## C quick start' in $readme"
grep -q 'int main' "$out/quickstart.c" || fail "the quick start has no main()"

# The MSE figures the README quotes, which the Julia README quotes too.
figures=$(sed -n '/^## C quick start/,/^## API overview/p' "$readme" | tr '\n' ' ' |
          grep -o 'MSE [0-9.e+-]*' | sed 's/MSE //' | sort -u | tr '\n' ' ')
[ -n "$figures" ] || fail "the README does not say what the quick start prints"
for f in $figures; do
    short=$(python3 -c 'import sys; print("%.3g" % float(sys.argv[1]))' "$f" | sed 's/e-0/e-/')
    grep -q "# .*$short" "$julia_readme" || fail "the Julia README's sine example does not quote $short (the C README's $f)"
done

cc -std=c99 -Wall -Wextra -Werror -I"$include" "$out/quickstart.c" -L"$build" -lsnn -lm \
    -Wl,-rpath,"$build" -o "$out/tree" || fail "the quick start does not compile against the build tree"
got=$("$out/tree") || fail "the quick start exited with $? (build tree): $got"
good "$got" || fail "the quick start printed '$got'"
echo "build tree: $got"

# Installed under a prefix of its own (a DESTDIR copy of the installation).
meson install -C "$build" --no-rebuild --quiet --destdir "$out/root" >"$out/install.log" 2>&1 ||
    { cat "$out/install.log"; fail "meson install failed"; }
lib=$(dirname "$(find "$out/root" -name 'libsnn.so' | head -n 1)")
inc=$(dirname "$(find "$out/root" -name 'snn.h' | head -n 1)")
[ -f "$lib/libsnn.so" ] && [ -f "$inc/snn.h" ] || fail "the installation has no libsnn.so or snn.h"
[ -f "$lib/pkgconfig/snn.pc" ] || fail "the installation has no pkgconfig/snn.pc"
cc -std=c99 -I"$inc" "$out/quickstart.c" -L"$lib" -lsnn -lm -o "$out/bare" || fail "no build against the installation"
if msg=$("$out/bare" 2>&1); then fail "a program without rpath found the prefix's libsnn"; fi
echo "$msg" | grep -q "libsnn.so.0: cannot open shared object file" || fail "unexpected loader message: $msg"
got=$(LD_LIBRARY_PATH="$lib" "$out/bare") || fail "LD_LIBRARY_PATH run exited with $?"
good "$got" || fail "with LD_LIBRARY_PATH it printed '$got'"
cc -std=c99 -I"$inc" "$out/quickstart.c" -L"$lib" -lsnn -lm -Wl,-rpath,"$lib" -o "$out/rpath" ||
    fail "no build with an rpath"
got=$("$out/rpath") || fail "rpath run exited with $?"
good "$got" || fail "with an rpath it printed '$got'"
echo "installed prefix: $got (rpath and LD_LIBRARY_PATH)"
