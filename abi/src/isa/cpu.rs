//! CPU features decoded from the AArch64 ID registers.
//!
//! The kernel reads the raw ID_AA64* values once per CPU and decodes them here. Field positions
//! follow the Arm ARM (the ID_AA64* register descriptions, D23.2).

use crate::fp::vl::VlSet;
use core::fmt;

/// Raw ID register values as read on one CPU. Unqualified names are the ID_AA64* registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdRegs {
    pub pfr0: u64,
    pub pfr1: u64,
    pub zfr0: u64,
    pub smfr0: u64,
    pub isar0: u64,
    pub isar1: u64,
    pub isar2: u64,
    pub mmfr0: u64,
    /// MIDR_EL1 of this CPU (EL0 reads of it are answered with this CPU's value).
    pub midr: u64,
    pub pfr2: u64,
    pub fpfr0: u64,
    pub isar3: u64,
    pub mmfr1: u64,
    pub mmfr2: u64,
    pub mmfr3: u64,
    /// AArch32 ID registers with fields Linux shows to EL0. Meaningful (and worth reading) only
    /// when ID_AA64PFR0_EL1.EL0 == 2 (AArch32 at EL0); `idregs` ignores them otherwise.
    pub id_isar5: u64,
    pub id_isar6: u64,
    pub mvfr0: u64,
    pub mvfr1: u64,
    pub id_pfr2: u64,
}

/// `cpu: id pfr0=0x… …`: every raw value, for the boot log and for test fixtures.
impl fmt::Display for IdRegs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cpu: id")?;
        for (name, v) in [
            ("pfr0", self.pfr0),
            ("pfr1", self.pfr1),
            ("pfr2", self.pfr2),
            ("zfr0", self.zfr0),
            ("smfr0", self.smfr0),
            ("fpfr0", self.fpfr0),
            ("isar0", self.isar0),
            ("isar1", self.isar1),
            ("isar2", self.isar2),
            ("isar3", self.isar3),
            ("mmfr0", self.mmfr0),
            ("mmfr1", self.mmfr1),
            ("mmfr2", self.mmfr2),
            ("mmfr3", self.mmfr3),
            ("midr", self.midr),
        ] {
            write!(f, " {name}={v:#x}")?;
        }
        Ok(())
    }
}

/// The AArch64 ID registers with fields that reach user space (through the EL0 view of
/// `idregs` and the hwcaps of `hwcap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdReg {
    Pfr0,
    Pfr1,
    Pfr2,
    Zfr0,
    Smfr0,
    Fpfr0,
    Isar0,
    Isar1,
    Isar2,
    Isar3,
    Mmfr0,
    Mmfr1,
    Mmfr2,
    Mmfr3,
}

impl IdReg {
    pub const ALL: [IdReg; 14] = [
        IdReg::Pfr0,
        IdReg::Pfr1,
        IdReg::Pfr2,
        IdReg::Zfr0,
        IdReg::Smfr0,
        IdReg::Fpfr0,
        IdReg::Isar0,
        IdReg::Isar1,
        IdReg::Isar2,
        IdReg::Isar3,
        IdReg::Mmfr0,
        IdReg::Mmfr1,
        IdReg::Mmfr2,
        IdReg::Mmfr3,
    ];

    /// The architectural name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            IdReg::Pfr0 => "ID_AA64PFR0_EL1",
            IdReg::Pfr1 => "ID_AA64PFR1_EL1",
            IdReg::Pfr2 => "ID_AA64PFR2_EL1",
            IdReg::Zfr0 => "ID_AA64ZFR0_EL1",
            IdReg::Smfr0 => "ID_AA64SMFR0_EL1",
            IdReg::Fpfr0 => "ID_AA64FPFR0_EL1",
            IdReg::Isar0 => "ID_AA64ISAR0_EL1",
            IdReg::Isar1 => "ID_AA64ISAR1_EL1",
            IdReg::Isar2 => "ID_AA64ISAR2_EL1",
            IdReg::Isar3 => "ID_AA64ISAR3_EL1",
            IdReg::Mmfr0 => "ID_AA64MMFR0_EL1",
            IdReg::Mmfr1 => "ID_AA64MMFR1_EL1",
            IdReg::Mmfr2 => "ID_AA64MMFR2_EL1",
            IdReg::Mmfr3 => "ID_AA64MMFR3_EL1",
        }
    }
}

