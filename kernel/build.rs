//! Links the kernel with the workspace's linker.ld (Linux Image header first).
fn main() {
    let ld = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../linker.ld");
    println!("cargo:rerun-if-changed={}", ld.display());
    println!("cargo:rerun-if-changed=../boot");
    println!("cargo:rustc-link-arg-bins=-T{}", ld.display());
}
