//! Build script: links Windows' advapi32 into the host when the target is Windows.
//!
//! LMDB's Windows code calls advapi32's security functions (`InitializeSecurityDescriptor` and
//! friends). The lmdb-master-sys crate links advapi32 only when the machine running the build is
//! Windows (it checks `cfg!(windows)` in its own build script, which runs on the build machine), so a
//! cross-build from Linux with mingw-w64 fails at the link. Keying on `CARGO_CFG_TARGET_OS`, the
//! target's OS, links it for every Windows build, native or cross; a second request for a library the
//! linker already has is harmless.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows") {
        println!("cargo:rustc-link-lib=advapi32");
    }
}
