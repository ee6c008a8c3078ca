#!/bin/bash
# The Rust binding's checks against the libsnn built by Meson.
#   run_rust.sh SOURCE_ROOT BUILD_ROOT            cargo test of bindings/rust
#       (the workspace: snn-sys and snn)
#   run_rust.sh SOURCE_ROOT BUILD_ROOT clippy     cargo clippy -D warnings
#   run_rust.sh SOURCE_ROOT BUILD_ROOT doc        cargo doc with rustdoc's warnings
#       (broken intra-doc links among them) as errors
#   run_rust.sh SOURCE_ROOT BUILD_ROOT dependent  cargo run of a crate that only
#       has the dependency line and SNN_LIB_DIR (tests/bindings/rust_dependent),
#       with no LD_LIBRARY_PATH
#   run_rust.sh SOURCE_ROOT BUILD_ROOT no-lib-dir  the build without SNN_LIB_DIR
#       nor pkg-config must fail, saying what to set, when it may not build
#       libsnn (SNN_NO_BUILD=1) or cannot (no meson)
#   run_rust.sh SOURCE_ROOT BUILD_ROOT pkg-config  without SNN_LIB_DIR, libsnn
#       from pkg-config (BUILD_ROOT's snn-uninstalled.pc): the dependent crate
#       linked statically, and the safe crate's tests linked to libsnn.so
#       (SNN_STATIC=0) run through the rpath snn-sys passes on, without
#       LD_LIBRARY_PATH
#   run_rust.sh SOURCE_ROOT BUILD_ROOT from-source  a crate made by `cargo new`
#       in a clean folder outside the repository, with one dependency line
#       and no environment variables, builds libsnn from the repository's
#       sources (reused between runs: BUILD_ROOT/rust-from-source-target)
#       and runs a classifier (tests/bindings/rust_classifier.rs)
#   run_rust.sh SOURCE_ROOT BUILD_ROOT package  `cargo package --offline` of
#       both crates (a copy in BUILD_ROOT/rust-package), snn-sys with its
#       bundled sources (vendor_sources.sh), each verified by a build against
#       SNN_LIB_DIR
# Every test binary runs even after one fails (each prints its counts); the
# exit status is cargo's, non-zero when any test failed. 77: skipped.
set -eu
src=$1; build=$2
command -v cargo >/dev/null || { echo "cargo not found: skipped"; exit 77; }
export SNN_LIB_DIR=$build
export CARGO_TARGET_DIR=$build/bindings-rust-target
case "${3:-test}" in
test)
    cd "$src/bindings/rust"
    exec cargo test --offline --no-fail-fast ;;
clippy)
    cd "$src/bindings/rust"
    cargo clippy --version >/dev/null 2>&1 || { echo "clippy not installed: skipped"; exit 77; }
    exec cargo clippy --offline --all-targets -- -D warnings ;;
doc)
    cd "$src/bindings/rust"
    export RUSTDOCFLAGS="-D warnings"
    exec cargo doc --offline --no-deps ;;
dependent)
    cd "$src/tests/bindings/rust_dependent"
    export CARGO_TARGET_DIR=$build/rust-dependent-target
    exec env -u LD_LIBRARY_PATH cargo run --offline ;;