impl IdRegs {
    pub const fn get(&self, reg: IdReg) -> u64 {
        match reg {
            IdReg::Pfr0 => self.pfr0,
            IdReg::Pfr1 => self.pfr1,
            IdReg::Pfr2 => self.pfr2,
            IdReg::Zfr0 => self.zfr0,
            IdReg::Smfr0 => self.smfr0,
            IdReg::Fpfr0 => self.fpfr0,
            IdReg::Isar0 => self.isar0,
            IdReg::Isar1 => self.isar1,
            IdReg::Isar2 => self.isar2,
            IdReg::Isar3 => self.isar3,
            IdReg::Mmfr0 => self.mmfr0,
            IdReg::Mmfr1 => self.mmfr1,
            IdReg::Mmfr2 => self.mmfr2,
            IdReg::Mmfr3 => self.mmfr3,
        }
    }

    pub fn set(&mut self, reg: IdReg, value: u64) {
        *match reg {
            IdReg::Pfr0 => &mut self.pfr0,
            IdReg::Pfr1 => &mut self.pfr1,
            IdReg::Pfr2 => &mut self.pfr2,
            IdReg::Zfr0 => &mut self.zfr0,
            IdReg::Smfr0 => &mut self.smfr0,
            IdReg::Fpfr0 => &mut self.fpfr0,
            IdReg::Isar0 => &mut self.isar0,
            IdReg::Isar1 => &mut self.isar1,
            IdReg::Isar2 => &mut self.isar2,
            IdReg::Isar3 => &mut self.isar3,
            IdReg::Mmfr0 => &mut self.mmfr0,
            IdReg::Mmfr1 => &mut self.mmfr1,
            IdReg::Mmfr2 => &mut self.mmfr2,
            IdReg::Mmfr3 => &mut self.mmfr3,
        } = value;
    }
}

/// One field of an ID register: 4 bits wide except the single-bit SMFR0/FPFR0 features. Signed
/// fields (FP, AdvSIMD) use 0xf for "not implemented", so they compare as two's complement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub reg: IdReg,
    pub shift: u8,
    pub width: u8,
    pub signed: bool,
}

impl Field {
    pub const fn new(reg: IdReg, shift: u8) -> Field {
        Field {
            reg,
            shift,
            width: 4,
            signed: false,
        }
    }

    pub const fn bit(reg: IdReg, shift: u8) -> Field {
        Field {
            width: 1,
            ..Field::new(reg, shift)
        }
    }

    pub const fn signed(reg: IdReg, shift: u8) -> Field {
        Field {
            signed: true,
            ..Field::new(reg, shift)
        }
    }

    /// The field's bits in place.
    pub const fn mask(self) -> u64 {
        ((1u64 << self.width) - 1) << self.shift
    }

    /// The field's value in `regs`, sign-extended when the field is signed.
    pub const fn value(self, regs: &IdRegs) -> i64 {
        let raw = (regs.get(self.reg) & self.mask()) >> self.shift;
        if self.signed && raw >> (self.width - 1) != 0 {
            raw as i64 - (1i64 << self.width)
        } else {
            raw as i64
        }
    }

    /// The largest value a "at least" comparison accepts: all ones for unsigned fields, the
    /// largest positive value for signed ones (so "not implemented", -1, never passes).
    pub const fn max(self) -> i64 {
        if self.signed {
            (1i64 << (self.width - 1)) - 1
        } else {
            (1i64 << self.width) - 1
        }
    }
}

/// The ID-register fields user space can see (idregs' EL0 view) or that a hwcap tests, named
/// `REGISTER_FIELD` as in the Arm ARM.
pub mod fields {
    use super::Field;
    use super::IdReg::*;

