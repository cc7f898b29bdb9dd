//! PSCI (Power State Coordination Interface) calls through the conduit the DTB names.

use core::sync::atomic::{AtomicU8, Ordering};

const CPU_ON: u64 = 0xc400_0003;
const SYSTEM_OFF: u64 = 0x8400_0008;
const PSCI_VERSION: u64 = 0x8400_0000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conduit {
    None = 0,
    Hvc = 1,
    Smc = 2,
}

static CONDUIT: AtomicU8 = AtomicU8::new(Conduit::None as u8);

pub fn set_conduit(method: &str) {
    let c = match method {
        "hvc" => Conduit::Hvc,
        "smc" => Conduit::Smc,
        _ => Conduit::None,
    };
    CONDUIT.store(c as u8, Ordering::Relaxed);
}

pub fn conduit() -> Conduit {
    match CONDUIT.load(Ordering::Relaxed) {
        1 => Conduit::Hvc,
        2 => Conduit::Smc,
        _ => Conduit::None,
    }
}

fn call(fid: u64, a1: u64, a2: u64, a3: u64) -> Option<i64> {
    let mut r0 = fid;
    match conduit() {
        // SAFETY: an SMCCC call into firmware (or QEMU's PSCI emulation); x0-x3 are the
        // arguments, x0 the result, and SMCCC 1.0 lets the callee clobber x0-x17.
        Conduit::Hvc => unsafe {
            core::arch::asm!("hvc #0", inout("x0") r0, inout("x1") a1 => _, inout("x2") a2 => _,
                inout("x3") a3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
        // SAFETY: as above.
        Conduit::Smc => unsafe {
            core::arch::asm!("smc #0", inout("x0") r0, inout("x1") a1 => _, inout("x2") a2 => _,
                inout("x3") a3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
        Conduit::None => return None,
    }
    Some(r0 as i64)
}

/// PSCI version as (major, minor).
pub fn version() -> Option<(u16, u16)> {
    call(PSCI_VERSION, 0, 0, 0).map(|v| ((v >> 16) as u16, v as u16))
}

/// Starts the CPU `mpidr` at physical address `entry` with x0 = `context`. Returns the PSCI status
/// (0 on success).
pub fn cpu_on(mpidr: u64, entry: u64, context: u64) -> i64 {
    call(CPU_ON, mpidr, entry, context).unwrap_or(-1)
}

/// Powers the machine off; returns only if the firmware refused or there is no PSCI.
pub fn system_off() {
    let _ = call(SYSTEM_OFF, 0, 0, 0);
}