no-lib-dir)
    cd "$src/tests/bindings/rust_dependent"
    export CARGO_TARGET_DIR=$build/rust-no-lib-dir-target
    # Each case: the environment it builds in, then the reason the message gives.
    for case in "SNN_NO_BUILD=1|SNN_NO_BUILD is set" \
                "MESON=$build/no-such-meson|meson setup could not be started"; do
        setting=${case%%|*}; reason=${case#*|}
        set +e
        output=$(env -u SNN_LIB_DIR -u SNN_NO_BUILD -u MESON "$setting" PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=/nonexistent \
                 cargo build --offline 2>&1)
        status=$?
        set -e
        echo "$output"
        if [ "$status" -eq 0 ]; then echo "the build succeeded without SNN_LIB_DIR ($setting)"; exit 1; fi
        grep -qF "Set SNN_LIB_DIR to the directory holding libsnn.a or libsnn.so" <<< "$output" ||
            { echo "the build failed without saying what to set ($setting)"; exit 1; }
        grep -qF "snn: building libsnn from source: $reason" <<< "$output" ||
            { echo "the build failed without saying why it built no libsnn ($setting)"; exit 1; }
        # The next case must run the build script again.
        rm -rf "$CARGO_TARGET_DIR"
    done
    echo "without SNN_LIB_DIR the build fails and says what to set, and why it built no libsnn" ;;
pkg-config)
    command -v pkg-config >/dev/null || { echo "pkg-config not found: skipped"; exit 77; }
    [ -f "$build/meson-uninstalled/snn-uninstalled.pc" ] || { echo "no snn-uninstalled.pc in $build: skipped"; exit 77; }
    unset SNN_LIB_DIR LD_LIBRARY_PATH
    # No build from source to fall back on: pkg-config must give libsnn.
    export SNN_NO_BUILD=1 PKG_CONFIG_PATH=$build/meson-uninstalled
    [[ " $(pkg-config --libs-only-L snn) " == *" -L$build "* ]] || { echo "pkg-config does not give -L$build"; exit 1; }
    cd "$src/tests/bindings/rust_dependent"
    CARGO_TARGET_DIR=$build/rust-pkg-config-target cargo run --offline
    cd "$src/bindings/rust"
    SNN_STATIC=0 CARGO_TARGET_DIR=$build/rust-pkg-config-target cargo test --offline -p snn --test predict ;;
from-source)
    if pkg-config --exists snn 2>/dev/null; then
        echo "pkg-config knows an installed snn, which the crate would link: skipped"; exit 77
    fi
    command -v meson >/dev/null && command -v ninja >/dev/null || { echo "meson or ninja not found: skipped"; exit 77; }
    export CARGO_TARGET_DIR=$build/rust-from-source-target
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    cd "$dir"
    # The README's set-up, word for word: cargo new and one dependency line.
    env -u SNN_LIB_DIR cargo new --offline --vcs none --quiet classifier
    cd classifier
    echo "snn = { path = \"$src/bindings/rust/snn\" }" >> Cargo.toml
    cp "$src/tests/bindings/rust_classifier.rs" src/main.rs
    unset SNN_LIB_DIR
    exec env -u LD_LIBRARY_PATH cargo run --offline -j 2 ;;
package)
    # On a copy of bindings/rust, so that the bundled sources stay out of
    # the checkout.
    copy=$build/rust-package
    rm -rf "$copy"
    mkdir -p "$copy"
    (cd "$src/bindings/rust" && tar cf - --exclude=./target --exclude=./snn-sys/native .) | (cd "$copy" && tar xf -)
    bash "$copy/vendor_sources.sh" "$src"
    cd "$copy"
    export CARGO_TARGET_DIR=$build/rust-package-target
    # cargo verifies snn against the snn-sys it just packaged, unpacked from
    # a registry in the target directory into CARGO_HOME/registry/src under
    # a name made from that registry's path, and an unpacked crate of that
    # name is used again as it is: the snn-sys of an earlier run at the same
    # path, without the functions snn now calls. A CARGO_HOME of this run's
    # own, and a target directory emptied, verify what this run packaged.
    cargo_home=$(mktemp -d)
    trap 'rm -rf "$cargo_home"' EXIT
    export CARGO_HOME=$cargo_home
    rm -rf "$CARGO_TARGET_DIR"
    cargo package --offline --workspace
    # The bundled sources hold what the Meson build reads.
    listing=$(cargo package --offline --list -p snn-sys)
    for file in native/meson.build native/meson_options.txt native/include/snn.h native/lib/snn.map \
                native/lib/api/api_core.cpp native/cuda/meson.build native/dist/meson.build src/lib.rs build.rs; do
        grep -qxF "$file" <<< "$listing" || { echo "snn-sys's package lacks $file"; exit 1; }
    done
    size=$(stat -c %s "$CARGO_TARGET_DIR/package/snn-sys-0.1.0.crate")
    echo "snn-sys-0.1.0.crate: $size bytes"
    # crates.io takes crates up to 10 MB.
    [ "$size" -lt 10000000 ] || { echo "snn-sys's package is over 10 MB"; exit 1; } ;;
*)
    echo "unknown mode $3"; exit 2 ;;
esac