    pub const PFR0_DIT: Field = Field::new(Pfr0, 48);
    pub const PFR0_SVE: Field = Field::new(Pfr0, 32);
    pub const PFR0_ADVSIMD: Field = Field::signed(Pfr0, 20);
    pub const PFR0_FP: Field = Field::signed(Pfr0, 16);

    pub const PFR1_GCS: Field = Field::new(Pfr1, 44);
    pub const PFR1_SME: Field = Field::new(Pfr1, 24);
    pub const PFR1_MTE: Field = Field::new(Pfr1, 8);
    pub const PFR1_SSBS: Field = Field::new(Pfr1, 4);
    pub const PFR1_BT: Field = Field::new(Pfr1, 0);

    pub const PFR2_FPMR: Field = Field::new(Pfr2, 32);
    pub const PFR2_MTEFAR: Field = Field::new(Pfr2, 8);
    pub const PFR2_MTESTOREONLY: Field = Field::new(Pfr2, 4);

    pub const ZFR0_F64MM: Field = Field::new(Zfr0, 56);
    pub const ZFR0_F32MM: Field = Field::new(Zfr0, 52);
    pub const ZFR0_F16MM: Field = Field::new(Zfr0, 48);
    pub const ZFR0_I8MM: Field = Field::new(Zfr0, 44);
    pub const ZFR0_SM4: Field = Field::new(Zfr0, 40);
    pub const ZFR0_SHA3: Field = Field::new(Zfr0, 32);
    pub const ZFR0_B16B16: Field = Field::new(Zfr0, 24);
    pub const ZFR0_BF16: Field = Field::new(Zfr0, 20);
    pub const ZFR0_BITPERM: Field = Field::new(Zfr0, 16);
    pub const ZFR0_ELTPERM: Field = Field::new(Zfr0, 12);
    pub const ZFR0_AES: Field = Field::new(Zfr0, 4);
    pub const ZFR0_SVEVER: Field = Field::new(Zfr0, 0);

    pub const SMFR0_FA64: Field = Field::bit(Smfr0, 63);
    pub const SMFR0_LUT6: Field = Field::bit(Smfr0, 61);
    pub const SMFR0_LUTV2: Field = Field::bit(Smfr0, 60);
    pub const SMFR0_SMEVER: Field = Field::new(Smfr0, 56);
    pub const SMFR0_I16I64: Field = Field::new(Smfr0, 52);
    pub const SMFR0_F64F64: Field = Field::bit(Smfr0, 48);
    pub const SMFR0_I16I32: Field = Field::new(Smfr0, 44);
    pub const SMFR0_B16B16: Field = Field::bit(Smfr0, 43);
    pub const SMFR0_F16F16: Field = Field::bit(Smfr0, 42);
    pub const SMFR0_F8F16: Field = Field::bit(Smfr0, 41);
    pub const SMFR0_F8F32: Field = Field::bit(Smfr0, 40);
    pub const SMFR0_I8I32: Field = Field::new(Smfr0, 36);
    pub const SMFR0_F16F32: Field = Field::bit(Smfr0, 35);
    pub const SMFR0_B16F32: Field = Field::bit(Smfr0, 34);
    pub const SMFR0_BI32I32: Field = Field::bit(Smfr0, 33);
    pub const SMFR0_F32F32: Field = Field::bit(Smfr0, 32);
    pub const SMFR0_SF8FMA: Field = Field::bit(Smfr0, 30);
    pub const SMFR0_SF8DP4: Field = Field::bit(Smfr0, 29);
    pub const SMFR0_SF8DP2: Field = Field::bit(Smfr0, 28);
    pub const SMFR0_SBITPERM: Field = Field::bit(Smfr0, 25);
    pub const SMFR0_AES: Field = Field::bit(Smfr0, 24);
    pub const SMFR0_SFEXPA: Field = Field::bit(Smfr0, 23);
    pub const SMFR0_STMOP: Field = Field::bit(Smfr0, 16);
    pub const SMFR0_SMOP4: Field = Field::bit(Smfr0, 0);

