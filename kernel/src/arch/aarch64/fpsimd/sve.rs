//! SVE: vector-length control (ZCR_EL1) and discovery.

use crate::arch::aarch64::sysreg::ZCR_EL1;
use svelt_abi::vl::{self, VlSet};
use tock_registers::interfaces::Writeable;

/// Current effective SVE vector length in bytes (RDVL).
///
/// Requires CPACR_EL1.ZEN and FPEN to let EL1 execute SVE instructions.
pub fn rdvl() -> u32 {
    let vl: u64;
    // SAFETY: RDVL writes only a general-purpose register; EL1 SVE access is enabled by the caller.
    unsafe {
        core::arch::asm!(".arch_extension sve", "rdvl {}, #1", out(reg) vl, options(nomem, nostack))
    };
    vl as u32
}

/// Every SVE vector length this CPU implements (within any cap EL2/EL3 imposes). Leaves ZCR_EL1
/// at the largest.
pub fn probe_vls() -> VlSet {
    let set = vl::probe(|len| {
        ZCR_EL1.set(len as u64); // ZCR writes are self-synchronising
        rdvl()
    });
    ZCR_EL1.set(0x1ff);
    set
}
