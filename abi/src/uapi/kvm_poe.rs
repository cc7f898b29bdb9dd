//! The stage-1 extensions a guest is given where the CPU has them, as Linux 7.3's KVM gives
//! them: TCR2_EL1 (FEAT_TCR2, ID_AA64MMFR3_EL1.TCRX), permission indirection (FEAT_S1PIE:
//! PIR_EL1, PIRE0_EL1) and permission overlays (FEAT_S1POE: POR_EL1, POR_EL0). Each shows in
//! the VM's ID_AA64MMFR3_EL1 (a VMM may lower the field to 0 before the first run) and its
//! registers exist for the VM (ONE_REG, the reg list, the guest's accesses) exactly while it
//! does: sys_regs.c's tcr2_visibility, s1pie_visibility and s1poe_visibility, and config.c's
//! trap setup (HCRX_EL2.TCR2En; HFGRTR_EL2/HFGWTR_EL2's nPIR/nPIRE0 and nPOR bits).
//!
//! SCTLR2_EL1 (FEAT_SCTLR2, ID_AA64MMFR3_EL1.SCTLRX) follows the same rules (sys_regs.c's
//! sctlr2_visibility, config.c's HCRX_EL2.SCTLR2En), though it is no stage-1 register.
//!
//! GCS is not among them: Linux 7.3 hides ID_AA64PFR1_EL1.GCS from every VM
//! (sanitise_id_aa64pfr1_el1) and has no GCS registers in its table.

use super::kvm::sysreg_id;

/// ID_AA64MMFR3_EL1's TCRX, S1PIE and S1POE fields.
pub const MMFR3_TCRX: u64 = 0xf;
pub const MMFR3_S1PIE: u64 = 0xf << 8;
pub const MMFR3_S1POE: u64 = 0xf << 16;
/// ID_AA64MMFR3_EL1.SCTLRX (FEAT_SCTLR2).
pub const MMFR3_SCTLRX: u64 = 0xf << 4;
/// The ID_AA64MMFR3_EL1 fields a VM is shown (where the CPU has them).
pub const MMFR3_GIVEN: u64 = MMFR3_TCRX | MMFR3_S1PIE | MMFR3_S1POE | MMFR3_SCTLRX;

/// The registers' KVM_{GET,SET}_ONE_REG IDs.
pub const SCTLR2_EL1: u64 = sysreg_id(3, 0, 1, 0, 3);
pub const TCR2_EL1: u64 = sysreg_id(3, 0, 2, 0, 3);
pub const PIRE0_EL1: u64 = sysreg_id(3, 0, 10, 2, 2);
pub const PIR_EL1: u64 = sysreg_id(3, 0, 10, 2, 3);
pub const POR_EL1: u64 = sysreg_id(3, 0, 10, 2, 4);
pub const POR_EL0: u64 = sysreg_id(3, 3, 10, 2, 4);

/// HCRX_EL2.TCR2En: EL1's TCR2_EL1 accesses do not trap.
pub const HCRX_TCR2EN: u64 = 1 << 14;
/// HCRX_EL2.SCTLR2En: EL1's SCTLR2_EL1 accesses do not trap.
pub const HCRX_SCTLR2EN: u64 = 1 << 15;
/// HFGRTR_EL2's and HFGWTR_EL2's nPOR_EL1 (60), nPOR_EL0 (59), nPIR_EL1 (58) and nPIRE0_EL1
/// (57): clear, the guest's accesses to those registers trap to EL2.
pub const FGT_NPOR: u64 = 3 << 59;
pub const FGT_NPIR: u64 = 3 << 57;

/// Which of the three a VM has, from its ID_AA64MMFR3_EL1 (and the CPU's: a VM never shows
/// more than the CPU has, so the VM's value decides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct S1Ext {
    pub tcr2: bool,
    pub pie: bool,
    pub poe: bool,
    pub sctlr2: bool,
}

impl S1Ext {
    pub fn of(mmfr3: u64) -> S1Ext {
        S1Ext {
            tcr2: mmfr3 & MMFR3_TCRX != 0,
            pie: mmfr3 & MMFR3_S1PIE != 0,
            poe: mmfr3 & MMFR3_S1POE != 0,
            sctlr2: mmfr3 & MMFR3_SCTLRX != 0,
        }
    }

    /// Any register to switch for the guest.
    pub fn any(self) -> bool {
        self.tcr2 || self.pie || self.poe || self.sctlr2
    }

