//! EL0 reads of the CPU ID registers (HWCAP_CPUID).
//!
//! `MRS Xt, <ID register>` at EL0 traps to EL1: with FEAT_IDST as EC 0x18 (system register
//! access, decoded from the ISS), without it as EC 0x00 (decoded from the instruction word). Like
//! Linux, Svelt answers reads in the ID space op0=3, op1=0, CRn=0, CRm 0 and 2..=7 and refuses
//! everything else (the caller raises SIGILL, ILL_ILLOPC):
//!
//! - CRm 0: MIDR_EL1 reads this CPU's MIDR, MPIDR_EL1 reads a fixed 0x8000_0000 (bit 31 is RES1,
//!   nothing about the topology leaks), REVIDR_EL1 reads 0; other op2 values are refused.
//! - CRm 1 (AArch32 ID_PFR0.. ID_MMFR3) is refused.
//! - CRm 2..=7: each register shows only the fields Linux 7.3 marks visible (cpufeature.c
//!   `arm64_ftr_bits` FTR_VISIBLE and FTR_VISIBLE_IF_IS_ENABLED), the optional ones only when
//!   the kernel handles the feature (`Offer`; SVE, SME, pointer authentication, BTI, MTE, GCS,
//!   POE, and Svelt's own FPMR, LS64 and MOPS conditions). Hidden fields read as the safe value
//!   Linux forces (for example ID_AA64PFR0_EL1.EL0/EL1 = 1, "AArch64 only"), unallocated and
//!   untracked registers read as 0. The hwcaps (`hwcap`) are decided on this same view.
//!
//! Linux shows the system-wide safe value of each visible field (the minimum over all CPUs for
//! most fields); the caller passes registers that are already that, or one CPU's values on a
//! homogeneous system.

use crate::isa::cpu::fields::*;
use crate::isa::cpu::{Field, IdReg, IdRegs};
use crate::isa::esr::{Ec, Esr};
use crate::isa::hwcap::{Needs, Offer, SME_FP8};

/// A system register encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SysReg {
    pub op0: u8,
    pub op1: u8,
    pub crn: u8,
    pub crm: u8,
    pub op2: u8,
}

impl SysReg {
    pub const fn new(op0: u8, op1: u8, crn: u8, crm: u8, op2: u8) -> SysReg {
        SysReg {
            op0,
            op1,
            crn,
            crm,
            op2,
        }
    }

    /// The `MRS Xt, <reg>` instruction word.
    pub const fn mrs(self, rt: u8) -> u32 {
        0xd520_0000
            | ((self.op0 as u32 & 3) << 19)
            | ((self.op1 as u32 & 7) << 16)
            | ((self.crn as u32 & 0xf) << 12)
            | ((self.crm as u32 & 0xf) << 8)
            | ((self.op2 as u32 & 7) << 5)
            | (rt as u32 & 0x1f)
    }
}

pub const MIDR_EL1: SysReg = SysReg::new(3, 0, 0, 0, 0);
pub const MPIDR_EL1: SysReg = SysReg::new(3, 0, 0, 0, 5);
pub const REVIDR_EL1: SysReg = SysReg::new(3, 0, 0, 0, 6);
pub const ID_ISAR5_EL1: SysReg = SysReg::new(3, 0, 0, 2, 5);
pub const ID_ISAR6_EL1: SysReg = SysReg::new(3, 0, 0, 2, 7);
pub const MVFR0_EL1: SysReg = SysReg::new(3, 0, 0, 3, 0);
pub const MVFR1_EL1: SysReg = SysReg::new(3, 0, 0, 3, 1);
pub const ID_PFR2_EL1: SysReg = SysReg::new(3, 0, 0, 3, 4);
pub const ID_AA64PFR0_EL1: SysReg = SysReg::new(3, 0, 0, 4, 0);
pub const ID_AA64PFR1_EL1: SysReg = SysReg::new(3, 0, 0, 4, 1);
pub const ID_AA64PFR2_EL1: SysReg = SysReg::new(3, 0, 0, 4, 2);
pub const ID_AA64ZFR0_EL1: SysReg = SysReg::new(3, 0, 0, 4, 4);
pub const ID_AA64SMFR0_EL1: SysReg = SysReg::new(3, 0, 0, 4, 5);
pub const ID_AA64FPFR0_EL1: SysReg = SysReg::new(3, 0, 0, 4, 7);
pub const ID_AA64DFR0_EL1: SysReg = SysReg::new(3, 0, 0, 5, 0);
pub const ID_AA64DFR1_EL1: SysReg = SysReg::new(3, 0, 0, 5, 1);
pub const ID_AA64AFR0_EL1: SysReg = SysReg::new(3, 0, 0, 5, 4);
pub const ID_AA64AFR1_EL1: SysReg = SysReg::new(3, 0, 0, 5, 5);
pub const ID_AA64ISAR0_EL1: SysReg = SysReg::new(3, 0, 0, 6, 0);
pub const ID_AA64ISAR1_EL1: SysReg = SysReg::new(3, 0, 0, 6, 1);
pub const ID_AA64ISAR2_EL1: SysReg = SysReg::new(3, 0, 0, 6, 2);
pub const ID_AA64ISAR3_EL1: SysReg = SysReg::new(3, 0, 0, 6, 3);
pub const ID_AA64MMFR0_EL1: SysReg = SysReg::new(3, 0, 0, 7, 0);
pub const ID_AA64MMFR1_EL1: SysReg = SysReg::new(3, 0, 0, 7, 1);
pub const ID_AA64MMFR2_EL1: SysReg = SysReg::new(3, 0, 0, 7, 2);
pub const ID_AA64MMFR3_EL1: SysReg = SysReg::new(3, 0, 0, 7, 3);
pub const ID_AA64MMFR4_EL1: SysReg = SysReg::new(3, 0, 0, 7, 4);

