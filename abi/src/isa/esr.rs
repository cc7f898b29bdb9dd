//! Exception Syndrome Register decoding (ESR_EL1 / ESR_EL2).
//!
//! ESR_ELx: EC [31:26], IL [25], ISS [24:0], ISS2 [55:32].

use core::fmt;

/// Exception classes Svelt names. Anything else is `Other(ec)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ec {
    Unknown,
    Wfx,
    FpAccess,
    IllegalState,
    Svc64,
    Hvc64,
    Smc64,
    SysReg,
    SveAccess,
    SmeAccess,
    InstrAbortLower,
    InstrAbortSame,
    PcAlignment,
    DataAbortLower,
    DataAbortSame,
    SpAlignment,
    FpException,
    SError,
    BreakpointLower,
    BreakpointSame,
    StepLower,
    StepSame,
    WatchpointLower,
    WatchpointSame,
    Brk,
    /// A guarded-control-stack check failed (EC 0x2D).
    Gcs,
    /// A CPY*/SET* sequence cannot go on as it stands (EC 0x27): it was resumed on a CPU
    /// that uses the other algorithm option, or its instructions were not run in order.
    Mops,
    Other(u8),
}

impl Ec {
    #[inline]
    pub fn from_raw(ec: u8) -> Ec {
        match ec {
            0x00 => Ec::Unknown,
            0x01 => Ec::Wfx,
            0x07 => Ec::FpAccess,
            0x0e => Ec::IllegalState,
            0x15 => Ec::Svc64,
            0x16 => Ec::Hvc64,
            0x17 => Ec::Smc64,
            0x18 => Ec::SysReg,
            0x19 => Ec::SveAccess,
            0x1d => Ec::SmeAccess,
            0x20 => Ec::InstrAbortLower,
            0x21 => Ec::InstrAbortSame,
            0x22 => Ec::PcAlignment,
            0x24 => Ec::DataAbortLower,
            0x2d => Ec::Gcs,
            0x27 => Ec::Mops,
            0x25 => Ec::DataAbortSame,
            0x26 => Ec::SpAlignment,
            0x2c => Ec::FpException,
            0x2f => Ec::SError,
            0x30 => Ec::BreakpointLower,
            0x31 => Ec::BreakpointSame,
            0x32 => Ec::StepLower,
            0x33 => Ec::StepSame,
            0x34 => Ec::WatchpointLower,
            0x35 => Ec::WatchpointSame,
            0x3c => Ec::Brk,
            other => Ec::Other(other),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ec::Unknown => "unknown/undefined instruction",
            Ec::Wfx => "WFI/WFE",
            Ec::FpAccess => "FP/SIMD access trap",
            Ec::IllegalState => "illegal execution state",
            Ec::Svc64 => "SVC (AArch64)",
            Ec::Hvc64 => "HVC (AArch64)",
            Ec::Smc64 => "SMC (AArch64)",
            Ec::SysReg => "MSR/MRS/system instruction trap",
            Ec::SveAccess => "SVE access trap",
            Ec::SmeAccess => "SME trap",
            Ec::InstrAbortLower => "instruction abort from a lower EL",
            Ec::InstrAbortSame => "instruction abort from the same EL",
            Ec::PcAlignment => "PC alignment fault",
            Ec::DataAbortLower => "data abort from a lower EL",
            Ec::DataAbortSame => "data abort from the same EL",
            Ec::SpAlignment => "SP alignment fault",
            Ec::FpException => "trapped FP exception",
            Ec::SError => "SError",
            Ec::BreakpointLower | Ec::BreakpointSame => "breakpoint",
            Ec::StepLower | Ec::StepSame => "software step",
            Ec::WatchpointLower | Ec::WatchpointSame => "watchpoint",
            Ec::Brk => "BRK instruction",
            Ec::Gcs => "guarded control stack check",
            Ec::Mops => "memory copy/set sequence exception",
            Ec::Other(_) => "unrecognised exception class",
        }
    }