    /// The IDs the VM has, in KVM_GET_REG_LIST's (ascending) order.
    pub fn ids(self) -> impl Iterator<Item = u64> {
        [
            (self.sctlr2, SCTLR2_EL1),
            (self.tcr2, TCR2_EL1),
            (self.pie, PIRE0_EL1),
            (self.pie, PIR_EL1),
            (self.poe, POR_EL1),
            (self.poe, POR_EL0),
        ]
        .into_iter()
        .filter_map(|(has, id)| has.then_some(id))
    }

    /// Whether `id` is one of the five IDs and the VM has it: `None` for another ID.
    pub fn has_id(self, id: u64) -> Option<bool> {
        match id {
            SCTLR2_EL1 => Some(self.sctlr2),
            TCR2_EL1 => Some(self.tcr2),
            PIRE0_EL1 | PIR_EL1 => Some(self.pie),
            POR_EL1 | POR_EL0 => Some(self.poe),
            _ => None,
        }
    }

    /// HCRX_EL2 bits the guest runs with (Linux's kvm_calculate_traps: TCR2En with FEAT_TCR2,
    /// SCTLR2En with FEAT_SCTLR2).
    pub fn hcrx(self) -> u64 {
        let mut v = 0;
        if self.tcr2 {
            v |= HCRX_TCR2EN;
        }
        if self.sctlr2 {
            v |= HCRX_SCTLR2EN;
        }
        v
    }

    /// HFGRTR_EL2/HFGWTR_EL2 "n" bits to clear for the guest: those of a feature the CPU has
    /// (`host`, from the CPU's ID_AA64MMFR3_EL1) and the VM does not, so that its accesses
    /// trap and are made UNDEFINED; 0 without FEAT_FGT.
    pub fn fgt_clear(self, has_fgt: bool, host: S1Ext) -> u64 {
        let mut v = 0;
        if has_fgt && host.pie && !self.pie {
            v |= FGT_NPIR;
        }
        if has_fgt && host.poe && !self.poe {
            v |= FGT_NPOR;
        }
        v
    }
}

/// Whether a trapped system register access (its op0..op2 packed as in the ESR-derived key
/// `op0 << 14 | op1 << 11 | crn << 7 | crm << 3 | op2`) is to one of the six registers.
pub fn is_s1ext_key(key: u32) -> bool {
    [SCTLR2_EL1, TCR2_EL1, PIRE0_EL1, PIR_EL1, POR_EL1, POR_EL0]
        .iter()
        .any(|&id| id & 0xffff == u64::from(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    #[test]
    fn registers_follow_the_id_fields() {
        let all = S1Ext::of(MMFR3_GIVEN);
        assert_eq!(
            all.ids().collect::<Vec<_>>(),
            [SCTLR2_EL1, TCR2_EL1, PIRE0_EL1, PIR_EL1, POR_EL1, POR_EL0]
        );
        let tcr2 = S1Ext::of(1);
        assert_eq!(tcr2.ids().collect::<Vec<_>>(), [TCR2_EL1]);
        assert_eq!(tcr2.has_id(POR_EL0), Some(false));
        assert_eq!(tcr2.has_id(TCR2_EL1), Some(true));
        assert_eq!(tcr2.has_id(sysreg_id(3, 0, 1, 0, 0)), None);
        assert_eq!(S1Ext::of(0).ids().count(), 0);
        assert!(!S1Ext::of(0xf << 12).any());
        assert_eq!(S1Ext::of(1 << 4).ids().collect::<Vec<_>>(), [SCTLR2_EL1]);
        assert_eq!(S1Ext::of(1 << 4).hcrx(), HCRX_SCTLR2EN);
    }

    #[test]
    fn traps_only_what_the_cpu_has_and_the_vm_hides() {
        let host = S1Ext::of(MMFR3_GIVEN);
        assert_eq!(host.fgt_clear(true, host), 0);
        assert_eq!(S1Ext::of(1).fgt_clear(true, host), FGT_NPIR | FGT_NPOR);
        assert_eq!(S1Ext::of(1).fgt_clear(false, host), 0);
        assert_eq!(S1Ext::of(0).fgt_clear(true, S1Ext::of(1)), 0);
        assert_eq!(S1Ext::of(1).hcrx(), HCRX_TCR2EN);
        assert_eq!(S1Ext::of(MMFR3_S1POE).hcrx(), 0);
    }

    #[test]
    fn trapped_keys() {
        let key = |op0: u32, op1: u32, crn: u32, crm: u32, op2: u32| {
            (op0 << 14) | (op1 << 11) | (crn << 7) | (crm << 3) | op2
        };
        assert!(is_s1ext_key(key(3, 0, 2, 0, 3)));
        assert!(is_s1ext_key(key(3, 0, 1, 0, 3)));
        assert!(is_s1ext_key(key(3, 3, 10, 2, 4)));
        assert!(!is_s1ext_key(key(3, 0, 2, 0, 2)));
    }
}
