//! Finds libsnn and links it.
//!
//! Where: the directory in `SNN_LIB_DIR` (a Meson build directory of snn, or
//! an installed lib directory), else the `-L` directories that
//! `pkg-config --libs-only-L snn` prints. Neither: the build stops and says
//! what to set.
//!
//! How: when that directory holds `libsnn.a`, libsnn is linked statically,
//! with the system libraries it needs (`SNN_LINK_LIBS`, default
//! "openblas stdc++ m dl pthread", without openblas where pkg-config knows
//! none: a build of snn with its own products). Every binary that uses this crate, a
//! dependent crate's included, then runs without `LD_LIBRARY_PATH`. Otherwise
//! `libsnn.so` is linked and its directory written into the rpath of this
//! crate's own tests, examples and doctests (cargo does not pass rpaths on to
//! dependent crates: those need `LD_LIBRARY_PATH` or their own rpath then).
//! `SNN_STATIC=0` picks `libsnn.so` even when `libsnn.a` is there.
//!
//! Windows targets (`x86_64-pc-windows-gnu`): snn.dll is linked through its
//! import library (`snn.dll.a` or `libsnn.dll.a` in the build directory,
//! which GNU ld finds for `-lsnn`); the program finds snn.dll next to its
//! executable or on `PATH`, as every Windows program finds its DLLs.
//! `SNN_STATIC=1` links `libsnn.a` instead, with `SNN_LINK_LIBS` (default
//! "stdc++ bcrypt": snn's Windows build has no OpenBLAS and links its GCC
//! runtime and threads statically).

use std::env;
use std::path::Path;
use std::process::Command;

fn pkg_config_dirs(package: &str) -> Vec<String> {
    let output = match Command::new("pkg-config").args(["--libs-only-L", package]).output() {
        Ok(output) if output.status.success() => output,
        _ => return Vec::new(),
    };
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(str::to_owned)
        .collect()
}

fn pkg_config_knows(package: &str) -> bool {
    Command::new("pkg-config")
        .args(["--exists", package])
        .status()
        .is_ok_and(|status| status.success())
}

fn main() {
    for var in ["SNN_LIB_DIR", "SNN_STATIC", "SNN_LINK_LIBS", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let dirs = match env::var("SNN_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => vec![dir],
        _ if pkg_config_knows("snn") => pkg_config_dirs("snn"),
        _ => {
            eprintln!(
                "error: snn: libsnn was not found. Set SNN_LIB_DIR to the directory holding \
                 libsnn.a or libsnn.so (a Meson build directory of snn, e.g. \
                 SNN_LIB_DIR=/path/to/snn/build cargo build), or install snn so that \
                 `pkg-config --libs snn` finds it."
            );
            std::process::exit(1);
        }
    };
    let windows = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows");
    // Windows links the DLL unless asked otherwise; elsewhere the archive
    // wins when there is one.
    let prefer_static = match env::var("SNN_STATIC").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => !windows,
    };
    let archive = dirs.iter().find(|dir| Path::new(dir).join("libsnn.a").is_file());
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={dir}");
    }
    match archive {
        Some(dir) if prefer_static => {
            println!("cargo:rerun-if-changed={dir}/libsnn.a");
            // Every object, referenced or not: the ops and kernels register
            // themselves from static initialisers. Not bundled into the rlib:
            // Meson's archive is thin (it names the object files), which the
            // system linker reads and rustc does not.
            println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=snn");
            for dir in pkg_config_dirs("openblas") {
                println!("cargo:rustc-link-search=native={dir}");
            }
            let default_libs = if windows {
                "stdc++ bcrypt"
            } else if pkg_config_knows("openblas") {
                "openblas stdc++ m dl pthread"
            } else {
                "stdc++ m dl pthread"
            };
            let libs = env::var("SNN_LINK_LIBS").unwrap_or_else(|_| default_libs.to_owned());
            for lib in libs.split_whitespace() {
                println!("cargo:rustc-link-lib=dylib={lib}");
            }
        }
        _ => {
            if !windows {
                for dir in &dirs {
                    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
                }
            }
            println!("cargo:rustc-link-lib=dylib=snn");
        }
    }
    if let Some(dir) = dirs.first() {
        println!("cargo:root={dir}");
    }
}