/// What EL0 reads from MPIDR_EL1: only the RES1 bit.
pub const SYS_MPIDR_SAFE_VAL: u64 = 1 << 31;

/// A trapped MRS/MSR (EC 0x18), decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysRegAccess {
    pub op0: u8,
    pub op1: u8,
    pub crn: u8,
    pub crm: u8,
    pub op2: u8,
    /// The general register; 31 is XZR (a read into it is discarded).
    pub rt: u8,
    /// MRS (read) rather than MSR (write).
    pub read: bool,
}

impl SysRegAccess {
    /// From the ISS of EC 0x18: Op0 [21:20], Op2 [19:17], Op1 [16:14], CRn [13:10], Rt [9:5],
    /// CRm [4:1], Direction [0] (1 = read).
    pub const fn from_iss(iss: u32) -> SysRegAccess {
        SysRegAccess {
            op0: ((iss >> 20) & 3) as u8,
            op2: ((iss >> 17) & 7) as u8,
            op1: ((iss >> 14) & 7) as u8,
            crn: ((iss >> 10) & 0xf) as u8,
            rt: ((iss >> 5) & 0x1f) as u8,
            crm: ((iss >> 1) & 0xf) as u8,
            read: iss & 1 != 0,
        }
    }

    /// From a whole ESR; `None` unless its class is EC 0x18.
    pub fn from_esr(esr: Esr) -> Option<SysRegAccess> {
        (esr.ec() == Ec::SysReg).then(|| SysRegAccess::from_iss(esr.iss()))
    }

    /// From the instruction word, for CPUs without FEAT_IDST where the read is UNDEFINED
    /// (EC 0x00): `None` unless it is `MRS Xt, <reg>` with op0 2 or 3.
    pub const fn from_mrs_insn(insn: u32) -> Option<SysRegAccess> {
        if insn & 0xfff0_0000 != 0xd530_0000 {
            return None;
        }
        Some(SysRegAccess {
            op0: (2 | ((insn >> 19) & 1)) as u8,
            op1: ((insn >> 16) & 7) as u8,
            crn: ((insn >> 12) & 0xf) as u8,
            crm: ((insn >> 8) & 0xf) as u8,
            op2: ((insn >> 5) & 7) as u8,
            rt: (insn & 0x1f) as u8,
            read: true,
        })
    }

    pub const fn reg(&self) -> SysReg {
        SysReg::new(self.op0, self.op1, self.crn, self.crm, self.op2)
    }
}

/// The value an EL0 `MRS` of this register returns, or `None` when the access must raise
/// SIGILL (writes, registers outside the ID space, or `offer.cpuid` off). On `Some(v)` the caller
/// writes `v` to Xt (unless Rt is 31) and steps over the instruction.
pub fn emulate(access: &SysRegAccess, raw: &IdRegs, offer: Offer) -> Option<u64> {
    if !access.read || !offer.cpuid {
        return None;
    }
    user_value(access.reg(), raw, offer)
}

/// The EL0 view of one ID register, or `None` outside the emulated space.
pub fn user_value(reg: SysReg, raw: &IdRegs, offer: Offer) -> Option<u64> {
    if reg.op0 != 3 || reg.op1 != 0 || reg.crn != 0 {
        return None;
    }
    match reg.crm {
        0 => match reg.op2 {
            0 => Some(raw.midr),
            5 => Some(SYS_MPIDR_SAFE_VAL),
            // IMPLEMENTATION DEFINED, and meaningless without knowing which CPU ran the read.
            6 => Some(0),
            _ => None,
        },
        2..=7 => Some(if let Some(r) = AA64.iter().find(|r| r.reg == reg) {
            r.user_value(raw, offer)
        } else if let Some(r) = AARCH32.iter().find(|r| r.reg == reg) {
            r.user_value(raw)
        } else if reg == ID_AA64DFR0_EL1 {
            DFR0_FIXED
        } else {
            0
        }),
        _ => None,
    }
}

/// The AArch64 ID registers as EL0 reads them (MIDR_EL1 kept; the AArch32 ones left zero).
/// Taking the view of a view changes nothing, and `hwcap::hwcaps` gives the same answer for
/// both.
pub fn user_view(raw: &IdRegs, offer: Offer) -> IdRegs {
    let mut view = IdRegs {
        midr: raw.midr,
        ..IdRegs::default()
    };
    for r in AA64 {
        view.set(r.id, r.user_value(raw, offer));
    }
    view
}

