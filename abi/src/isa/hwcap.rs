//! AT_HWCAP, AT_HWCAP2, AT_HWCAP3 and /proc/cpuinfo's `Features` line, from one table.
//!
//! Each row of [`HWCAPS`] is one capability: its word and bit (uapi asm/hwcap.h), the name
//! cpuinfo prints, the ID-register test that sets it, and what the kernel must support for it
//! to be offered at all. Rows are in (word, bit) order, which is also the order cpuinfo prints
//! them in. The `HWCAP*_*` constants are generated from the same rows.
//!
//! The rules are Linux 7.3's (arch/arm64/kernel/cpufeature.c): a capability is set when its
//! field is visible to EL0 (idregs' view) and its value is at least the minimum, signed fields
//! compared as signed; SVE and SME capabilities also need the extension itself to be usable.
//! Features the CPU has but the kernel does not handle are left out the way Linux leaves them out
//! when its configuration lacks them: the ID fields read as their safe value and the hwcaps stay
//! clear. [`Offer`] says what the kernel handles; [`Offer::svelt`] lists Svelt's choices.

use crate::isa::cpu::fields::*;
use crate::isa::cpu::{Field, IdRegs};

/// What the kernel handles for user space. A CPU feature whose support is off here is hidden
/// from EL0 (ID fields and hwcaps), as Linux hides what its configuration leaves out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offer {
    /// SVE state is saved and restored (the CPU may still lack SVE).
    pub sve: bool,
    /// SME (and, with the CPU's SME2, ZT0) state is handled.
    pub sme: bool,
    /// EL0 MRS of the ID registers is emulated.
    pub cpuid: bool,
    /// The generic timer's event stream wakes WFE (CNTKCTL_EL1.EVNTEN).
    pub evtstrm: bool,
    /// Per-process pointer-authentication keys and SCTLR_EL1.EnI*/EnD*.
    pub ptr_auth: bool,
    /// PROT_BTI maps guarded pages.
    pub bti: bool,
    /// Memory tagging: PROT_MTE, tag-check faults, the tagged-address controls.
    pub mte: bool,
    /// Guarded control stacks.
    pub gcs: bool,
    /// Permission overlays (POR_EL0).
    pub poe: bool,
    /// FPMR is enabled for EL0 and kept per thread (FP8 instructions read it).
    pub fpmr: bool,
    /// LD64B/ST64B enabled for EL0 (SCTLR_EL1.EnALS).
    pub ls64: bool,
    /// CPY*/SET* enabled (HCRX_EL2.MSCEn) and their migration exceptions handled.
    pub mops: bool,
}

impl Offer {
    /// Linux 7.3 as Debian configures it: every option on.
    pub const LINUX: Offer = Offer {
        sve: true,
        sme: true,
        cpuid: true,
        evtstrm: true,
        ptr_auth: true,
        bti: true,
        mte: true,
        gcs: true,
        poe: true,
        fpmr: true,
        ls64: true,
        mops: true,
    };

    /// What Svelt handles, with SVE and SME as the kernel decided at boot. The rest is not
    /// implemented: no event stream, no pointer-authentication keys (SCTLR_EL1.EnIA.. clear),
    /// no guarded pages, no tags, no overlays, LS64 and MOPS left disabled for EL0. FPMR is
    /// kept per thread (with the FP registers) and guarded control stacks are offered where
    /// the CPU has them (GCS always comes with the permission indirection Svelt needs for it).
    pub const fn svelt(sve: bool, sme: bool) -> Offer {
        Offer {
            sve,
            sme,
            cpuid: true,
            evtstrm: false,
            ptr_auth: false,
            bti: false,
            mte: false,
            gcs: true,
            poe: false,
            fpmr: true,
            ls64: false,
            mops: false,
        }
    }

