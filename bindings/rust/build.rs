//! Finds libsnn: the directory in `SNN_LIB_DIR`, else the `-L` directories that
//! `pkg-config --libs-only-L snn` prints, else the linker's default search path.
//! Each directory found is also written into the binaries' rpath, so tests,
//! examples and doctests run without LD_LIBRARY_PATH, and exposed to crates
//! that depend on this one as `DEP_SNN_ROOT`.

use std::env;
use std::process::Command;

fn pkg_config_dirs() -> Vec<String> {
    let output = match Command::new("pkg-config").args(["--libs-only-L", "snn"]).output() {
        Ok(output) if output.status.success() => output,
        _ => return Vec::new(),
    };
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(str::to_owned)
        .collect()
}

fn main() {
    println!("cargo:rerun-if-env-changed=SNN_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dirs = match env::var("SNN_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => vec![dir],
        _ => pkg_config_dirs(),
    };
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
    if let Some(dir) = dirs.first() {
        println!("cargo:root={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=snn");
}