/// Whether EL0 sees `field` as the hardware reports it (rather than a fixed safe value).
pub fn visible(field: Field, offer: Offer) -> bool {
    AA64.iter()
        .filter(|r| r.id == field.reg)
        .flat_map(|r| r.shown)
        .any(|&(f, needs)| f == field && offer.allows(needs))
}

/// A tracked AArch64 ID register: the fields EL0 sees (each with what the kernel must support
/// for it to be shown) and the safe values Linux forces into hidden fields.
struct Aa64 {
    id: IdReg,
    reg: SysReg,
    shown: &'static [(Field, Needs)],
    fixed: u64,
}

impl Aa64 {
    fn user_value(&self, raw: &IdRegs, offer: Offer) -> u64 {
        let value = raw.get(self.id);
        self.shown
            .iter()
            .filter(|(_, needs)| offer.allows(*needs))
            .fold(self.fixed, |acc, (f, _)| acc | (value & f.mask()))
    }
}

const fn aa64(id: IdReg, reg: SysReg, shown: &'static [(Field, Needs)]) -> Aa64 {
    Aa64 {
        id,
        reg,
        shown,
        fixed: 0,
    }
}

const ALWAYS: Needs = Needs::NOTHING;

/// ID_AA64PFR0_EL1.EL1 and .EL0 (hidden) read as 1: AArch64 only.
const PFR0_FIXED: u64 = 1 << 4 | 1;
/// ID_AA64MMFR0_EL1 hidden fields: TGRAN4_2/TGRAN64_2/TGRAN16_2 = 1 ("see TGRANx"),
/// TGRAN4/TGRAN64 = 0xf (not implemented), TGRAN16 = 0 (not implemented).
const MMFR0_FIXED: u64 = 1 << 40 | 1 << 36 | 1 << 32 | 0xf << 28 | 0xf << 24;
/// ID_AA64DFR0_EL1 is all hidden; DebugVer reads as 6 (Armv8 debug). DFR1 reads as 0.
const DFR0_FIXED: u64 = 6;

