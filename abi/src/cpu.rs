//! CPU features decoded from the AArch64 ID registers.
//!
//! The kernel reads the raw ID_AA64* values once per CPU and decodes them here. Field positions
//! follow the Arm ARM (see spec/arch-registers.md §4).

use crate::vl::VlSet;
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

const fn field(reg: u64, shift: u32) -> u8 {
    ((reg >> shift) & 0xf) as u8
}

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
}

impl Features {
    pub fn decode(r: &IdRegs) -> Features {
        let sve = field(r.pfr0, 32) != 0;
        let sme = field(r.pfr1, 24);
        Features {
            sve,
            sve_ver: if sve { field(r.zfr0, 0) } else { 0 },
            sme,
            sme_fa64: sme != 0 && r.smfr0 >> 63 != 0,
            sme_ver: if sme != 0 { field(r.smfr0, 56) } else { 0 },
            gic_sysregs: field(r.pfr0, 24) != 0,
            pauth: [4, 8, 24, 28].iter().any(|&s| field(r.isar1, s) != 0)
                || [8, 12].iter().any(|&s| field(r.isar2, s) != 0),
            mte2: field(r.pfr1, 8) >= 2,
            fgt: field(r.mmfr0, 56) != 0,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    /// Values read from QEMU 10.0.2 `-cpu max` (spec/arch-registers.md §4).
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
}