    /// The supports this offer grants.
    pub const fn grants(self) -> Needs {
        let mut n = 0;
        let flags = [
            (self.sve, Needs::SVE),
            (self.sme, Needs::SME),
            (self.cpuid, Needs::CPUID),
            (self.evtstrm, Needs::EVTSTRM),
            (self.ptr_auth, Needs::PTR_AUTH),
            (self.bti, Needs::BTI),
            (self.mte, Needs::MTE),
            (self.gcs, Needs::GCS),
            (self.poe, Needs::POE),
            (self.fpmr, Needs::FPMR),
            (self.ls64, Needs::LS64),
            (self.mops, Needs::MOPS),
        ];
        let mut i = 0;
        while i < flags.len() {
            if flags[i].0 {
                n |= flags[i].1 .0;
            }
            i += 1;
        }
        Needs(n)
    }

    pub const fn allows(self, needs: Needs) -> bool {
        self.grants().contains(needs)
    }
}

/// A set of kernel supports a capability or an ID field depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Needs(u16);

impl Needs {
    pub const NOTHING: Needs = Needs(0);
    pub const SVE: Needs = Needs(1 << 0);
    pub const SME: Needs = Needs(1 << 1);
    pub const CPUID: Needs = Needs(1 << 2);
    pub const EVTSTRM: Needs = Needs(1 << 3);
    pub const PTR_AUTH: Needs = Needs(1 << 4);
    pub const BTI: Needs = Needs(1 << 5);
    pub const MTE: Needs = Needs(1 << 6);
    pub const GCS: Needs = Needs(1 << 7);
    pub const POE: Needs = Needs(1 << 8);
    pub const FPMR: Needs = Needs(1 << 9);
    pub const LS64: Needs = Needs(1 << 10);
    pub const MOPS: Needs = Needs(1 << 11);

    pub const fn and(self, other: Needs) -> Needs {
        Needs(self.0 | other.0)
    }

    pub const fn without(self, other: Needs) -> Needs {
        Needs(self.0 & !other.0)
    }

    pub const fn contains(self, other: Needs) -> bool {
        self.0 & other.0 == other.0
    }
}

