//! SMC Calling Convention: a call into firmware through HVC (to EL2) or SMC (to EL3).

/// Which instruction reaches the firmware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    Hvc,
    Smc,
}

/// Calls function `fid` with arguments x1..x3; returns x0.
///
/// # Safety
/// The function may change machine state (power a CPU on, switch the machine off): the caller
/// states why that is sound for the call it makes.
pub unsafe fn call(conduit: Conduit, fid: u64, a1: u64, a2: u64, a3: u64) -> u64 {
    let mut r0 = fid;
    match conduit {
        // SAFETY: the caller vouches for the function it calls (this function's contract); SMCCC
        // 1.0 lets the callee clobber x0-x17 and nothing else, which the operands declare.
        Conduit::Hvc => unsafe {
            core::arch::asm!("hvc #0", inout("x0") r0, inout("x1") a1 => _, inout("x2") a2 => _,
                inout("x3") a3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
        // SAFETY: as for HVC: the same convention, one exception level further up.
        Conduit::Smc => unsafe {
            core::arch::asm!("smc #0", inout("x0") r0, inout("x1") a1 => _, inout("x2") a2 => _,
                inout("x3") a3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
    }
    r0
}
