//! AArch64: the only home of `asm!`, system registers and exception vectors. Nothing here names
//! a module above arch/: the way up is `entry`.
//!
//! - `boot`: the Image header, EL2 set-up, early page tables (boot/head.s) and the stacks.
//! - `cpu`: per-CPU identity, interrupt masking, idle, cache maintenance.
//! - `debug`: single step, hardware breakpoints and watchpoints for EL0.
//! - `efi`: the EFI stub's exit into the Image (caches cleaned, MMU off).
//! - `el`: the EL the kernel runs at (EL2 with VHE, or EL1) and the registers that differ.
//! - `entry`: the kernel functions this floor calls (boot, exceptions, new tasks): its only
//!   way up.
//! - `exception`: vectors, trap frame, dispatch, fault reports and backtraces.
//! - `fpsimd`: FP/SVE/SME primitives, one file per extension.
//! - `guest`: the world switch into a guest at EL1 and back (a kernel at EL2).
//! - `guest32`: a 32-bit guest's AArch32-only registers.
//! - `guest_pmu`: a guest's PMU state on the CPU's counters.
//! - `guest_s1`: a guest's TCR2, permission indirection and overlay registers.
//! - `mmu`: the kernel's page tables.
//! - `semihosting`: the Arm semihosting calls QEMU's harness uses.
//! - `smccc`: calls into firmware (PSCI) through HVC or SMC.
//! - `sysreg`: system registers aarch64-cpu lacks.
//! - `uaccess`: loads and stores to user memory (LDTR/STTR) with their exception fixups.
/// A system register read and write by name, for the world switch and the guest state it moves
/// (`guest*`), which run with interrupts masked and put the host's values back before they are
/// unmasked.
macro_rules! rd {
    ($enc:literal) => {{
        let v: u64;
        // SAFETY: reading a system register has no side effects.
        unsafe { core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) v, options(nomem, nostack)) };
        v
    }};
}

macro_rules! wr {
    ($enc:literal, $v:expr) => {{
        let v: u64 = $v;
        // SAFETY: an EL2 control or a register the guest owns, written by the world switch with
        // interrupts masked; the host's value is back before they are unmasked, and the host's
        // own translation and counting use none of them meanwhile.
        unsafe { core::arch::asm!(concat!("msr ", $enc, ", {}"), in(reg) v, options(nomem, nostack)) };
    }};
}

pub mod boot;
pub mod context;
pub mod cpu;
pub mod debug;
pub mod efi;
pub mod el;
pub mod entry;
pub mod exception;
pub mod fpsimd;
pub mod gcs;
pub mod guest;
pub mod guest32;
pub mod guest_debug;
pub mod guest_pmu;
pub mod guest_s1;
pub mod mem;
pub mod mmu;
pub mod semihosting;
pub mod smccc;
pub mod sysreg;
pub mod uaccess;