/// How a capability is decided.
#[derive(Clone, Copy, Debug)]
pub enum Test {
    /// No ID field: set whenever the kernel offers what the row needs.
    Offered,
    /// The field is visible to EL0 and holds at least this value.
    AtLeast(Field, i8),
    /// Any of these holds (pointer authentication: any of its algorithms).
    AnyAtLeast(&'static [(Field, i8)]),
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Hwcap {
    /// 1, 2 or 3: AT_HWCAP, AT_HWCAP2, AT_HWCAP3.
    pub word: u8,
    pub bit: u8,
    /// The uapi macro's name, `HWCAP2_SVE2P1`.
    pub uapi: &'static str,
    /// The word /proc/cpuinfo prints.
    pub name: &'static str,
    pub test: Test,
    pub needs: Needs,
}

const fn at_least(field: Field, min: i8) -> Test {
    Test::AtLeast(field, min)
}

/// Builds the `bits` constants and [`HWCAPS`] from rows of
/// `word bit UAPI_NAME "cpuinfo-name": test [, needs];`.
macro_rules! hwcaps {
    ($($word:literal $bit:literal $uapi:ident $name:literal: $test:expr $(, $needs:expr)?;)*) => {
        /// Each capability's bit in its AT_HWCAP word, named as in uapi asm/hwcap.h.
        pub mod bits {
            $(pub const $uapi: u64 = 1 << $bit;)*
        }

        /// Every capability Linux 7.3 defines, in (word, bit) order.
        pub static HWCAPS: &[Hwcap] = &[$(Hwcap {
            word: $word,
            bit: $bit,
            uapi: stringify!($uapi),
            name: $name,
            test: $test,
            needs: Needs::NOTHING $(.and($needs))?,
        },)*];
    };
}

/// What the SME FP8 instructions need: SME and FPMR.
pub(crate) const SME_FP8: Needs = Needs::SME.and(Needs::FPMR);

hwcaps! {
    1 0 HWCAP_FP "fp": at_least(PFR0_FP, 0);
    1 1 HWCAP_ASIMD "asimd": at_least(PFR0_ADVSIMD, 0);
    1 2 HWCAP_EVTSTRM "evtstrm": Test::Offered, Needs::EVTSTRM;
    1 3 HWCAP_AES "aes": at_least(ISAR0_AES, 1);
    1 4 HWCAP_PMULL "pmull": at_least(ISAR0_AES, 2);
    1 5 HWCAP_SHA1 "sha1": at_least(ISAR0_SHA1, 1);
    1 6 HWCAP_SHA2 "sha2": at_least(ISAR0_SHA2, 1);
    1 7 HWCAP_CRC32 "crc32": at_least(ISAR0_CRC32, 1);
    1 8 HWCAP_ATOMICS "atomics": at_least(ISAR0_ATOMIC, 2);
    1 9 HWCAP_FPHP "fphp": at_least(PFR0_FP, 1);
    1 10 HWCAP_ASIMDHP "asimdhp": at_least(PFR0_ADVSIMD, 1);
    1 11 HWCAP_CPUID "cpuid": Test::Offered, Needs::CPUID;
    1 12 HWCAP_ASIMDRDM "asimdrdm": at_least(ISAR0_RDM, 1);
    1 13 HWCAP_JSCVT "jscvt": at_least(ISAR1_JSCVT, 1);
    1 14 HWCAP_FCMA "fcma": at_least(ISAR1_FCMA, 1);
    1 15 HWCAP_LRCPC "lrcpc": at_least(ISAR1_LRCPC, 1);
    1 16 HWCAP_DCPOP "dcpop": at_least(ISAR1_DPB, 1);
    1 17 HWCAP_SHA3 "sha3": at_least(ISAR0_SHA3, 1);
    1 18 HWCAP_SM3 "sm3": at_least(ISAR0_SM3, 1);
    1 19 HWCAP_SM4 "sm4": at_least(ISAR0_SM4, 1);
    1 20 HWCAP_ASIMDDP "asimddp": at_least(ISAR0_DP, 1);
    1 21 HWCAP_SHA512 "sha512": at_least(ISAR0_SHA2, 2);
    1 22 HWCAP_SVE "sve": at_least(PFR0_SVE, 1), Needs::SVE;
    1 23 HWCAP_ASIMDFHM "asimdfhm": at_least(ISAR0_FHM, 1);
    1 24 HWCAP_DIT "dit": at_least(PFR0_DIT, 1);
    1 25 HWCAP_USCAT "uscat": at_least(MMFR2_AT, 1);
    1 26 HWCAP_ILRCPC "ilrcpc": at_least(ISAR1_LRCPC, 2);
    1 27 HWCAP_FLAGM "flagm": at_least(ISAR0_TS, 1);
    1 28 HWCAP_SSBS "ssbs": at_least(PFR1_SSBS, 2);
    1 29 HWCAP_SB "sb": at_least(ISAR1_SB, 1);
    1 30 HWCAP_PACA "paca": Test::AnyAtLeast(&[(ISAR1_APA, 1), (ISAR2_APA3, 1), (ISAR1_API, 1)]),
        Needs::PTR_AUTH;
    1 31 HWCAP_PACG "pacg": Test::AnyAtLeast(&[(ISAR1_GPA, 1), (ISAR2_GPA3, 1), (ISAR1_GPI, 1)]),
        Needs::PTR_AUTH;
    1 32 HWCAP_GCS "gcs": at_least(PFR1_GCS, 1), Needs::GCS;
    1 33 HWCAP_CMPBR "cmpbr": at_least(ISAR2_CSSC, 2);
    1 34 HWCAP_FPRCVT "fprcvt": at_least(ISAR3_FPRCVT, 1);
    1 35 HWCAP_F8MM8 "f8mm8": at_least(FPFR0_F8MM8, 1), Needs::FPMR;
    1 36 HWCAP_F8MM4 "f8mm4": at_least(FPFR0_F8MM4, 1), Needs::FPMR;
    1 37 HWCAP_SVE_F16MM "svef16mm": at_least(ZFR0_F16MM, 1), Needs::SVE;
    1 38 HWCAP_SVE_ELTPERM "sveeltperm": at_least(ZFR0_ELTPERM, 1), Needs::SVE;
    1 39 HWCAP_SVE_AES2 "sveaes2": at_least(ZFR0_AES, 3), Needs::SVE;
    1 40 HWCAP_SVE_BFSCALE "svebfscale": at_least(ZFR0_B16B16, 2), Needs::SVE;
    1 41 HWCAP_SVE2P2 "sve2p2": at_least(ZFR0_SVEVER, 3), Needs::SVE;
    1 42 HWCAP_SME2P2 "sme2p2": at_least(SMFR0_SMEVER, 3), Needs::SME;
    1 43 HWCAP_SME_SBITPERM "smesbitperm": at_least(SMFR0_SBITPERM, 1), Needs::SME;
    1 44 HWCAP_SME_AES "smeaes": at_least(SMFR0_AES, 1), Needs::SME;
    1 45 HWCAP_SME_SFEXPA "smesfexpa": at_least(SMFR0_SFEXPA, 1), Needs::SME;
    1 46 HWCAP_SME_STMOP "smestmop": at_least(SMFR0_STMOP, 1), Needs::SME;
    1 47 HWCAP_SME_SMOP4 "smesmop4": at_least(SMFR0_SMOP4, 1), Needs::SME;

    2 0 HWCAP2_DCPODP "dcpodp": at_least(ISAR1_DPB, 2);
    2 1 HWCAP2_SVE2 "sve2": at_least(ZFR0_SVEVER, 1), Needs::SVE;
    2 2 HWCAP2_SVEAES "sveaes": at_least(ZFR0_AES, 1), Needs::SVE;
    2 3 HWCAP2_SVEPMULL "svepmull": at_least(ZFR0_AES, 2), Needs::SVE;
    2 4 HWCAP2_SVEBITPERM "svebitperm": at_least(ZFR0_BITPERM, 1), Needs::SVE;
    2 5 HWCAP2_SVESHA3 "svesha3": at_least(ZFR0_SHA3, 1), Needs::SVE;
    2 6 HWCAP2_SVESM4 "svesm4": at_least(ZFR0_SM4, 1), Needs::SVE;
    2 7 HWCAP2_FLAGM2 "flagm2": at_least(ISAR0_TS, 2);
    2 8 HWCAP2_FRINT "frint": at_least(ISAR1_FRINTTS, 1);
    2 9 HWCAP2_SVEI8MM "svei8mm": at_least(ZFR0_I8MM, 1), Needs::SVE;
    2 10 HWCAP2_SVEF32MM "svef32mm": at_least(ZFR0_F32MM, 1), Needs::SVE;
    2 11 HWCAP2_SVEF64MM "svef64mm": at_least(ZFR0_F64MM, 1), Needs::SVE;
    2 12 HWCAP2_SVEBF16 "svebf16": at_least(ZFR0_BF16, 1), Needs::SVE;
    2 13 HWCAP2_I8MM "i8mm": at_least(ISAR1_I8MM, 1);
    2 14 HWCAP2_BF16 "bf16": at_least(ISAR1_BF16, 1);
    2 15 HWCAP2_DGH "dgh": at_least(ISAR1_DGH, 1);
    2 16 HWCAP2_RNG "rng": at_least(ISAR0_RNDR, 1);
    2 17 HWCAP2_BTI "bti": at_least(PFR1_BT, 1), Needs::BTI;
    2 18 HWCAP2_MTE "mte": at_least(PFR1_MTE, 2), Needs::MTE;
    2 19 HWCAP2_ECV "ecv": at_least(MMFR0_ECV, 1);
    2 20 HWCAP2_AFP "afp": at_least(MMFR1_AFP, 1);
    2 21 HWCAP2_RPRES "rpres": at_least(ISAR2_RPRES, 1);
    2 22 HWCAP2_MTE3 "mte3": at_least(PFR1_MTE, 3), Needs::MTE;
    2 23 HWCAP2_SME "sme": at_least(PFR1_SME, 1), Needs::SME;
    2 24 HWCAP2_SME_I16I64 "smei16i64": at_least(SMFR0_I16I64, 0xf), Needs::SME;
    2 25 HWCAP2_SME_F64F64 "smef64f64": at_least(SMFR0_F64F64, 1), Needs::SME;
    2 26 HWCAP2_SME_I8I32 "smei8i32": at_least(SMFR0_I8I32, 0xf), Needs::SME;
    2 27 HWCAP2_SME_F16F32 "smef16f32": at_least(SMFR0_F16F32, 1), Needs::SME;
    2 28 HWCAP2_SME_B16F32 "smeb16f32": at_least(SMFR0_B16F32, 1), Needs::SME;
    2 29 HWCAP2_SME_F32F32 "smef32f32": at_least(SMFR0_F32F32, 1), Needs::SME;
    2 30 HWCAP2_SME_FA64 "smefa64": at_least(SMFR0_FA64, 1), Needs::SME;
    2 31 HWCAP2_WFXT "wfxt": at_least(ISAR2_WFXT, 2);
    2 32 HWCAP2_EBF16 "ebf16": at_least(ISAR1_BF16, 2);
    2 33 HWCAP2_SVE_EBF16 "sveebf16": at_least(ZFR0_BF16, 2), Needs::SVE;
    2 34 HWCAP2_CSSC "cssc": at_least(ISAR2_CSSC, 1);
    2 35 HWCAP2_RPRFM "rprfm": at_least(ISAR2_RPRFM, 1);
    2 36 HWCAP2_SVE2P1 "sve2p1": at_least(ZFR0_SVEVER, 2), Needs::SVE;
    2 37 HWCAP2_SME2 "sme2": at_least(SMFR0_SMEVER, 1), Needs::SME;
    2 38 HWCAP2_SME2P1 "sme2p1": at_least(SMFR0_SMEVER, 2), Needs::SME;
    2 39 HWCAP2_SME_I16I32 "smei16i32": at_least(SMFR0_I16I32, 5), Needs::SME;
    2 40 HWCAP2_SME_BI32I32 "smebi32i32": at_least(SMFR0_BI32I32, 1), Needs::SME;
    2 41 HWCAP2_SME_B16B16 "smeb16b16": at_least(SMFR0_B16B16, 1), Needs::SME;
    2 42 HWCAP2_SME_F16F16 "smef16f16": at_least(SMFR0_F16F16, 1), Needs::SME;
    2 43 HWCAP2_MOPS "mops": at_least(ISAR2_MOPS, 1), Needs::MOPS;
    2 44 HWCAP2_HBC "hbc": at_least(ISAR2_BC, 1);
    2 45 HWCAP2_SVE_B16B16 "sveb16b16": at_least(ZFR0_B16B16, 1), Needs::SVE;
    2 46 HWCAP2_LRCPC3 "lrcpc3": at_least(ISAR1_LRCPC, 3);
    2 47 HWCAP2_LSE128 "lse128": at_least(ISAR0_ATOMIC, 3);
    2 48 HWCAP2_FPMR "fpmr": at_least(PFR2_FPMR, 1), Needs::FPMR;
    2 49 HWCAP2_LUT "lut": at_least(ISAR2_LUT, 1);
    2 50 HWCAP2_FAMINMAX "faminmax": at_least(ISAR3_FAMINMAX, 1);
    2 51 HWCAP2_F8CVT "f8cvt": at_least(FPFR0_F8CVT, 1), Needs::FPMR;
    2 52 HWCAP2_F8FMA "f8fma": at_least(FPFR0_F8FMA, 1), Needs::FPMR;
    2 53 HWCAP2_F8DP4 "f8dp4": at_least(FPFR0_F8DP4, 1), Needs::FPMR;
    2 54 HWCAP2_F8DP2 "f8dp2": at_least(FPFR0_F8DP2, 1), Needs::FPMR;
    2 55 HWCAP2_F8E4M3 "f8e4m3": at_least(FPFR0_F8E4M3, 1), Needs::FPMR;
    2 56 HWCAP2_F8E5M2 "f8e5m2": at_least(FPFR0_F8E5M2, 1), Needs::FPMR;
    2 57 HWCAP2_SME_LUTV2 "smelutv2": at_least(SMFR0_LUTV2, 1), Needs::SME;
    2 58 HWCAP2_SME_F8F16 "smef8f16": at_least(SMFR0_F8F16, 1), SME_FP8;
    2 59 HWCAP2_SME_F8F32 "smef8f32": at_least(SMFR0_F8F32, 1), SME_FP8;
    2 60 HWCAP2_SME_SF8FMA "smesf8fma": at_least(SMFR0_SF8FMA, 1), SME_FP8;
    2 61 HWCAP2_SME_SF8DP4 "smesf8dp4": at_least(SMFR0_SF8DP4, 1), SME_FP8;
    2 62 HWCAP2_SME_SF8DP2 "smesf8dp2": at_least(SMFR0_SF8DP2, 1), SME_FP8;
    2 63 HWCAP2_POE "poe": at_least(MMFR3_S1POE, 1), Needs::POE;

    3 0 HWCAP3_MTE_FAR "mtefar": at_least(PFR2_MTEFAR, 1), Needs::MTE;
    3 1 HWCAP3_MTE_STORE_ONLY "mtestoreonly": at_least(PFR2_MTESTOREONLY, 1), Needs::MTE;
    3 2 HWCAP3_LSFE "lsfe": at_least(ISAR3_LSFE, 1);
    3 3 HWCAP3_LS64 "ls64": at_least(ISAR1_LS64, 1), Needs::LS64;
    3 4 HWCAP3_SVE_B16MM "sveb16mm": at_least(ZFR0_B16B16, 3), Needs::SVE;
    3 5 HWCAP3_SVE2P3 "sve2p3": at_least(ZFR0_SVEVER, 4), Needs::SVE;
    3 6 HWCAP3_SME_LUT6 "smelut6": at_least(SMFR0_LUT6, 1), Needs::SME;
    3 7 HWCAP3_SME2P3 "sme2p3": at_least(SMFR0_SMEVER, 4), Needs::SME;
    3 8 HWCAP3_F16MM "f16mm": at_least(FPFR0_F16MM2, 1);
    3 9 HWCAP3_F16F32DOT "f16f32dot": at_least(ISAR0_FHM, 2);
    3 10 HWCAP3_F16F32MM "f16f32mm": at_least(ISAR0_FHM, 3);
    3 11 HWCAP3_SVE_LUT6 "svelut6": at_least(ISAR2_LUT, 2), Needs::SVE;
}

pub use bits::*;

/// The three hwcap words: AT_HWCAP, AT_HWCAP2, AT_HWCAP3.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hwcaps(pub [u64; 3]);

impl Hwcaps {
    pub const fn has(&self, cap: &Hwcap) -> bool {
        self.0[cap.word as usize - 1] >> cap.bit & 1 != 0
    }

    /// The `Features` words of /proc/cpuinfo, in Linux's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        HWCAPS.iter().filter(move |c| self.has(c)).map(|c| c.name)
    }
}

impl Test {
    /// Whether the EL0 view passes this test (`regs` raw or already the view: visible fields
    /// read the same in both).
    fn passes(&self, regs: &IdRegs, offer: Offer) -> bool {
        let one = |&(field, min): &(Field, i8)| {
            let v = field.value(regs);
            crate::isa::idregs::visible(field, offer) && v >= i64::from(min) && v <= field.max()
        };
        match self {
            Test::Offered => true,
            Test::AtLeast(field, min) => one(&(*field, *min)),
            Test::AnyAtLeast(alts) => alts.iter().any(one),
        }
    }
}

/// The hwcaps for ID registers `regs` (raw values, or the EL0 view of them) under `offer`.
pub fn hwcaps(regs: &IdRegs, offer: Offer) -> Hwcaps {
    // SVE and SME are usable only when the CPU has them and the kernel offers them, that is
    // when the EL0 view shows them.
    let mut grants = offer.grants();
    for (field, ext) in [(PFR0_SVE, Needs::SVE), (PFR1_SME, Needs::SME)] {
        if !(crate::isa::idregs::visible(field, offer) && field.value(regs) >= 1) {
            grants = grants.without(ext);
        }
    }
    let mut words = [0u64; 3];
    for cap in HWCAPS {
        if grants.contains(cap.needs) && cap.test.passes(regs, offer) {
            words[cap.word as usize - 1] |= 1 << cap.bit;
        }
    }
    Hwcaps(words)
}

#[cfg(test)]
mod tests;
