//! Finds libsnn, or builds it, and links it.
//!
//! Where, in this order:
//! 1. the directory in `SNN_LIB_DIR` (a Meson build directory of snn, or an
//!    installed lib directory);
//! 2. an installed snn that `pkg-config --libs --cflags snn` knows (its `-L`
//!    directories, or the linker's default path);
//! 3. snn built from its sources with Meson and Ninja (both run as programs,
//!    `MESON` and `NINJA` name others) into this crate's `OUT_DIR`: for the
//!    crate inside snn's repository, the repository itself, else the sources
//!    bundled in the package (`native/`, copied by `vendor_sources.sh`). The build is static, CPU only
//!    (OpenBLAS where Meson finds it), and is reused by the next `cargo
//!    build` of the same target directory. `SNN_NO_BUILD=1` skips it.
//!
//! None works: the build stops and says what to set or install.
//!
//! How: when the directory holds `libsnn.a`, libsnn is linked statically,
//! with the system libraries it needs (`SNN_LINK_LIBS`, default
//! "openblas stdc++ m dl pthread", without openblas where pkg-config knows
//! none, or, for a build from source, where Meson found none). Every binary
//! that uses this crate, a dependent crate's included, then runs without
//! `LD_LIBRARY_PATH`. Otherwise `libsnn.so` is linked and its directory
//! written into the rpath of this crate's own targets and passed as
//! `DEP_SNN_RPATH` to the `snn` crate, whose build script does the same for
//! its tests, examples and doctests (cargo passes rpaths on no further:
//! other crates need `LD_LIBRARY_PATH` or their own rpath then). `SNN_STATIC=0` picks
//! `libsnn.so` even when `libsnn.a` is there.
//!
//! Windows targets (`x86_64-pc-windows-gnu`): snn.dll is linked through its
//! import library (`snn.dll.a` or `libsnn.dll.a` in the build directory,
//! which GNU ld finds for `-lsnn`); the program finds snn.dll next to its
//! executable or on `PATH`, as every Windows program finds its DLLs.
//! `SNN_STATIC=1` links `libsnn.a` instead, with `SNN_LINK_LIBS` (default
//! "stdc++ bcrypt": snn's Windows build has no OpenBLAS and links its GCC
//! runtime and threads statically). A cross build never builds from source.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pkg_config_dirs(package: &str) -> Vec<String> {
    let output = match Command::new("pkg-config").args(["--libs", "--cflags", package]).output() {
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

/// snn's source tree: the repository this crate sits in (as
/// bindings/rust/snn-sys), else the copy bundled in the package.
fn source_tree(manifest_dir: &Path) -> Option<PathBuf> {
    let is_snn = |dir: &Path| {
        dir.join("include/snn.h").is_file()
            && dir.join("lib").is_dir()
            && fs::read_to_string(dir.join("meson.build")).is_ok_and(|text| text.contains("project('snn'"))
    };
    let repository = manifest_dir.join("../../..");
    let in_repository = repository.join("bindings/rust/snn-sys").canonicalize().ok() == manifest_dir.canonicalize().ok();
    [(repository, in_repository), (manifest_dir.join("native"), true)]
        .into_iter()
        .find(|(dir, candidate)| *candidate && is_snn(dir))
        .map(|(dir, _)| dir.canonicalize().unwrap_or(dir))
}

/// Runs a build step, its output kept in `log`; on failure, says which step
/// failed and shows the end of its output.
fn run(step: &str, command: &mut Command, log: &Path) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|err| format!("{step} could not be started ({err}): install Meson and Ninja"))?;
    let mut text = output.stdout;
    text.extend_from_slice(&output.stderr);
    let _ = fs::write(log, &text);
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(30)..].join("\n");
    Err(format!("{step} failed ({}; the whole output is in {}):\n{tail}", output.status, log.display()))
}