/// What Linux 7.3 shows of each register (cpufeature.c `arm64_ftr_bits` tables, FTR_VISIBLE
/// and FTR_VISIBLE_IF_IS_ENABLED fields), with each option's field shown only when the kernel
/// supports the feature; Svelt's own conditions (FPMR for FP8, LS64, MOPS) join them.
static AA64: &[Aa64] = &[
    Aa64 {
        fixed: PFR0_FIXED,
        ..aa64(
            IdReg::Pfr0,
            ID_AA64PFR0_EL1,
            &[
                (PFR0_DIT, ALWAYS),
                (PFR0_SVE, Needs::SVE),
                (PFR0_ADVSIMD, ALWAYS),
                (PFR0_FP, ALWAYS),
            ],
        )
    },
    aa64(
        IdReg::Pfr1,
        ID_AA64PFR1_EL1,
        &[
            (PFR1_GCS, Needs::GCS),
            (PFR1_SME, Needs::SME),
            (PFR1_MTE, Needs::MTE),
            (PFR1_SSBS, ALWAYS),
            (PFR1_BT, Needs::BTI),
        ],
    ),
    // MTEFAR and MTESTOREONLY stay visible without MTE support, as in Linux (only their
    // hwcaps depend on it).
    aa64(
        IdReg::Pfr2,
        ID_AA64PFR2_EL1,
        &[
            (PFR2_FPMR, Needs::FPMR),
            (PFR2_MTEFAR, ALWAYS),
            (PFR2_MTESTOREONLY, ALWAYS),
        ],
    ),
    aa64(
        IdReg::Zfr0,
        ID_AA64ZFR0_EL1,
        &[
            (ZFR0_F64MM, Needs::SVE),
            (ZFR0_F32MM, Needs::SVE),
            (ZFR0_F16MM, Needs::SVE),
            (ZFR0_I8MM, Needs::SVE),
            (ZFR0_SM4, Needs::SVE),
            (ZFR0_SHA3, Needs::SVE),
            (ZFR0_B16B16, Needs::SVE),
            (ZFR0_BF16, Needs::SVE),
            (ZFR0_BITPERM, Needs::SVE),
            (ZFR0_ELTPERM, Needs::SVE),
            (ZFR0_AES, Needs::SVE),
            (ZFR0_SVEVER, Needs::SVE),
        ],
    ),
    aa64(
        IdReg::Smfr0,
        ID_AA64SMFR0_EL1,
        &[
            (SMFR0_FA64, Needs::SME),
            (SMFR0_LUT6, Needs::SME),
            (SMFR0_LUTV2, Needs::SME),
            (SMFR0_SMEVER, Needs::SME),
            (SMFR0_I16I64, Needs::SME),
            (SMFR0_F64F64, Needs::SME),
            (SMFR0_I16I32, Needs::SME),
            (SMFR0_B16B16, Needs::SME),
            (SMFR0_F16F16, Needs::SME),
            (SMFR0_F8F16, SME_FP8),
            (SMFR0_F8F32, SME_FP8),
            (SMFR0_I8I32, Needs::SME),
            (SMFR0_F16F32, Needs::SME),
            (SMFR0_B16F32, Needs::SME),
            (SMFR0_BI32I32, Needs::SME),
            (SMFR0_F32F32, Needs::SME),
            (SMFR0_SF8FMA, SME_FP8),
            (SMFR0_SF8DP4, SME_FP8),
            (SMFR0_SF8DP2, SME_FP8),
            (SMFR0_SBITPERM, Needs::SME),
            (SMFR0_AES, Needs::SME),
            (SMFR0_SFEXPA, Needs::SME),
            (SMFR0_STMOP, Needs::SME),
            (SMFR0_SMOP4, Needs::SME),
        ],
    ),
    // The FP8 fields need FPMR (the instructions read it); F16MM2 does not.
    aa64(
        IdReg::Fpfr0,
        ID_AA64FPFR0_EL1,
        &[
            (FPFR0_F8CVT, Needs::FPMR),
            (FPFR0_F8FMA, Needs::FPMR),
            (FPFR0_F8DP4, Needs::FPMR),
            (FPFR0_F8DP2, Needs::FPMR),
            (FPFR0_F8MM8, Needs::FPMR),
            (FPFR0_F8MM4, Needs::FPMR),
            (FPFR0_F16MM2, ALWAYS),
            (FPFR0_F8E4M3, Needs::FPMR),
            (FPFR0_F8E5M2, Needs::FPMR),
        ],
    ),
    aa64(
        IdReg::Isar0,
        ID_AA64ISAR0_EL1,
        &[
            (ISAR0_RNDR, ALWAYS),
            (ISAR0_TS, ALWAYS),
            (ISAR0_FHM, ALWAYS),
            (ISAR0_DP, ALWAYS),
            (ISAR0_SM4, ALWAYS),
            (ISAR0_SM3, ALWAYS),
            (ISAR0_SHA3, ALWAYS),
            (ISAR0_RDM, ALWAYS),
            (ISAR0_ATOMIC, ALWAYS),
            (ISAR0_CRC32, ALWAYS),
            (ISAR0_SHA2, ALWAYS),
            (ISAR0_SHA1, ALWAYS),
            (ISAR0_AES, ALWAYS),
        ],
    ),
    aa64(
        IdReg::Isar1,
        ID_AA64ISAR1_EL1,
        &[
            (ISAR1_LS64, Needs::LS64),
            (ISAR1_I8MM, ALWAYS),
            (ISAR1_DGH, ALWAYS),
            (ISAR1_BF16, ALWAYS),
            (ISAR1_SB, ALWAYS),
            (ISAR1_FRINTTS, ALWAYS),
            (ISAR1_GPI, Needs::PTR_AUTH),
            (ISAR1_GPA, Needs::PTR_AUTH),
            (ISAR1_LRCPC, ALWAYS),
            (ISAR1_FCMA, ALWAYS),
            (ISAR1_JSCVT, ALWAYS),
            (ISAR1_API, Needs::PTR_AUTH),
            (ISAR1_APA, Needs::PTR_AUTH),
            (ISAR1_DPB, ALWAYS),
        ],
    ),
    aa64(
        IdReg::Isar2,
        ID_AA64ISAR2_EL1,
        &[
            (ISAR2_LUT, ALWAYS),
            (ISAR2_CSSC, ALWAYS),
            (ISAR2_RPRFM, ALWAYS),
            (ISAR2_BC, ALWAYS),
            (ISAR2_MOPS, Needs::MOPS),
            (ISAR2_APA3, Needs::PTR_AUTH),
            (ISAR2_GPA3, Needs::PTR_AUTH),
            (ISAR2_RPRES, ALWAYS),
            (ISAR2_WFXT, ALWAYS),
        ],
    ),
    aa64(
        IdReg::Isar3,
        ID_AA64ISAR3_EL1,
        &[
            (ISAR3_FPRCVT, ALWAYS),
            (ISAR3_LSFE, ALWAYS),
            (ISAR3_FAMINMAX, ALWAYS),
        ],
    ),
    Aa64 {
        fixed: MMFR0_FIXED,
        ..aa64(IdReg::Mmfr0, ID_AA64MMFR0_EL1, &[(MMFR0_ECV, ALWAYS)])
    },
    aa64(IdReg::Mmfr1, ID_AA64MMFR1_EL1, &[(MMFR1_AFP, ALWAYS)]),
    aa64(IdReg::Mmfr2, ID_AA64MMFR2_EL1, &[(MMFR2_AT, ALWAYS)]),
    aa64(IdReg::Mmfr3, ID_AA64MMFR3_EL1, &[(MMFR3_S1POE, Needs::POE)]),
];

/// An AArch32 ID register with fields Linux shows: all zero unless AArch32 is implemented at
/// EL0. The other tracked AArch32 registers have no visible fields and read as 0.
struct Aarch32 {
    reg: SysReg,
    raw: fn(&IdRegs) -> u64,
    /// Shifts of the visible 4-bit fields.
    shown: &'static [u8],
}