    pub const FPFR0_F8CVT: Field = Field::bit(Fpfr0, 31);
    pub const FPFR0_F8FMA: Field = Field::bit(Fpfr0, 30);
    pub const FPFR0_F8DP4: Field = Field::bit(Fpfr0, 29);
    pub const FPFR0_F8DP2: Field = Field::bit(Fpfr0, 28);
    pub const FPFR0_F8MM8: Field = Field::bit(Fpfr0, 27);
    pub const FPFR0_F8MM4: Field = Field::bit(Fpfr0, 26);
    pub const FPFR0_F16MM2: Field = Field::bit(Fpfr0, 15);
    pub const FPFR0_F8E4M3: Field = Field::bit(Fpfr0, 1);
    pub const FPFR0_F8E5M2: Field = Field::bit(Fpfr0, 0);

    pub const ISAR0_RNDR: Field = Field::new(Isar0, 60);
    pub const ISAR0_TS: Field = Field::new(Isar0, 52);
    pub const ISAR0_FHM: Field = Field::new(Isar0, 48);
    pub const ISAR0_DP: Field = Field::new(Isar0, 44);
    pub const ISAR0_SM4: Field = Field::new(Isar0, 40);
    pub const ISAR0_SM3: Field = Field::new(Isar0, 36);
    pub const ISAR0_SHA3: Field = Field::new(Isar0, 32);
    pub const ISAR0_RDM: Field = Field::new(Isar0, 28);
    pub const ISAR0_ATOMIC: Field = Field::new(Isar0, 20);
    pub const ISAR0_CRC32: Field = Field::new(Isar0, 16);
    pub const ISAR0_SHA2: Field = Field::new(Isar0, 12);
    pub const ISAR0_SHA1: Field = Field::new(Isar0, 8);
    pub const ISAR0_AES: Field = Field::new(Isar0, 4);

    pub const ISAR1_LS64: Field = Field::new(Isar1, 60);
    pub const ISAR1_I8MM: Field = Field::new(Isar1, 52);
    pub const ISAR1_DGH: Field = Field::new(Isar1, 48);
    pub const ISAR1_BF16: Field = Field::new(Isar1, 44);
    pub const ISAR1_SB: Field = Field::new(Isar1, 36);
    pub const ISAR1_FRINTTS: Field = Field::new(Isar1, 32);
    pub const ISAR1_GPI: Field = Field::new(Isar1, 28);
    pub const ISAR1_GPA: Field = Field::new(Isar1, 24);
    pub const ISAR1_LRCPC: Field = Field::new(Isar1, 20);
    pub const ISAR1_FCMA: Field = Field::new(Isar1, 16);
    pub const ISAR1_JSCVT: Field = Field::new(Isar1, 12);
    pub const ISAR1_API: Field = Field::new(Isar1, 8);
    pub const ISAR1_APA: Field = Field::new(Isar1, 4);
    pub const ISAR1_DPB: Field = Field::new(Isar1, 0);

    pub const ISAR2_LUT: Field = Field::new(Isar2, 56);
    pub const ISAR2_CSSC: Field = Field::new(Isar2, 52);
    pub const ISAR2_RPRFM: Field = Field::new(Isar2, 48);
    pub const ISAR2_BC: Field = Field::new(Isar2, 20);
    pub const ISAR2_MOPS: Field = Field::new(Isar2, 16);
    pub const ISAR2_APA3: Field = Field::new(Isar2, 12);
    pub const ISAR2_GPA3: Field = Field::new(Isar2, 8);
    pub const ISAR2_RPRES: Field = Field::new(Isar2, 4);
    pub const ISAR2_WFXT: Field = Field::new(Isar2, 0);

    pub const ISAR3_FPRCVT: Field = Field::new(Isar3, 28);
    pub const ISAR3_LSFE: Field = Field::new(Isar3, 16);
    pub const ISAR3_FAMINMAX: Field = Field::new(Isar3, 4);

    pub const MMFR0_ECV: Field = Field::new(Mmfr0, 60);
    pub const MMFR1_AFP: Field = Field::new(Mmfr1, 44);
    pub const MMFR2_AT: Field = Field::new(Mmfr2, 32);
    pub const MMFR3_S1POE: Field = Field::new(Mmfr3, 16);
    pub const MMFR3_S1PIE: Field = Field::new(Mmfr3, 8);
}

