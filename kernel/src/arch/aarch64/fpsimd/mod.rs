//! FP/SIMD, SVE and SME primitives: the only kernel code that touches vector state.
//! One file per extension. They configure access, find the implemented vector lengths and save
//! and load registers; when to do which is decided by abi::fp::fpstate and carried out by
//! kernel/src/task/fpstate/.

// One file per extension: fpsimd, sve, sme.
#[allow(clippy::module_inception)]
pub mod fpsimd;
pub mod sme;
pub mod sve;

use super::sysreg::{CPACR, CPACR_EL1};
use tock_registers::interfaces::ReadWriteable;

/// Lets EL1 use FP, SVE and SME (EL0 SVE/SME still trap, to be enabled per task on first use).
/// The kernel itself is built soft-float, so only these primitives execute vector instructions.
pub fn enable_el1_access(sve: bool, sme: bool) {
    CPACR_EL1.modify(CPACR::FPEN::TrapNone);
    if sve {
        CPACR_EL1.modify(CPACR::ZEN::TrapEl0);
    }
    if sme {
        CPACR_EL1.modify(CPACR::SMEN::TrapEl0);
    }
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}
