//! SME: streaming vector-length control (SMCR_EL1) and discovery.

use crate::arch::aarch64::sysreg::{SMCR, SMCR_EL1, SMPRI_EL1};
use svelt_abi::vl::{self, VlSet};
use tock_registers::interfaces::{ReadWriteable, Writeable};

/// Current streaming vector length in bytes (RDSVL works outside streaming mode).
///
/// Requires CPACR_EL1.SMEN to let EL1 execute SME instructions.
pub fn rdsvl() -> u32 {
    let vl: u64;
    // SAFETY: RDSVL writes only a general-purpose register; EL1 SME access is enabled by the caller.
    unsafe {
        core::arch::asm!(".arch_extension sme", "rdsvl {}, #1", out(reg) vl, options(nomem, nostack))
    };
    vl as u32
}

/// Boot-time SME configuration of this CPU: priority 0, FA64 and ZT0 access when implemented.
pub fn cpu_init(fa64: bool, sme2: bool) {
    SMPRI_EL1.set(0);
    SMCR_EL1
        .write(SMCR::FA64.val(fa64 as u64) + SMCR::EZT0.val(sme2 as u64) + SMCR::LEN.val(0x1ff));
}

/// Every streaming vector length this CPU implements. Leaves SMCR_EL1.LEN at the largest.
pub fn probe_vls() -> VlSet {
    let set = vl::probe(|len| {
        SMCR_EL1.modify(SMCR::LEN.val(len as u64));
        rdsvl()
    });
    SMCR_EL1.modify(SMCR::LEN.val(0x1ff));
    set
}
