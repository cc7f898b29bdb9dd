//! The exception level the kernel runs at, and the few registers that differ between the two.
//!
//! Entered at EL2 on a CPU with FEAT_VHE, head.s keeps the kernel at EL2 with HCR_EL2.E2H and
//! TGE set (unless the command line says `svelt.el=1`); otherwise the kernel runs at EL1. With
//! E2H, the EL1 register names used everywhere (SCTLR, TTBR0/1, TCR, MAIR, VBAR, ESR, FAR, ELR,
//! SPSR, CPACR, ZCR, SMCR, CNTKCTL, CONTEXTIDR, TCR2, PIR, GCSCR, GCSPR) reach their EL2
//! counterparts, TLBI ...E1 operations act on the EL2&0 regime and LDTR/STTR stay unprivileged,
//! so the rest of the kernel is the same code at either level.
//!
//! Registers without that redirection are reached with [`mrs_el!`] and [`msr_el!`]: each names
//! the register to use at EL1 and the one to use at EL2, and lists its instruction in the
//! `.svelt.el2_patch` section, which head.s rewrites once (`el2_patch`) on the boot CPU when it
//! stays at EL2. Neither level pays a test or a branch for the choice.

/// Reads `$el1` in a kernel at EL1 and `$el2` in a kernel at EL2 (generic register names, so
/// they assemble without target features).
macro_rules! mrs_el {
    ($el1:literal, $el2:literal) => {{
        let v: u64;
        // SAFETY: reads a register the kernel owns on this CPU (the caller's choice of
        // register); reading it has no side effects. The patch entry only records where the
        // instruction is and what it becomes at EL2.
        unsafe {
            core::arch::asm!(
                concat!("8: mrs {v}, ", $el1),
                ".pushsection .svelt.el2_patch, \"a\"",
                ".balign 4",
                ".long 8b - .",
                concat!("mrs xzr, ", $el2),
                ".popsection",
                v = out(reg) v,
                options(nomem, nostack, preserves_flags),
            )
        };
        v
    }};
}

/// Writes `$v` to `$el1` in a kernel at EL1 and to `$el2` in a kernel at EL2.
macro_rules! msr_el {
    ($el1:literal, $el2:literal, $v:expr) => {{
        let v: u64 = $v;
        // SAFETY: writes a register the caller owns on this CPU (per-CPU pointer, the kernel's
        // timer); no memory or translation changes.
        unsafe {
            core::arch::asm!(
                concat!("8: msr ", $el1, ", {v}"),
                ".pushsection .svelt.el2_patch, \"a\"",
                ".balign 4",
                ".long 8b - .",
                concat!("msr ", $el2, ", xzr"),
                ".popsection",
                v = in(reg) v,
                options(nomem, nostack, preserves_flags),
            )
        };
    }};
}

pub(in crate::arch) use {mrs_el, msr_el};

/// The exception level the kernel runs at: 2 (VHE) or 1.
pub fn kernel_el() -> u64 {
    let v: u64;
    // SAFETY: reading CurrentEL has no side effects.
    unsafe { core::arch::asm!("mrs {}, CurrentEL", out(reg) v, options(nomem, nostack)) };
    (v >> 2) & 3
}

/// Whether the kernel runs at EL2 with VHE.
pub fn vhe() -> bool {
    kernel_el() == 2
}