/// Builds libsnn.a from `src` into `OUT_DIR/libsnn-build`; returns that
/// directory and whether the build uses OpenBLAS.
fn build_from_source(src: &Path) -> Result<(PathBuf, bool), String> {
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|_| "OUT_DIR is not set".to_owned())?);
    let build = out.join("libsnn-build");
    let meson = env::var("MESON").unwrap_or_else(|_| "meson".to_owned());
    let ninja = env::var("NINJA").unwrap_or_else(|_| "ninja".to_owned());
    // A configured directory is reused: Ninja rebuilds what changed.
    if !build.join("build.ninja").is_file() {
        let _ = fs::remove_dir_all(&build);
        run(
            "meson setup",
            Command::new(&meson).arg("setup").arg(&build).arg(src).args([
                "--buildtype=release",
                "-Dcuda=disabled",
                "-Dmpi=disabled",
                "-Dnccl=disabled",
                "-Dtests=false",
                "-Dexamples=false",
                "-Dbenchmarks=false",
            ]),
            &out.join("meson-setup.log"),
        )?;
    }
    let mut command = Command::new(&ninja);
    command.arg("-C").arg(&build);
    if let Ok(jobs) = env::var("NUM_JOBS") {
        command.args(["-j", &jobs]);
    }
    run("ninja", command.arg("libsnn.a"), &out.join("ninja.log"))?;
    // Meson's record of the dependencies it found.
    let found = fs::read_to_string(build.join("meson-info/intro-dependencies.json")).unwrap_or_default();
    let openblas = found.contains("\"name\": \"openblas\"");
    Ok((build, openblas))
}

fn fail(why: &str) -> ! {
    eprintln!(
        "error: snn: libsnn was not found. Set SNN_LIB_DIR to the directory holding \
         libsnn.a or libsnn.so (a Meson build directory of snn, e.g. \
         SNN_LIB_DIR=/path/to/snn/build cargo build), or install snn so that \
         `pkg-config --libs snn` finds it, or install Meson, Ninja, a C++17 compiler \
         and nlohmann-json (OpenBLAS optional) for this crate to build it.\n\
         snn: building libsnn from source: {why}"
    );
    std::process::exit(1);
}

fn main() {
    for var in [
        "SNN_LIB_DIR",
        "SNN_STATIC",
        "SNN_LINK_LIBS",
        "SNN_NO_BUILD",
        "MESON",
        "NINJA",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let windows = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows");
    // Whether OpenBLAS is linked with the archive: None asks pkg-config.
    let mut openblas = None;
    let dirs = match env::var("SNN_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => vec![dir],
        _ if pkg_config_knows("snn") => pkg_config_dirs("snn"),
        _ => {
            if env::var("SNN_NO_BUILD").is_ok_and(|v| !v.is_empty() && v != "0") {
                fail("SNN_NO_BUILD is set");
            }
            if env::var("TARGET").ok() != env::var("HOST").ok() {
                fail("a cross build does not build libsnn (set SNN_LIB_DIR to a cross-built snn)");
            }
            let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
            let Some(src) = source_tree(&manifest_dir) else {
                fail("snn's sources are neither bundled in this package (native/) nor around it")
            };
            for part in ["meson.build", "meson_options.txt", "include", "lib"] {
                println!("cargo:rerun-if-changed={}", src.join(part).display());
            }
            println!(
                "cargo:warning=snn-sys: building libsnn from {} with Meson (SNN_LIB_DIR is not set, pkg-config knows no snn)",
                src.display()
            );
            match build_from_source(&src) {
                Ok((dir, with_openblas)) => {
                    openblas = Some(with_openblas);
                    vec![dir.display().to_string()]
                }
                Err(why) => fail(&why),
            }
        }
    };
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
            } else if openblas.unwrap_or_else(|| pkg_config_knows("openblas")) {
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
                println!("cargo:rpath={}", dirs.join(":"));
            }
            println!("cargo:rustc-link-lib=dylib=snn");
        }
    }
    if let Some(dir) = dirs.first() {
        println!("cargo:root={dir}");
    }
}