impl Aarch32 {
    fn user_value(&self, raw: &IdRegs) -> u64 {
        if raw.pfr0 & 0xf != 2 {
            return 0;
        }
        let value = (self.raw)(raw);
        self.shown
            .iter()
            .fold(0, |acc, &shift| acc | (value & 0xf << shift))
    }
}

static AARCH32: &[Aarch32] = &[
    // CRC32, SHA2, SHA1, AES.
    Aarch32 {
        reg: ID_ISAR5_EL1,
        raw: |r| r.id_isar5,
        shown: &[16, 12, 8, 4],
    },
    // I8MM, BF16, SB, FHM, DP.
    Aarch32 {
        reg: ID_ISAR6_EL1,
        raw: |r| r.id_isar6,
        shown: &[24, 20, 12, 8, 4],
    },
    // FPDP.
    Aarch32 {
        reg: MVFR0_EL1,
        raw: |r| r.mvfr0,
        shown: &[8],
    },
    // SIMDFMAC, FPHP, SIMDHP, SIMDSP, SIMDInt, SIMDLS.
    Aarch32 {
        reg: MVFR1_EL1,
        raw: |r| r.mvfr1,
        shown: &[28, 24, 20, 16, 12, 8],
    },
    // SSBS.
    Aarch32 {
        reg: ID_PFR2_EL1,
        raw: |r| r.id_pfr2,
        shown: &[4],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 7.3 with every option: the view Linux gives.
    const ALL: Offer = Offer::LINUX;
    const NONE: Offer = Offer {
        sve: false,
        sme: false,
        ..Offer::LINUX
    };
    const SVELT: Offer = Offer::svelt(true, true);

    /// QEMU 10.0.2 `-cpu max` (read from the guest), plus illustrative values for the
    /// registers the spec did not record.
    fn qemu_max() -> IdRegs {
        IdRegs {
            pfr0: 0x1301_0011_2011_0022,
            pfr1: 0x0000_0010_0100_0121,
            zfr0: 0x0110_1101_0021_0021,
            smfr0: 0x80F1_00FD_0000_0000,
            midr: 0x000F_0510,
            ..IdRegs::default()
        }
    }

    fn read(reg: SysReg, raw: &IdRegs, offer: Offer) -> Option<u64> {
        let access = SysRegAccess::from_mrs_insn(reg.mrs(0)).unwrap();
        emulate(&access, raw, offer)
    }

    /// An EL0 MRS/MSR as the CPU reports it: EC 0x18, IL=1.
    const fn esr(iss: u32) -> Esr {
        Esr((0x18 << 26) | (1 << 25) | iss as u64)
    }

    #[test]
    fn decodes_mrs_syndromes() {
        // mrs x0, ID_AA64PFR0_EL1: op0=3 (bits 21:20), CRm=4 (bits 4:1), read.
        let a = SysRegAccess::from_esr(Esr(0x6230_0009)).unwrap();
        assert_eq!(a.reg(), ID_AA64PFR0_EL1);
        assert_eq!((a.rt, a.read), (0, true));
        // mrs x1, ID_AA64ZFR0_EL1
        let a = SysRegAccess::from_esr(Esr(0x6238_0029)).unwrap();
        assert_eq!(a.reg(), ID_AA64ZFR0_EL1);
        assert_eq!((a.rt, a.read), (1, true));
        // mrs x30, MIDR_EL1
        let a = SysRegAccess::from_esr(Esr(0x6230_03C1)).unwrap();
        assert_eq!(a.reg(), MIDR_EL1);
        assert_eq!(a.rt, 30);
        // msr ID_AA64PFR0_EL1, x0: direction 0
        let a = SysRegAccess::from_esr(Esr(0x6230_0008)).unwrap();
        assert_eq!(a.reg(), ID_AA64PFR0_EL1);
        assert!(!a.read);
        // mrs x5, CTR_EL0 (op1=3, op2=1)
        let a = SysRegAccess::from_esr(Esr(0x6232_C0A1)).unwrap();
        assert_eq!(a.reg(), SysReg::new(3, 3, 0, 0, 1));
        assert_eq!(a.rt, 5);
    }

    #[test]
    fn only_ec_0x18_is_a_sysreg_access() {
        assert_eq!(SysRegAccess::from_esr(Esr(0x6600_0000)), None);
        assert_eq!(SysRegAccess::from_esr(Esr(0x0200_0000)), None);
    }

    #[test]
    fn instruction_and_syndrome_decode_alike() {
        // Words from the Arm ARM's ID register descriptions (D23.2).
        for (word, reg) in [
            (0xD538_0400, ID_AA64PFR0_EL1),
            (0xD538_0480, ID_AA64ZFR0_EL1),
            (0xD538_04A0, ID_AA64SMFR0_EL1),
            (0xD538_04E0, ID_AA64FPFR0_EL1),
        ] {
            assert_eq!(reg.mrs(0), word);
            let a = SysRegAccess::from_mrs_insn(word).unwrap();
            assert_eq!(a.reg(), reg);
            let iss = (3 << 20) | (u32::from(reg.op2) << 17) | (u32::from(reg.crm) << 1) | 1;
            assert_eq!(SysRegAccess::from_esr(esr(iss)), Some(a));
        }
        let a = SysRegAccess::from_mrs_insn(MIDR_EL1.mrs(17)).unwrap();
        assert_eq!((a.reg(), a.rt, a.read), (MIDR_EL1, 17, true));
    }

    #[test]
    fn non_mrs_words_are_not_decoded() {
        // msr ID_AA64PFR0_EL1, x0; nop; svc #0; mrs x0, (op0=1 space: not an MRS encoding)
        for word in [0xD518_0400, 0xD503_201F, 0xD400_0001, 0xD528_0000] {
            assert_eq!(SysRegAccess::from_mrs_insn(word), None, "{word:#x}");
        }
        // op0=2 (debug registers) decodes but is not emulated.
        let dbg = SysRegAccess::from_mrs_insn(0xD530_0000).unwrap();
        assert_eq!(dbg.op0, 2);
        assert_eq!(emulate(&dbg, &qemu_max(), ALL), None);
    }

    #[test]
    fn qemu_max_pfr0_pfr1_are_masked() {
        let r = qemu_max();
        // DIT, SVE, AdvSIMD, FP kept; CSV3/CSV2/SEL2/RAS dropped; EL0/EL1 forced to 1.
        assert_eq!(read(ID_AA64PFR0_EL1, &r, ALL), Some(0x0001_0001_0011_0011));
        assert_eq!(read(ID_AA64PFR0_EL1, &r, NONE), Some(0x0001_0000_0011_0011));
        // SME, MTE, SSBS, BT kept; NMI dropped.
        assert_eq!(read(ID_AA64PFR1_EL1, &r, ALL), Some(0x0100_0121));
        assert_eq!(read(ID_AA64PFR1_EL1, &r, NONE), Some(0x0000_0121));
    }

    #[test]
    fn qemu_max_sve_and_sme_registers_pass_through_when_offered() {
        let r = qemu_max();
        assert_eq!(read(ID_AA64ZFR0_EL1, &r, ALL), Some(r.zfr0));
        assert_eq!(read(ID_AA64SMFR0_EL1, &r, ALL), Some(r.smfr0));
    }

    #[test]
    fn sve_and_sme_hidden_when_not_offered() {
        let r = qemu_max();
        assert_eq!(read(ID_AA64ZFR0_EL1, &r, NONE), Some(0));
        assert_eq!(read(ID_AA64SMFR0_EL1, &r, NONE), Some(0));
        let sve_only = Offer { sme: false, ..ALL };
        assert_eq!(read(ID_AA64ZFR0_EL1, &r, sve_only), Some(r.zfr0));
        assert_eq!(read(ID_AA64SMFR0_EL1, &r, sve_only), Some(0));
        assert_eq!(read(ID_AA64PFR1_EL1, &r, sve_only), Some(0x121));
        assert_eq!(
            read(ID_AA64PFR0_EL1, &r, sve_only),
            Some(0x0001_0001_0011_0011)
        );
    }

    #[test]
    fn smfr0_reserved_bits_are_dropped() {
        let r = IdRegs {
            smfr0: !0,
            ..qemu_max()
        };
        // Res0: 62, 51:49, 31, 27:26, 22:17, 15:1.
        assert_eq!(read(ID_AA64SMFR0_EL1, &r, ALL), Some(0xBFF1_FFFF_7381_0001));
        // Without FPMR support the FP8 fields (F8F16, F8F32, SF8FMA, SF8DP4, SF8DP2) go too;
        // Svelt keeps FPMR, so they stay.
        assert_eq!(
            read(ID_AA64SMFR0_EL1, &r, SVELT),
            Some(0xBFF1_FFFF_7381_0001)
        );
        let no_fpmr = Offer {
            fpmr: false,
            ..SVELT
        };
        assert_eq!(
            read(ID_AA64SMFR0_EL1, &r, no_fpmr),
            Some(0xBFF1_FCFF_0381_0001)
        );
    }

    #[test]
    fn identification_registers() {
        let r = qemu_max();
        assert_eq!(read(MIDR_EL1, &r, ALL), Some(0x000F_0510));
        assert_eq!(read(MPIDR_EL1, &r, ALL), Some(0x8000_0000));
        assert_eq!(read(REVIDR_EL1, &r, ALL), Some(0));
        // The rest of CRm 0 (CTR_EL0's space is op1=3; these are unallocated or AIDR-like).
        for op2 in [1, 2, 3, 4, 7] {
            assert_eq!(read(SysReg::new(3, 0, 0, 0, op2), &r, ALL), None, "{op2}");
        }
    }

    #[test]
    fn aarch32_crm1_is_refused() {
        for op2 in 0..8 {
            assert_eq!(read(SysReg::new(3, 0, 0, 1, op2), &qemu_max(), ALL), None);
        }
    }

    #[test]
    fn unallocated_and_untracked_read_zero() {
        let r = IdRegs {
            pfr2: !0,
            isar3: !0,
            ..qemu_max()
        };
        for reg in [
            SysReg::new(3, 0, 0, 4, 3),
            SysReg::new(3, 0, 0, 4, 6),
            ID_AA64DFR1_EL1,
            SysReg::new(3, 0, 0, 5, 2),
            ID_AA64AFR0_EL1,
            ID_AA64AFR1_EL1,
            SysReg::new(3, 0, 0, 6, 4),
            SysReg::new(3, 0, 0, 6, 7),
            ID_AA64MMFR4_EL1,
            SysReg::new(3, 0, 0, 7, 7),
            SysReg::new(3, 0, 0, 2, 0),
            SysReg::new(3, 0, 0, 3, 2),
        ] {
            assert_eq!(read(reg, &r, ALL), Some(0), "{reg:?}");
        }
    }

    #[test]
    fn debug_features_read_as_armv8_debug() {
        assert_eq!(read(ID_AA64DFR0_EL1, &qemu_max(), ALL), Some(6));
    }

    #[test]
    fn mmfr0_shows_ecv_and_fixed_granule_fields() {
        let r = IdRegs {
            // ECV=2, FGT=1, TGRAN4=0 (4K supported), PARange=5
            mmfr0: 0x2100_0000_0000_0005,
            ..qemu_max()
        };
        assert_eq!(read(ID_AA64MMFR0_EL1, &r, ALL), Some(0x2000_0111_FF00_0000));
        assert_eq!(
            read(ID_AA64MMFR0_EL1, &IdRegs::default(), ALL),
            Some(0x0000_0111_FF00_0000)
        );
    }

    #[test]
    fn isar_hidden_fields_are_dropped() {
        let r = IdRegs {
            // ISAR0: TLB (59:56) hidden, TME (27:24) untracked, 3:0 reserved.
            isar0: !0,
            // ISAR1: XS (59:56), SPECRES (43:40) hidden; LS64 (63:60) shown since Linux 7.3.
            isar1: !0,
            // ISAR2: ATS1A, PCDPHINT.. CLRBHB, PAC_frac hidden.
            isar2: !0,
            isar3: !0,
            ..qemu_max()
        };
        assert_eq!(read(ID_AA64ISAR0_EL1, &r, ALL), Some(0xF0FF_FFFF_F0FF_FFF0));
        assert_eq!(read(ID_AA64ISAR1_EL1, &r, ALL), Some(0xF0FF_F0FF_FFFF_FFFF));
        assert_eq!(read(ID_AA64ISAR2_EL1, &r, ALL), Some(0x0FFF_0000_00FF_FFFF));
        assert_eq!(read(ID_AA64ISAR3_EL1, &r, ALL), Some(0xF00F_00F0));
    }

    #[test]
    fn other_aa64_registers() {
        let r = IdRegs {
            pfr2: !0,
            fpfr0: !0,
            mmfr1: !0,
            mmfr2: !0,
            mmfr3: !0,
            ..qemu_max()
        };
        assert_eq!(read(ID_AA64PFR2_EL1, &r, ALL), Some(0xF_0000_0FF0));
        assert_eq!(read(ID_AA64FPFR0_EL1, &r, ALL), Some(0xFC00_8003));
        assert_eq!(read(ID_AA64MMFR1_EL1, &r, ALL), Some(0xF << 44));
        assert_eq!(read(ID_AA64MMFR2_EL1, &r, ALL), Some(0xF << 32));
        assert_eq!(read(ID_AA64MMFR3_EL1, &r, ALL), Some(0xF << 16));
        // Signed FP/AdvSIMD "absent" (0xf) is shown as is.
        let no_fp = IdRegs {
            pfr0: 0xff << 16,
            ..qemu_max()
        };
        assert_eq!(read(ID_AA64PFR0_EL1, &no_fp, NONE), Some(0xff0011));
    }

    /// What Svelt does not handle reads as Linux's safe value (0) when the kernel lacks it.
    #[test]
    fn unsupported_features_are_hidden() {
        let mut r = qemu_max();
        for reg in IdReg::ALL {
            r.set(reg, !0);
        }
        // MTE and BT go; SME, SSBS and GCS stay.
        assert_eq!(read(ID_AA64PFR1_EL1, &r, SVELT), Some(0xF000_0F00_00F0));
        assert_eq!(read(ID_AA64PFR1_EL1, &r, ALL), Some(0xF000_0F00_0FFF));
        // FPMR stays; MTEFAR and MTESTOREONLY too, as in Linux without MTE.
        assert_eq!(read(ID_AA64PFR2_EL1, &r, SVELT), Some(0xF_0000_0FF0));
        // The FP8 fields and F16MM2 stay with FPMR; without it, F16MM2 only.
        assert_eq!(
            read(ID_AA64FPFR0_EL1, &r, SVELT),
            read(ID_AA64FPFR0_EL1, &r, ALL)
        );
        let no_fpmr = Offer {
            fpmr: false,
            ..SVELT
        };
        assert_eq!(read(ID_AA64PFR2_EL1, &r, no_fpmr), Some(0xFF0));
        assert_eq!(read(ID_AA64FPFR0_EL1, &r, no_fpmr), Some(0x8000));
        // LS64 and the four pointer-authentication fields go.
        assert_eq!(
            read(ID_AA64ISAR1_EL1, &r, SVELT),
            Some(0x00FF_F0FF_00FF_F00F)
        );
        // MOPS, APA3 and GPA3 go.
        assert_eq!(
            read(ID_AA64ISAR2_EL1, &r, SVELT),
            Some(0x0FFF_0000_00F0_00FF)
        );
        assert_eq!(read(ID_AA64MMFR3_EL1, &r, SVELT), Some(0));
        // Unconditional registers are the same as Linux's.
        for reg in [
            ID_AA64ISAR0_EL1,
            ID_AA64ISAR3_EL1,
            ID_AA64MMFR0_EL1,
            ID_AA64MMFR2_EL1,
        ] {
            assert_eq!(read(reg, &r, SVELT), read(reg, &r, ALL), "{reg:?}");
        }
    }

    #[test]
    fn aarch32_registers_follow_el0_support() {
        let r = IdRegs {
            id_isar5: !0,
            id_isar6: !0,
            mvfr0: !0,
            mvfr1: !0,
            id_pfr2: !0,
            ..qemu_max()
        };
        // QEMU max: ID_AA64PFR0_EL1.EL0 = 2, AArch32 at EL0.
        assert_eq!(read(ID_ISAR5_EL1, &r, ALL), Some(0x000F_FFF0));
        assert_eq!(read(ID_ISAR6_EL1, &r, ALL), Some(0x0FF0_FFF0));
        assert_eq!(read(MVFR0_EL1, &r, ALL), Some(0xF00));
        assert_eq!(read(MVFR1_EL1, &r, ALL), Some(0xFFFF_FF00));
        assert_eq!(read(ID_PFR2_EL1, &r, ALL), Some(0xF0));
        let aarch64_only = IdRegs {
            pfr0: (r.pfr0 & !0xf) | 1,
            ..r
        };
        for reg in [
            ID_ISAR5_EL1,
            ID_ISAR6_EL1,
            MVFR0_EL1,
            MVFR1_EL1,
            ID_PFR2_EL1,
        ] {
            assert_eq!(read(reg, &aarch64_only, ALL), Some(0), "{reg:?}");
        }
    }

    #[test]
    fn writes_are_refused() {
        let a = SysRegAccess::from_esr(esr(0x30_0008)).unwrap();
        assert_eq!(a.reg(), ID_AA64PFR0_EL1);
        assert_eq!(emulate(&a, &qemu_max(), ALL), None);
        let midr_write = SysRegAccess {
            read: false,
            ..SysRegAccess::from_mrs_insn(MIDR_EL1.mrs(0)).unwrap()
        };
        assert_eq!(emulate(&midr_write, &qemu_max(), ALL), None);
    }

    #[test]
    fn non_id_registers_are_refused() {
        let r = qemu_max();
        for reg in [
            SysReg::new(3, 3, 0, 0, 1),  // CTR_EL0
            SysReg::new(3, 3, 0, 0, 7),  // DCZID_EL0
            SysReg::new(3, 1, 0, 0, 6),  // SMIDR_EL1
            SysReg::new(3, 0, 1, 2, 0),  // ZCR_EL1
            SysReg::new(3, 3, 4, 2, 2),  // SVCR
            SysReg::new(3, 3, 14, 0, 0), // CNTFRQ_EL0
            SysReg::new(3, 0, 0, 8, 0),  // CRm beyond the ID space
            SysReg::new(3, 0, 0, 15, 7),
            SysReg::new(2, 0, 0, 4, 0), // op0=2 alias of the ID encodings
        ] {
            assert_eq!(read(reg, &r, ALL), None, "{reg:?}");
        }
    }

    #[test]
    fn nothing_is_emulated_without_cpuid() {
        let off = Offer {
            cpuid: false,
            ..ALL
        };
        assert_eq!(read(ID_AA64PFR0_EL1, &qemu_max(), off), None);
        assert_eq!(read(MIDR_EL1, &qemu_max(), off), None);
    }

    #[test]
    fn reads_into_xzr_still_succeed() {
        let a = SysRegAccess::from_mrs_insn(ID_AA64ISAR0_EL1.mrs(31)).unwrap();
        assert_eq!(a.rt, 31);
        assert_eq!(emulate(&a, &qemu_max(), ALL), Some(0));
    }

    #[test]
    fn table_is_sane() {
        for (i, r) in AA64.iter().enumerate() {
            assert!((4..=7).contains(&r.reg.crm), "{:?}", r.reg);
            assert!(
                AA64[i + 1..].iter().all(|o| o.reg != r.reg && o.id != r.id),
                "duplicate {:?}",
                r.reg
            );
            let mut seen = 0u64;
            for (fld, _) in r.shown {
                assert_eq!(fld.reg, r.id, "{} field in {:?}", fld.reg.name(), r.reg);
                assert!(u32::from(fld.shift) + u32::from(fld.width) <= 64);
                assert_eq!(seen & fld.mask(), 0, "overlap in {:?}", r.reg);
                assert_eq!(r.fixed & fld.mask(), 0, "fixed bits in a visible field");
                seen |= fld.mask();
            }
        }
        assert_eq!(AA64.len(), IdReg::ALL.len());
        for r in AARCH32 {
            assert!((2..=3).contains(&r.reg.crm), "{:?}", r.reg);
        }
    }
}