    pub fn is_abort(self) -> bool {
        matches!(
            self,
            Ec::InstrAbortLower | Ec::InstrAbortSame | Ec::DataAbortLower | Ec::DataAbortSame
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Esr(pub u64);

impl Esr {
    #[inline]
    pub fn ec_raw(self) -> u8 {
        ((self.0 >> 26) & 0x3f) as u8
    }
    #[inline]
    pub fn ec(self) -> Ec {
        Ec::from_raw(self.ec_raw())
    }
    pub fn il(self) -> bool {
        self.0 & (1 << 25) != 0
    }
    pub fn iss(self) -> u32 {
        (self.0 & 0x1ff_ffff) as u32
    }
    /// Data/instruction abort: fault status code, ISS[5:0].
    pub fn fsc(self) -> u8 {
        (self.0 & 0x3f) as u8
    }
    /// Data abort: write not read.
    pub fn wnr(self) -> bool {
        self.0 & (1 << 6) != 0
    }
    /// Data abort from a GCS instruction's access (ISS2.GCS, ESR bit 40).
    pub fn gcs_access(self) -> bool {
        self.0 & (1 << 40) != 0
    }
    /// Abort: FAR is not valid.
    pub fn fnv(self) -> bool {
        self.0 & (1 << 10) != 0
    }
    /// SME trap code, ISS[2:0].
    #[inline]
    pub fn smtc(self) -> u8 {
        (self.0 & 7) as u8
    }
}

/// Describes an abort's fault status code.
pub fn fsc_name(fsc: u8) -> &'static str {
    match fsc {
        0x00..=0x03 => "address size fault",
        0x04..=0x07 => "translation fault",
        0x08..=0x0b => "access flag fault",
        0x0c..=0x0f => "permission fault",
        0x10 => "synchronous external abort",
        0x21 => "alignment fault",
        0x30 => "TLB conflict abort",
        _ => "other fault",
    }
}

/// `EC 0x25 (data abort from the same EL), IL=1, ISS 0x000046: translation fault level 2, write`
impl fmt::Display for Esr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ec = self.ec();
        write!(
            f,
            "EC {:#04x} ({}), IL={}, ISS {:#09x}",
            self.ec_raw(),
            ec.name(),
            self.il() as u8,
            self.iss()
        )?;
        if ec.is_abort() {
            let fsc = self.fsc();
            write!(f, ": {}", fsc_name(fsc))?;
            if fsc < 0x10 {
                write!(f, " level {}", fsc & 3)?;
            }
            if matches!(ec, Ec::DataAbortLower | Ec::DataAbortSame) {
                f.write_str(if self.wnr() { ", write" } else { ", read" })?;
            }
            if self.fnv() {
                f.write_str(", FAR not valid")?;
            }
        } else if ec == Ec::SmeAccess {
            write!(f, ": SMTC {}", self.smtc())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    #[test]
    fn data_abort_write() {
        let e = Esr((0x25 << 26) | (1 << 25) | (1 << 6) | 0x06);
        assert_eq!(e.ec(), Ec::DataAbortSame);
        assert_eq!(
            format!("{e}"),
            "EC 0x25 (data abort from the same EL), IL=1, ISS 0x0000046: translation fault level 2, write"
        );
    }

    #[test]
    fn observed_qemu_syndromes() {
        // Arm ARM D24.2.40 (ESR_EL1): FP 0x1FE00000, SVE 0x66000000, SME 0x76000000 | SMTC.
        assert_eq!(Esr(0x1FE0_0000).ec(), Ec::FpAccess);
        assert_eq!(Esr(0x6600_0000).ec(), Ec::SveAccess);
        let sme = Esr(0x7600_0003);
        assert_eq!(sme.ec(), Ec::SmeAccess);
        assert_eq!(sme.smtc(), 3);
        assert!(format!("{sme}").ends_with("SMTC 3"));
    }

    #[test]
    fn unknown_classes_are_kept() {
        assert_eq!(Esr(0x3e << 26).ec(), Ec::Other(0x3e));
        assert_eq!(fsc_name(0x21), "alignment fault");
        assert_eq!(fsc_name(0x3f), "other fault");
    }
}