/// Fields only the kernel itself reads (user space never sees them).
const PFR0_GIC: Field = Field::new(IdReg::Pfr0, 24);
const MMFR0_FGT: Field = Field::new(IdReg::Mmfr0, 56);

/// What Svelt cares about, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// ID_AA64PFR0_EL1.SVE != 0.
    pub sve: bool,
    /// ID_AA64ZFR0_EL1.SVEver (0 SVE, 1 SVE2, 2 SVE2p1, ...); meaningful only with `sve`.
    pub sve_ver: u8,
    /// ID_AA64PFR1_EL1.SME (0 none, 1 SME, 2 SME2).
    pub sme: u8,
    /// ID_AA64SMFR0_EL1.FA64.
    pub sme_fa64: bool,
    /// ID_AA64SMFR0_EL1.SMEver (0 SME, 1 SME2, 2 SME2p1, ...).
    pub sme_ver: u8,
    /// GIC system-register interface (ID_AA64PFR0_EL1.GIC != 0).
    pub gic_sysregs: bool,
    /// Any pointer-authentication algorithm (ISAR1 APA/API/GPA/GPI, ISAR2 APA3/GPA3).
    pub pauth: bool,
    /// ID_AA64PFR1_EL1.MTE >= 2 (allocation tags in memory).
    pub mte2: bool,
    /// FEAT_FGT (ID_AA64MMFR0_EL1.FGT != 0): fine-grained trap registers exist at EL2.
    pub fgt: bool,
    /// FEAT_FPMR (ID_AA64PFR2_EL1.FPMR != 0): the FP8 mode register.
    pub fpmr: bool,
    /// FEAT_GCS (ID_AA64PFR1_EL1.GCS != 0) together with FEAT_S1PIE (ID_AA64MMFR3_EL1.S1PIE),
    /// which GCS pages need (the architecture has no GCS without it).
    pub gcs: bool,
    /// FEAT_SSBS (ID_AA64PFR1_EL1.SSBS != 0): PSTATE.SSBS exists.
    pub ssbs: bool,
}

impl Features {
    pub fn decode(r: &IdRegs) -> Features {
        use fields::*;
        let get = |f: Field| f.value(r) as u8;
        let sve = get(PFR0_SVE) != 0;
        let sme = get(PFR1_SME);
        Features {
            sve,
            sve_ver: if sve { get(ZFR0_SVEVER) } else { 0 },
            sme,
            sme_fa64: sme != 0 && get(SMFR0_FA64) != 0,
            sme_ver: if sme != 0 { get(SMFR0_SMEVER) } else { 0 },
            gic_sysregs: get(PFR0_GIC) != 0,
            pauth: [
                ISAR1_APA, ISAR1_API, ISAR1_GPA, ISAR1_GPI, ISAR2_APA3, ISAR2_GPA3,
            ]
            .into_iter()
            .any(|f| get(f) != 0),
            mte2: get(PFR1_MTE) >= 2,
            fgt: get(MMFR0_FGT) != 0,
            fpmr: get(PFR2_FPMR) != 0,
            gcs: get(PFR1_GCS) != 0 && get(MMFR3_S1PIE) != 0,
            ssbs: get(PFR1_SSBS) != 0,
        }
    }

    /// SME2 (ZT0) is implemented.
    pub fn sme2(&self) -> bool {
        self.sme >= 2 || (self.sme != 0 && self.sme_ver >= 1)
    }
}

/// The boot report's SVE line: `cpu: sve vls=16,32` or `cpu: sve absent`.
pub struct SveLine(pub Option<VlSet>);

impl fmt::Display for SveLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(vls) if !vls.is_empty() => write!(f, "cpu: sve vls={vls}"),
            _ => f.write_str("cpu: sve absent"),
        }
    }
}

