//! A guest's stage-1 extension registers, moved around its runs only for a VM that has them
//! (`svelt_abi::uapi::kvm_poe`): TCR2_EL1 (FEAT_TCR2), PIR_EL1 and PIRE0_EL1 (FEAT_S1PIE),
//! POR_EL1 and POR_EL0 (FEAT_S1POE), and SCTLR2_EL1 (FEAT_SCTLR2), as Linux's hyp/include/hyp/sysreg-sr.h switches them
//! (the EL1 three nested under TCR2, POR_EL0 with the EL0 state).
//!
//! With E2H the guest's EL1 registers are reached through their `_EL12` names and never
//! overlap the host's (the host's TCR2_EL1, PIR_EL1 and PIRE0_EL1 names reach EL2's). POR_EL0
//! is EL0's and shared, but the host never turns overlays on (its TCR2 has no POE or E0POE),
//! so a guest's value left behind has no effect there, and every VM with POE loads its own
//! while a VM without it traps its accesses.

use svelt_abi::uapi::kvm_poe::S1Ext;

/// The five registers of a vCPU while it is not on a CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct S1Regs {
    pub tcr2: u64,
    pub pire0: u64,
    pub pir: u64,
    pub por_el1: u64,
    pub por_el0: u64,
    pub sctlr2: u64,
}

impl S1Regs {
    /// Loads the registers `ext` says the VM has (world_switch's ISB orders them before the
    /// guest's first instruction).
    pub fn load(&self, ext: S1Ext) {
        if ext.tcr2 {
            wr!("S3_5_C2_C0_3", self.tcr2); // TCR2_EL12
            if ext.pie {
                wr!("S3_5_C10_C2_2", self.pire0); // PIRE0_EL12
                wr!("S3_5_C10_C2_3", self.pir); // PIR_EL12
            }
            if ext.poe {
                wr!("S3_5_C10_C2_4", self.por_el1); // POR_EL12
            }
        }
        if ext.poe {
            wr!("S3_3_C10_C2_4", self.por_el0); // POR_EL0
        }
        if ext.sctlr2 {
            wr!("S3_5_C1_C0_3", self.sctlr2); // SCTLR2_EL12
        }
    }

    /// Reads them back after the guest's exit.
    pub fn save(&mut self, ext: S1Ext) {
        if ext.tcr2 {
            self.tcr2 = rd!("S3_5_C2_C0_3");
            if ext.pie {
                self.pire0 = rd!("S3_5_C10_C2_2");
                self.pir = rd!("S3_5_C10_C2_3");
            }
            if ext.poe {
                self.por_el1 = rd!("S3_5_C10_C2_4");
            }
        }
        if ext.poe {
            self.por_el0 = rd!("S3_3_C10_C2_4");
        }
        if ext.sctlr2 {
            self.sctlr2 = rd!("S3_5_C1_C0_3");
        }
    }
}
