//! AT_HWCAP / AT_HWCAP2 and /proc/cpuinfo's `Features` line, from ID register values.
//!
//! Each capability is one row: which register field, the minimum value, which hwcap word and
//! bit, and the name Linux prints. Rows are in Linux's bit order, which is also cpuinfo's order.

use crate::cpu::IdRegs;

#[derive(Clone, Copy)]
enum Reg {
    Isar0,
    Isar1,
    Isar2,
    Mmfr2,
    Pfr0,
    Pfr1,
    Zfr0,
    Smfr0,
}

struct Cap {
    reg: Reg,
    shift: u32,
    /// Minimum field value (fields are unsigned here, except FP/AdvSIMD handled by `Signed`).
    min: u8,
    word: u8,
    bit: u32,
    name: &'static str,
    /// Needs SVE (or SME for SME rows) to be enabled for user space.
    gate: Gate,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Gate {
    None,
    Sve,
    Sme,
}

const fn cap(
    reg: Reg,
    shift: u32,
    min: u8,
    word: u8,
    bit: u32,
    name: &'static str,
    gate: Gate,
) -> Cap {
    Cap {
        reg,
        shift,
        min,
        word,
        bit,
        name,
        gate,
    }
}

use Gate::{None as G, Sme, Sve};
use Reg::*;

const CAPS: &[Cap] = &[
    cap(Isar0, 4, 1, 1, 3, "aes", G),
    cap(Isar0, 4, 2, 1, 4, "pmull", G),
    cap(Isar0, 8, 1, 1, 5, "sha1", G),
    cap(Isar0, 12, 1, 1, 6, "sha2", G),
    cap(Isar0, 16, 1, 1, 7, "crc32", G),
    cap(Isar0, 20, 2, 1, 8, "atomics", G),
    cap(Isar0, 28, 1, 1, 12, "asimdrdm", G),
    cap(Isar1, 12, 1, 1, 13, "jscvt", G),
    cap(Isar1, 16, 1, 1, 14, "fcma", G),
    cap(Isar1, 20, 1, 1, 15, "lrcpc", G),
    cap(Isar1, 0, 1, 1, 16, "dcpop", G),
    cap(Isar0, 32, 1, 1, 17, "sha3", G),
    cap(Isar0, 36, 1, 1, 18, "sm3", G),
    cap(Isar0, 40, 1, 1, 19, "sm4", G),
    cap(Isar0, 44, 1, 1, 20, "asimddp", G),
    cap(Isar0, 12, 2, 1, 21, "sha512", G),
    cap(Pfr0, 32, 1, 1, 22, "sve", Sve),
    cap(Isar0, 48, 1, 1, 23, "asimdfhm", G),
    cap(Pfr0, 48, 1, 1, 24, "dit", G),
    cap(Mmfr2, 32, 1, 1, 25, "uscat", G),
    cap(Isar1, 20, 2, 1, 26, "ilrcpc", G),
    cap(Isar0, 52, 1, 1, 27, "flagm", G),
    cap(Pfr1, 4, 2, 1, 28, "ssbs", G),
    cap(Isar1, 36, 1, 1, 29, "sb", G),
    cap(Isar1, 4, 1, 1, 30, "paca", G),
    cap(Isar1, 24, 1, 1, 31, "pacg", G),
    cap(Isar1, 0, 2, 2, 0, "dcpodp", G),
    cap(Zfr0, 0, 1, 2, 1, "sve2", Sve),
    cap(Zfr0, 4, 1, 2, 2, "sveaes", Sve),
    cap(Zfr0, 4, 2, 2, 3, "svepmull", Sve),
    cap(Zfr0, 16, 1, 2, 4, "svebitperm", Sve),
    cap(Zfr0, 32, 1, 2, 5, "svesha3", Sve),
    cap(Zfr0, 40, 1, 2, 6, "svesm4", Sve),
    cap(Isar0, 52, 2, 2, 7, "flagm2", G),
    cap(Isar1, 32, 1, 2, 8, "frint", G),
    cap(Zfr0, 44, 1, 2, 9, "svei8mm", Sve),
    cap(Zfr0, 52, 1, 2, 10, "svef32mm", Sve),
    cap(Zfr0, 56, 1, 2, 11, "svef64mm", Sve),
    cap(Zfr0, 20, 1, 2, 12, "svebf16", Sve),
    cap(Isar1, 52, 1, 2, 13, "i8mm", G),
    cap(Isar1, 44, 1, 2, 14, "bf16", G),
    cap(Isar1, 48, 1, 2, 15, "dgh", G),
    cap(Isar0, 60, 1, 2, 16, "rng", G),
    cap(Pfr1, 0, 1, 2, 17, "bti", G),
    cap(Pfr1, 24, 1, 2, 23, "sme", Sme),
    cap(Smfr0, 52, 0xf, 2, 24, "smei16i64", Sme),
    cap(Smfr0, 48, 1, 2, 25, "smef64f64", Sme),
    cap(Smfr0, 36, 0xf, 2, 26, "smei8i32", Sme),
    cap(Smfr0, 35, 1, 2, 27, "smef16f32", Sme),
    cap(Smfr0, 34, 1, 2, 28, "smeb16f32", Sme),
    cap(Smfr0, 32, 1, 2, 29, "smef32f32", Sme),
    cap(Smfr0, 63, 1, 2, 30, "smefa64", Sme),
    cap(Isar1, 44, 2, 2, 32, "ebf16", G),
    cap(Zfr0, 20, 2, 2, 33, "sveebf16", Sve),
    cap(Isar2, 48, 1, 2, 35, "rprfm", G),
    cap(Zfr0, 0, 2, 2, 36, "sve2p1", Sve),
    cap(Smfr0, 56, 1, 2, 37, "sme2", Sme),
    cap(Smfr0, 56, 2, 2, 38, "sme2p1", Sme),
    cap(Isar2, 20, 1, 2, 44, "hbc", G),
];

pub const HWCAP_FP: u64 = 1 << 0;
pub const HWCAP_ASIMD: u64 = 1 << 1;
pub const HWCAP_FPHP: u64 = 1 << 9;
pub const HWCAP_ASIMDHP: u64 = 1 << 10;
pub const HWCAP_CPUID: u64 = 1 << 11;
pub const HWCAP_SVE: u64 = 1 << 22;
pub const HWCAP2_SVE2: u64 = 1 << 1;
pub const HWCAP2_SME: u64 = 1 << 23;
pub const HWCAP2_SME_FA64: u64 = 1 << 30;
pub const HWCAP2_SME2: u64 = 1 << 37;

/// What the kernel offers user space beyond the ID registers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Offer {
    /// SVE usable from EL0 (the kernel handles its traps and state).
    pub sve: bool,
    /// SME usable from EL0.
    pub sme: bool,
    /// EL0 MRS of ID registers is emulated.
    pub cpuid: bool,
}