/// The boot report's SME line: `cpu: sme vls=16,32 fa64=1 sme2=0` or `cpu: sme absent`.
pub struct SmeLine {
    pub vls: Option<VlSet>,
    pub fa64: bool,
    pub sme2: bool,
}

impl fmt::Display for SmeLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.vls {
            Some(vls) if !vls.is_empty() => write!(
                f,
                "cpu: sme vls={vls} fa64={} sme2={}",
                self.fa64 as u8, self.sme2 as u8
            ),
            _ => f.write_str("cpu: sme absent"),
        }
    }
}

/// The vector lengths a set of CPUs share, built one CPU at a time: user space is offered
/// only lengths every CPU implements (a task may move between them), and the boot report
/// says when the CPUs are not alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlCensus {
    pub sve: VlSet,
    pub sme: VlSet,
    pub sve_differ: bool,
    pub sme_differ: bool,
    cpus: usize,
}

impl Default for VlCensus {
    fn default() -> VlCensus {
        VlCensus::new()
    }
}

impl VlCensus {
    pub const fn new() -> VlCensus {
        VlCensus {
            sve: VlSet::EMPTY,
            sme: VlSet::EMPTY,
            sve_differ: false,
            sme_differ: false,
            cpus: 0,
        }
    }

    /// Counts one CPU's implemented lengths; returns whether they differ from those seen so
    /// far.
    pub fn add(&mut self, sve: VlSet, sme: VlSet) -> bool {
        if self.cpus == 0 {
            (self.sve, self.sme) = (sve, sme);
            self.cpus = 1;
            return false;
        }
        let differs = |all: VlSet, this: VlSet| all != this;
        let (ds, dm) = (differs(self.sve, sve), differs(self.sme, sme));
        self.sve_differ |= ds;
        self.sme_differ |= dm;
        self.sve = self.sve.intersect(sve);
        self.sme = self.sme.intersect(sme);
        self.cpus += 1;
        ds || dm
    }

    pub fn differ(&self) -> bool {
        self.sve_differ || self.sme_differ
    }
}

/// The boot report's line when CPUs' vector lengths differ (nothing when they are alike):
/// `cpu: vls differ sve=1 sme=0 (common sets above)`, after the SVE and SME lines, which give
/// the common sets.
pub struct VlDifferLine<'a>(pub &'a VlCensus);

impl fmt::Display for VlDifferLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.differ() {
            return Ok(());
        }
        write!(
            f,
            "cpu: vls differ sve={} sme={} (common sets above)",
            self.0.sve_differ as u8, self.0.sme_differ as u8
        )
    }
}

