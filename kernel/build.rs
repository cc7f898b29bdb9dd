//! Links the kernel with the workspace's linker.ld (Linux Image header first), and builds in
//! the archive `SVELT_EMBED_ARCHIVE` names (an initramfs: newc cpio, plain or gzip) for the
//! self-checking image; without the variable the built-in archive is empty. Also builds the
//! vDSO (kernel/vdso/) from source: rustc assembles it for aarch64-unknown-none, rust-lld links
//! it as a shared object, and the kernel includes the result (see kernel/src/vdso.rs).
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let ld = Path::new(env!("CARGO_MANIFEST_DIR")).join("../linker.ld");
    println!("cargo:rerun-if-changed={}", ld.display());
    println!("cargo:rerun-if-changed=../boot");
    println!("cargo:rustc-link-arg-bins=-T{}", ld.display());
    build_vdso();

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

/// Builds `$OUT_DIR/vdso.so` and `$OUT_DIR/vdso_syms.rs` (the offsets the kernel needs).
fn build_vdso() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vdso");
    println!("cargo:rerun-if-changed={}", dir.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let obj = out.join("vdso.o");
    run(Command::new(&rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--crate-name",
            "svelt_vdso",
        ])
        .args([
            "--target",
            "aarch64-unknown-none",
            "-C",
            "relocation-model=pic",
        ])
        .args([
            "-C",
            "opt-level=2",
            "-C",
            "panic=abort",
            "-C",
            "debuginfo=0",
        ])
        .arg("--emit")
        .arg(format!("obj={}", obj.display()))
        .arg(dir.join("vdso.rs")));
    // rust-lld ships with rustc, beside the host's other tools in the sysroot.
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let sysroot = String::from_utf8(sysroot.stdout).unwrap();
    let host = std::env::var("HOST").unwrap();
    let lld = Path::new(sysroot.trim()).join(format!("lib/rustlib/{host}/bin/rust-lld"));
    let so = out.join("vdso.so");
    run(Command::new(&lld)
        .args(["-flavor", "gnu", "-shared", "-Bsymbolic", "--no-undefined"])
        .args([
            "-soname",
            "linux-vdso.so.1",
            "--hash-style=both",
            "--eh-frame-hdr",
        ])
        .args([
            "--build-id=sha1",
            "-z",
            "max-page-size=4096",
            "-z",
            "noexecstack",
        ])
        .arg(format!("-T{}", dir.join("vdso.lds").display()))
        .arg(&obj)
        .arg("-o")
        .arg(&so));
    let image = std::fs::read(&so).unwrap();
    let sigreturn = check_vdso(&image).unwrap_or_else(|e| panic!("{}: {e}", so.display()));
    let syms = format!(
        "/// Offset of `__kernel_rt_sigreturn` in the vDSO image.\n\
         pub const RT_SIGRETURN: usize = {sigreturn:#x};\n"
    );
    let path = out.join("vdso_syms.rs");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(&syms) {
        std::fs::write(&path, syms).unwrap();
    }
}

fn run(cmd: &mut Command) {
    let st = cmd.status().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(st.success(), "{cmd:?}: {st}");
}

/// Checks what the kernel relies on (an AArch64 shared object loaded at 0 that needs no
/// relocation) and returns the offset of `__kernel_rt_sigreturn`.
fn check_vdso(e: &[u8]) -> Result<usize, String> {
    let u16_at = |o: usize| u16::from_le_bytes(e[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(e[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(e[o..o + 8].try_into().unwrap()) as usize;
    if e.get(..4) != Some(b"\x7fELF") || u16_at(16) != 3 || u16_at(18) != 183 {
        return Err("not an AArch64 ET_DYN".into());
    }
    let (phoff, phnum) = (u64_at(32), u16_at(56));
    for i in 0..phnum {
        let p = phoff + i * 56;
        if u32_at(p) == 1 && u64_at(p + 16) != 0 {
            return Err("PT_LOAD not at address 0".into());
        }
    }
    let (shoff, shnum) = (u64_at(40), u16_at(60));
    let sh = |i: usize| shoff + i * 64;
    let mut found = None;
    for i in 0..shnum {
        let s = sh(i);
        match u32_at(s + 4) {
            // SHT_RELA, SHT_REL, SHT_RELR: the kernel maps the image as it is.
            4 | 9 | 19 => return Err("the vDSO has relocations".into()),
            // SHT_DYNSYM: find __kernel_rt_sigreturn.
            11 => {
                let (off, size) = (u64_at(s + 24), u64_at(s + 32));
                let strtab = u64_at(sh(u32_at(s + 40)) + 24);
                for sym in (off..off + size).step_by(24) {
                    let name = &e[strtab + u32_at(sym)..];
                    let name = &name[..name.iter().position(|&b| b == 0).unwrap()];
                    if name == b"__kernel_rt_sigreturn" {
                        found = Some(u64_at(sym + 8));
                    }
                }
            }
            _ => {}
        }
    }
    found.ok_or_else(|| "no __kernel_rt_sigreturn".into())
}
