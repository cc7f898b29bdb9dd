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

/// HVC #0x5e1f: lands in EL2's report-and-halt vectors when the kernel was entered at EL2 and
/// runs at EL1, or in the kernel's own vectors (an unexpected exception) when it runs at EL2.
pub fn hvc_to_el2() {
    // SAFETY: either handler reports and stops the machine.
    unsafe { core::arch::asm!("hvc #0x5e1f", options(nostack)) };
}

/// Copies `n` bytes from `src` to `dst` with a CPYF sequence entered at its main instruction,
/// as if its prologue had run on a CPU using option B (`option_b`: registers where the copy
/// stands, PSTATE.C set) or option A (the ends and minus the size, PSTATE.C clear). On a CPU
/// using the other option this raises the memory-copy exception (EC 0x27), which must restart
/// the sequence at its prologue. Only with FEAT_MOPS usable at EL1.
///
/// # Safety
/// `src` and `dst` are valid for `n` bytes and do not overlap.
pub unsafe fn cpyf_from_main(dst: *mut u8, src: *const u8, n: usize, option_b: bool) {
    let (d, s, c) = if option_b {
        (dst as u64, src as u64, n as u64)
    } else {
        (
            dst as u64 + n as u64,
            src as u64 + n as u64,
            (n as u64).wrapping_neg(),
        )
    };
    // SAFETY: the caller's promise on the buffers; the registers are declared changed.
    unsafe {
        core::arch::asm!(
            ".arch_extension mops",
            "cmp {b}, #1",
            "b 2f",
            "cpyfp [{d}]!, [{s}]!, {c}!",
            "2: cpyfm [{d}]!, [{s}]!, {c}!",
            "cpyfe [{d}]!, [{s}]!, {c}!",
            b = in(reg) option_b as u64,
            d = inout(reg) d => _,
            s = inout(reg) s => _,
            c = inout(reg) c => _,
            options(nostack),
        )
    };
}