/// The generic counter's frequency as Linux settles it: the timer node's `clock-frequency` if
/// the device tree has one (firmware that cannot program CNTFRQ_EL0 says so there), else
/// CNTFRQ_EL0; `None` when both are zero or missing (no time can be kept).
pub fn counter_rate(dt_clock_frequency: Option<u32>, cntfrq: u64) -> Option<u64> {
    match dt_clock_frequency {
        Some(hz) if hz != 0 => Some(hz.into()),
        _ => (cntfrq != 0).then_some(cntfrq),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    /// Values read from QEMU 10.0.2 `-cpu max` (read from the guest).
    fn qemu_max() -> IdRegs {
        IdRegs {
            pfr0: 0x1301_0011_2011_0022,
            pfr1: 0x0000_0010_0100_0121,
            zfr0: 0x0110_1101_0021_0021,
            smfr0: 0x80F1_00FD_0000_0000,
            isar0: 0,
            isar1: 0x0011_0000_0000_1010,
            isar2: 0,
            mmfr0: 1 << 56, // FGT=1 (not from the spec's reading; QEMU max has FEAT_FGT)
            ..IdRegs::default()
        }
    }

    #[test]
    fn decodes_qemu_max() {
        let f = Features::decode(&qemu_max());
        assert!(f.sve);
        assert_eq!(f.sve_ver, 1);
        assert_eq!(f.sme, 1);
        assert!(f.sme_fa64);
        assert_eq!(f.sme_ver, 0);
        assert!(!f.sme2());
        assert!(!f.gic_sysregs, "read on a GICv2 machine");
        assert!(f.pauth);
        assert!(!f.mte2, "virt without mte=on: MTE=1, instructions only");
        assert!(f.fgt);
    }

    #[test]
    fn no_sve_no_sme() {
        let mut r = qemu_max();
        r.pfr0 &= !(0xf << 32);
        r.pfr1 &= !(0xf << 24);
        let f = Features::decode(&r);
        assert!(!f.sve && f.sve_ver == 0);
        assert!(f.sme == 0 && !f.sme_fa64 && !f.sme2());
    }

    #[test]
    fn sme2_from_either_field() {
        let mut r = qemu_max();
        r.pfr1 = (r.pfr1 & !(0xf << 24)) | (2 << 24);
        assert!(Features::decode(&r).sme2());
        let mut r = qemu_max();
        r.smfr0 |= 1 << 56;
        assert!(Features::decode(&r).sme2());
    }

    #[test]
    fn report_lines() {
        let all = VlSet::from_bits(0xffff);
        assert_eq!(
            format!("{}", SveLine(Some(VlSet::from_bits(0b111)))),
            "cpu: sve vls=16,32,48"
        );
        assert_eq!(format!("{}", SveLine(None)), "cpu: sve absent");
        assert_eq!(
            format!("{}", SveLine(Some(VlSet::EMPTY))),
            "cpu: sve absent"
        );
        let sme = SmeLine {
            vls: Some(VlSet::from_bits(0b1000_1011)),
            fa64: true,
            sme2: false,
        };
        assert_eq!(format!("{sme}"), "cpu: sme vls=16,32,64,128 fa64=1 sme2=0");
        let none = SmeLine {
            vls: None,
            fa64: false,
            sme2: false,
        };
        assert_eq!(format!("{none}"), "cpu: sme absent");
        assert_eq!(format!("{}", SveLine(Some(all))).matches(',').count(), 15);
    }

    #[test]
    fn alike_cpus_report_nothing() {
        let mut c = VlCensus::new();
        for _ in 0..256 {
            assert!(!c.add(VlSet::from_bits(0xffff), VlSet::from_bits(0b1011)));
        }
        assert!(!c.differ());
        assert_eq!(c.sve, VlSet::from_bits(0xffff));
        assert_eq!(format!("{}", VlDifferLine(&c)), "");
    }

    #[test]
    fn differing_cpus_use_the_common_set_and_say_so() {
        let mut c = VlCensus::new();
        assert!(!c.add(VlSet::from_bits(0b1111), VlSet::from_bits(0b11)));
        assert!(c.add(VlSet::from_bits(0b1011), VlSet::from_bits(0b11)));
        assert!(!c.add(VlSet::from_bits(0b1011), VlSet::from_bits(0b11)));
        assert_eq!(c.sve, VlSet::from_bits(0b1011));
        assert_eq!(c.sme, VlSet::from_bits(0b11));
        assert!(c.sve_differ && !c.sme_differ);
        assert_eq!(
            format!("{}", VlDifferLine(&c)),
            "cpu: vls differ sve=1 sme=0 (common sets above)"
        );
        // A CPU without SME among ones with it: no SME for anyone.
        let mut d = VlCensus::new();
        d.add(VlSet::from_bits(1), VlSet::from_bits(0b11));
        d.add(VlSet::from_bits(1), VlSet::EMPTY);
        assert!(d.sme.is_empty());
        assert_eq!(
            format!("{}", VlDifferLine(&d)),
            "cpu: vls differ sve=0 sme=1 (common sets above)"
        );
    }

    #[test]
    fn counter_rate_prefers_the_device_tree() {
        assert_eq!(counter_rate(None, 62_500_000), Some(62_500_000));
        assert_eq!(counter_rate(Some(0), 1_000_000_000), Some(1_000_000_000));
        assert_eq!(counter_rate(Some(24_000_000), 0), Some(24_000_000));
        assert_eq!(
            counter_rate(Some(24_000_000), 100_000_000),
            Some(24_000_000)
        );
        assert_eq!(counter_rate(None, 0), None);
    }
}
