//! System registers that aarch64-cpu does not declare (or declares without the SVE/SME fields),
//! in its style: one place, encodings by generic name (they assemble without +sve/+sme), fields
//! as tock-registers bitfields.

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::register_bitfields;

/// Declares a system register type with `get`/`set` through MRS/MSR on its generic encoding.
/// `ro`/`rw` registers read without side effects (`Readable::get`, so fields can be extracted
/// from one read); an `effects` register is one whose read changes state (acknowledging an
/// interrupt) and has only `read_with_effects`, so no field accessor can read it twice.
macro_rules! sys_reg {
    ($(#[$doc:meta])* $ty:ident, $reg:ident, $enc:literal, effects) => {
        $(#[$doc])*
        pub struct $ty;
        impl $ty {
            /// Reads the register once; the read itself has the effect its doc describes.
            #[inline]
            pub fn read_with_effects(&self) -> u64 {
                let v;
                // SAFETY: the read changes only the state its doc names (no memory, no
                // translation); not `pure`, so the compiler neither repeats nor drops it.
                unsafe { core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) v, options(nostack)) };
                v
            }
        }
        pub const $reg: $ty = $ty;
    };
    ($(#[$doc:meta])* $ty:ident, $reg:ident, $enc:literal, $bits:ty, ro) => {
        $(#[$doc])*
        pub struct $ty;
        impl Readable for $ty {
            type T = u64;
            type R = $bits;
            #[inline]
            fn get(&self) -> u64 {
                let v;
                // SAFETY: reading this system register has no side effects.
                unsafe { core::arch::asm!(concat!("mrs {}, ", $enc), out(reg) v, options(nomem, nostack)) };
                v
            }
        }
        pub const $reg: $ty = $ty;
    };
    ($(#[$doc:meta])* $ty:ident, $reg:ident, $enc:literal, $bits:ty, rw) => {
        sys_reg!($(#[$doc])* $ty, $reg, $enc, $bits, ro);
        impl Writeable for $ty {
            type T = u64;
            type R = $bits;
            #[inline]
            fn set(&self, value: u64) {
                // SAFETY: the callers own this CPU's configuration of these registers (boot code,
                // FP state switching); none of them changes memory mappings.
                unsafe { core::arch::asm!(concat!("msr ", $enc, ", {}"), in(reg) value, options(nomem, nostack)) };
            }
        }
    };
}

register_bitfields! {u64,
    pub CPACR [
        /// SME: 0b01 EL0 traps, 0b11 nothing traps.
        SMEN OFFSET(24) NUMBITS(2) [TrapAll = 0, TrapEl0 = 1, TrapNone = 3],
        FPEN OFFSET(20) NUMBITS(2) [TrapAll = 0, TrapEl0 = 1, TrapNone = 3],
        ZEN OFFSET(16) NUMBITS(2) [TrapAll = 0, TrapEl0 = 1, TrapNone = 3]
    ],
    pub ZCR [
        LEN OFFSET(0) NUMBITS(9) []
    ],
    pub SMCR [
        FA64 OFFSET(31) NUMBITS(1) [],
        EZT0 OFFSET(30) NUMBITS(1) [],
        LEN OFFSET(0) NUMBITS(9) []
    ],
    pub NOFIELDS [
        VALUE OFFSET(0) NUMBITS(64) []
    ]
}

sys_reg!(
    /// Architectural Feature Access Control (with SMEN, which aarch64-cpu lacks).
    CpacrEl1, CPACR_EL1, "S3_0_C1_C0_2", CPACR::Register, rw);
sys_reg!(
    /// SVE Control Register for EL1: LEN sets the vector length for EL1 and EL0.
    ZcrEl1, ZCR_EL1, "S3_0_C1_C2_0", ZCR::Register, rw);
sys_reg!(
    /// SME Control Register for EL1: LEN sets the streaming vector length; FA64, EZT0.
    SmcrEl1, SMCR_EL1, "S3_0_C1_C2_6", SMCR::Register, rw);
sys_reg!(
    /// SME priority; Svelt, like Linux, writes 0.
    SmpriEl1, SMPRI_EL1, "S3_0_C1_C2_4", NOFIELDS::Register, rw);
sys_reg!(
    IdAa64Zfr0El1,
    ID_AA64ZFR0_EL1,
    "S3_0_C0_C4_4",
    NOFIELDS::Register,
    ro
);
sys_reg!(
    IdAa64Smfr0El1,
    ID_AA64SMFR0_EL1,
    "S3_0_C0_C4_5",
    NOFIELDS::Register,
    ro
);
sys_reg!(
    IdAa64Isar2El1,
    ID_AA64ISAR2_EL1,
    "S3_0_C0_C6_2",
    NOFIELDS::Register,
    ro
);

// GICv3 CPU interface (system-register access).
sys_reg!(
    IccSreEl1,
    ICC_SRE_EL1,
    "S3_0_C12_C12_5",
    NOFIELDS::Register,
    rw
);
sys_reg!(
    IccPmrEl1,
    ICC_PMR_EL1,
    "S3_0_C4_C6_0",
    NOFIELDS::Register,
    rw
);
sys_reg!(
    IccBpr1El1,
    ICC_BPR1_EL1,
    "S3_0_C12_C12_3",
    NOFIELDS::Register,
    rw
);
sys_reg!(
    IccIgrpen1El1,
    ICC_IGRPEN1_EL1,
    "S3_0_C12_C12_7",
    NOFIELDS::Register,
    rw
);
sys_reg!(
    /// Reading it acknowledges the highest-priority pending Group 1 interrupt (it becomes
    /// active) and returns its INTID.
    IccIar1El1,
    ICC_IAR1_EL1,
    "S3_0_C12_C12_0",
    effects
);
sys_reg!(
    IccEoir1El1,
    ICC_EOIR1_EL1,
    "S3_0_C12_C12_1",
    NOFIELDS::Register,
    rw
);
sys_reg!(
    IccSgi1rEl1,
    ICC_SGI1R_EL1,
    "S3_0_C12_C11_5",
    NOFIELDS::Register,
    rw
);