fn field(r: &IdRegs, reg: Reg, shift: u32) -> u8 {
    let v = match reg {
        Isar0 => r.isar0,
        Isar1 => r.isar1,
        Isar2 => r.isar2,
        Mmfr2 => r.mmfr2,
        Pfr0 => r.pfr0,
        Pfr1 => r.pfr1,
        Zfr0 => r.zfr0,
        Smfr0 => r.smfr0,
    };
    // Single-bit SMFR0 fields (F32F32 and friends, FA64) are read as one bit.
    let width = if matches!(reg, Smfr0) && !matches!(shift, 36 | 52 | 56 | 60) {
        1
    } else {
        4
    };
    ((v >> shift) & ((1 << width) - 1)) as u8
}

/// (AT_HWCAP, AT_HWCAP2).
pub fn hwcaps(r: &IdRegs, offer: Offer) -> (u64, u64) {
    let (mut h1, mut h2) = (0u64, 0u64);
    // FP and AdvSIMD are signed fields: 0xf means absent, 1 adds half precision.
    let fp = ((r.pfr0 >> 16) & 0xf) as u8;
    let simd = ((r.pfr0 >> 20) & 0xf) as u8;
    if fp != 0xf {
        h1 |= HWCAP_FP;
        if fp >= 1 {
            h1 |= HWCAP_FPHP;
        }
    }
    if simd != 0xf {
        h1 |= HWCAP_ASIMD;
        if simd >= 1 {
            h1 |= HWCAP_ASIMDHP;
        }
    }
    if offer.cpuid {
        h1 |= HWCAP_CPUID;
    }
    for c in CAPS {
        let allowed = match c.gate {
            Gate::None => true,
            Gate::Sve => offer.sve && field(r, Pfr0, 32) >= 1,
            Gate::Sme => offer.sme && field(r, Pfr1, 24) >= 1,
        };
        if allowed && field(r, c.reg, c.shift) >= c.min {
            if c.word == 1 {
                h1 |= 1 << c.bit;
            } else {
                h2 |= 1 << c.bit;
            }
        }
    }
    (h1, h2)
}

