//! Svelt's vDSO: the code, in vdso.s, assembled by rustc for aarch64-unknown-none and linked
//! as a shared object by kernel/build.rs with vdso.lds. No Rust code: only the assembly and the
//! layout constants it shares with the kernel.
#![no_std]

#[allow(dead_code)]
mod layout {
    include!("layout.rs");
}
use layout::*;

core::arch::global_asm!(
    include_str!("vdso.s"),
    VVAR_SEQ = const VVAR_SEQ,
    VVAR_SHIFT = const VVAR_SHIFT,
    VVAR_OFFSET = const VVAR_OFFSET,
    VVAR_MULT = const VVAR_MULT,
    VVAR_RES = const VVAR_RES,
    VVAR_TZ = const VVAR_TZ,
    CLOCK_IDS = const CLOCK_IDS,
    KIND_MONO = const KIND_MONO,
    KIND_REAL = const KIND_REAL,
    NR_GETTIME = const 113,
    NR_GETRES = const 114,
    NR_RT_SIGRETURN = const 139,
);
