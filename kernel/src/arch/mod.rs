//! Architecture code: the floor everything else stands on. Svelt is AArch64-only; the modules
//! below are re-exported here so the rest of the kernel names `crate::arch::cpu`,
//! `crate::arch::exception`, ... and never the architecture's own directory. Every `asm!`,
//! system register and exception vector is inside it, and it calls up only through `aarch64/entry.rs`, which the
//! kernel implements (kernel/src/entry.rs).
mod aarch64;

pub use aarch64::{
    boot, context, cpu, debug, efi, el, exception, fpsimd, gcs, guest, guest32, guest_debug,
    guest_pmu, guest_s1, mem, mmu, semihosting, smccc, sysreg, uaccess,
};