/// The `Features` line's words for these hwcaps, in Linux's order.
pub fn feature_names(h1: u64, h2: u64) -> impl Iterator<Item = &'static str> {
    const FIRST: [(u64, &str); 6] = [
        (HWCAP_FP, "fp"),
        (HWCAP_ASIMD, "asimd"),
        (1 << 2, "evtstrm"),
        (HWCAP_FPHP, "fphp"),
        (HWCAP_ASIMDHP, "asimdhp"),
        (HWCAP_CPUID, "cpuid"),
    ];
    // Linux's order: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid ...
    let early = FIRST[..3]
        .iter()
        .filter(move |(b, _)| h1 & b != 0)
        .map(|(_, n)| *n);
    let mid1 = CAPS
        .iter()
        .filter(|c| c.word == 1 && c.bit < 9)
        .filter(move |c| h1 & (1 << c.bit) != 0);
    let late = FIRST[3..]
        .iter()
        .filter(move |(b, _)| h1 & b != 0)
        .map(|(_, n)| *n);
    let rest1 = CAPS
        .iter()
        .filter(|c| c.word == 1 && c.bit > 11)
        .filter(move |c| h1 & (1 << c.bit) != 0);
    let rest2 = CAPS
        .iter()
        .filter(|c| c.word == 2)
        .filter(move |c| h2 & (1 << c.bit) != 0);
    early
        .chain(mid1.map(|c| c.name))
        .chain(late)
        .chain(rest1.map(|c| c.name))
        .chain(rest2.map(|c| c.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn qemu_max() -> IdRegs {
        IdRegs {
            pfr0: 0x1301_0011_2011_0022,
            pfr1: 0x0000_0010_0100_0121,
            zfr0: 0x0110_1101_0021_0021,
            smfr0: 0x80F1_00FD_0000_0000,
            isar0: 0x1021_1111_1021_2120, // AES+PMULL, SHA1, SHA512, CRC32, LSE, RDM, ... (illustrative)
            isar1: 0x0011_1110_0021_1021,
            isar2: 0,
            mmfr0: 0,
            ..IdRegs::default()
        }
    }

    #[test]
    fn sve_and_sme_only_when_offered() {
        let r = qemu_max();
        let (h1, h2) = hwcaps(&r, Offer::default());
        assert_eq!(h1 & HWCAP_SVE, 0);
        assert_eq!(h2 & (HWCAP2_SVE2 | HWCAP2_SME | HWCAP2_SME_FA64), 0);
        assert_ne!(h1 & (HWCAP_FP | HWCAP_ASIMD), 0);
        let (h1, h2) = hwcaps(
            &r,
            Offer {
                sve: true,
                sme: true,
                cpuid: true,
            },
        );
        assert_ne!(h1 & HWCAP_SVE, 0);
        assert_ne!(h1 & HWCAP_CPUID, 0);
        assert_ne!(h2 & HWCAP2_SVE2, 0);
        assert_ne!(h2 & HWCAP2_SME, 0);
        assert_ne!(h2 & HWCAP2_SME_FA64, 0);
        assert_eq!(h2 & HWCAP2_SME2, 0);
    }

    #[test]
    fn features_line_order() {
        let (h1, h2) = hwcaps(
            &qemu_max(),
            Offer {
                sve: true,
                sme: true,
                cpuid: true,
            },
        );
        let names: Vec<&str> = feature_names(h1, h2).collect();
        assert_eq!(&names[..4], ["fp", "asimd", "aes", "pmull"]);
        let pos = |n: &str| names.iter().position(|&x| x == n).unwrap();
        assert!(
            pos("atomics") < pos("fphp")
                && pos("fphp") < pos("cpuid")
                && pos("cpuid") < pos("asimdrdm")
        );
        assert!(pos("sve") < pos("sve2") && pos("sve2") < pos("sme"));
    }

    #[test]
    fn no_fp_means_no_fp_caps() {
        let mut r = qemu_max();
        r.pfr0 |= 0xff << 16;
        let (h1, _) = hwcaps(&r, Offer::default());
        assert_eq!(
            h1 & (HWCAP_FP | HWCAP_ASIMD | HWCAP_FPHP | HWCAP_ASIMDHP),
            0
        );
    }
}
