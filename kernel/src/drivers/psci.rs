//! PSCI (Power State Coordination Interface) calls through the conduit the DTB names.

use crate::arch::smccc;
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
    let c = match conduit() {
        Conduit::Hvc => smccc::Conduit::Hvc,
        Conduit::Smc => smccc::Conduit::Smc,
        Conduit::None => return None,
    };
    // SAFETY: only PSCI functions come here: VERSION has no effect, CPU_ON starts a CPU at an
    // entry point prepared for it, SYSTEM_OFF ends the run.
    Some(unsafe { smccc::call(c, fid, a1, a2, a3) } as i64)
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
