//! Where snn-sys linked `libsnn.so` (not the static archive), its directory
//! goes into the rpath of this crate's tests, examples and doctests too.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_SNN_RPATH");
    if let Ok(dirs) = std::env::var("DEP_SNN_RPATH") {
        for dir in dirs.split(':').filter(|dir| !dir.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
