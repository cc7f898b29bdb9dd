//! Exceptions the kernel takes on purpose: the panic handler's BRK (so a panic gets the same
//! register dump and backtrace as a fault) and the failure-report self tests. None returns.

/// BRK #0x800 at EL1: the exception path reports this CPU's registers and a backtrace from the
/// caller, then ends the run with the kernel-bug status.
pub fn report_here() {
    // SAFETY: the vectors are installed before any Rust code runs; the exception is fatal.
    unsafe { core::arch::asm!("brk #0x800", options(nostack)) };
}

/// An undefined instruction at EL1.
pub fn undefined_instruction() {
    // SAFETY: deliberately undefined; the exception is fatal.
    unsafe { core::arch::asm!("udf #0x5e1f", options(nostack)) };
}

/// Branches to `va` (an instruction abort if it is not executable).
///
/// # Safety
/// Whatever runs at `va` runs as kernel code; the caller means it to fault.
pub unsafe fn branch_to(va: usize) {
    // SAFETY: the caller wants whatever is at `va` run as kernel code (to fault, here); x30 is
    // declared clobbered and nothing else is touched by the branch itself.
    unsafe { core::arch::asm!("blr {}", in(reg) va, out("x30") _, options(nostack)) };
}

/// HVC #0x5e1f: lands in EL2's report-and-halt vectors when the kernel was entered at EL2.
pub fn hvc_to_el2() {
    // SAFETY: nothing runs at EL2 but the report-and-halt vectors, which stop the machine.
    unsafe { core::arch::asm!("hvc #0x5e1f", options(nostack)) };
}
