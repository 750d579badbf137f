//! Build script: links Windows' advapi32 into the host's executables when cross-building for Windows
//! with mingw-w64.
//!
//! LMDB's Windows code calls advapi32's security functions (`InitializeSecurityDescriptor`,
//! `SetSecurityDescriptorDacl`). The lmdb-master-sys crate links advapi32 only when the machine running
//! the build is Windows (its build script checks its own `cfg`, which is the build machine's), so a
//! cross-build from Linux fails at the link. This keys on the target instead.
//!
//! It is a link argument, not `rustc-link-lib`: a library named by this crate goes on the linker's
//! command line before LMDB's archive, and GNU ld only takes from a library the symbols wanted by
//! what came before it, so the unit tests' link (where nothing of this crate calls advapi32 itself)
//! still failed. A link argument goes after every archive, and applies to every executable of the
//! package (the binary, the tests, the benchmark). Only the GNU target needs it: MSVC builds run on
//! Windows, where lmdb-master-sys links advapi32 already, and MSVC's linker spells it differently.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = |name: &str| std::env::var(name).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "windows" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg=-ladvapi32");
    }
}
