//! Links the kernel with the workspace's linker.ld (Linux Image header first), and builds in
//! the archive `SVELT_EMBED_ARCHIVE` names (an initramfs: newc cpio, plain or gzip) for the
//! self-checking image; without the variable the built-in archive is empty.
use std::path::{Path, PathBuf};

fn main() {
    let ld = Path::new(env!("CARGO_MANIFEST_DIR")).join("../linker.ld");
    println!("cargo:rerun-if-changed={}", ld.display());
    println!("cargo:rerun-if-changed=../boot");
    println!("cargo:rustc-link-arg-bins=-T{}", ld.display());

    println!("cargo:rerun-if-env-changed=SVELT_EMBED_ARCHIVE");
    let archive = match std::env::var_os("SVELT_EMBED_ARCHIVE") {
        Some(path) if !path.is_empty() => {
            let path = PathBuf::from(path);
            println!("cargo:rerun-if-changed={}", path.display());
            std::fs::read(&path).unwrap_or_else(|e| {
                panic!("SVELT_EMBED_ARCHIVE={}: {e}", path.display());
            })
        }
        _ => Vec::new(),
    };
    // Written only when it differs, so that an unchanged archive rebuilds nothing.
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("embedded-archive");
    if std::fs::read(&out).ok().as_ref() != Some(&archive) {
        std::fs::write(&out, &archive).unwrap();
    }
}
