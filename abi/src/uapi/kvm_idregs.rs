//! Writing a VM's ID registers (Linux 7.3's arch/arm64/kvm/sys_regs.c, `set_id_reg` and
//! `arm64_check_features`; the field kinds are arch/arm64/kernel/cpufeature.c's tables): which
//! bits of each register a VMM may change (KVM_ARM_GET_REG_WRITABLE_MASKS), and whether a value
//! is a "safe" subset of the VM's limit, field by field.
//!
//! Registers are named by their index in KVM's feature ID range
//! (`KVM_ARM_FEATURE_ID_RANGE_IDX`): op0=3, CRn=0, op1 0, 1 or 3 (as 0, 1, 2), CRm 0..=7,
//! op2 0..=7.

use super::errno::Errno;
use super::tty::ior;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `struct reg_mask_range`: where to write the masks, which range (only 0, the feature ID
/// registers), and thirteen reserved words that must be 0.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct RegMaskRange {
    pub addr: u64,
    pub range: u32,
    pub reserved: [u32; 13],
}
const _: () = assert!(core::mem::size_of::<RegMaskRange>() == 64);

/// KVM_ARM_GET_REG_WRITABLE_MASKS (a VM ioctl, `_IOR(KVMIO, 0xb6, struct reg_mask_range)`).
pub const KVM_ARM_GET_REG_WRITABLE_MASKS: u32 = ior(super::kvm::KVMIO, 0xb6, 64);
/// Number of masks the ioctl writes (3 op1 values × 8 CRm × 8 op2).
pub const FEATURE_ID_RANGE_SIZE: usize = 3 * 8 * 8;
pub const KVM_CAP_ARM_SUPPORTED_REG_MASK_RANGES: u64 = 230;
pub const KVM_CAP_ARM_WRITABLE_IMP_ID_REGS: u64 = 239;

/// The feature ID range index of op0=3, `op1`, CRn=0, `crm`, `op2`.
pub const fn idx(op1: u8, crm: u8, op2: u8) -> usize {
    let op1 = (op1 & 3) as usize;
    let op1 = op1 - (op1 == 3) as usize;
    op1 << 6 | ((crm & 7) as usize) << 3 | (op2 & 7) as usize
}

/// The index of a one-reg sysreg ID (its low 16 bits are the encoding), if it lies in the range.
pub fn idx_of_sysreg(id: u64) -> Option<usize> {
    let (op0, op1, crn, crm, op2) = super::kvm::sysreg_fields(id);
    (op0 == 3 && matches!(op1, 0 | 1 | 3) && crn == 0 && crm <= 7)
        .then(|| idx(op1 as u8, crm as u8, op2 as u8))
}

pub const MIDR: usize = idx(0, 0, 0);
pub const REVIDR: usize = idx(0, 0, 6);
pub const CLIDR: usize = idx(1, 0, 1);
pub const AIDR: usize = idx(1, 0, 7);
pub const CTR: usize = idx(3, 0, 1);
const ID_PFR0: usize = idx(0, 1, 0);
const ID_DFR0: usize = idx(0, 1, 2);
const PFR0: usize = idx(0, 4, 0);
const PFR1: usize = idx(0, 4, 1);
const DFR0: usize = idx(0, 5, 0);
const MMFR2: usize = idx(0, 7, 2);

/// How a field may differ from the limit (cpufeature.c's FTR_* types): lower (or higher) is
/// safe, higher is safe but 0 is the highest, or only the one safe value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Lower,
    Higher,
    HigherOrZero,
    Exact(i64),
}

#[derive(Clone, Copy, Debug)]
struct Field {
    shift: u8,
    width: u8,
    signed: bool,
    kind: Kind,
}

const fn f(shift: u8, width: u8, signed: bool, kind: Kind) -> Field {
    Field {
        shift,
        width,
        signed,
        kind,
    }
}

impl Field {
    fn mask(&self) -> u64 {
        ((1u64 << self.width) - 1) << self.shift
    }
    /// The field's value in `reg`, sign-extended for a signed field.
    fn value(&self, reg: u64) -> i64 {
        let v = (reg & self.mask()) >> self.shift;
        if self.signed && v >> (self.width - 1) != 0 {
            v as i64 - (1i64 << self.width)
        } else {
            v as i64
        }
    }
    /// The safe value between a new value and the limit (`arm64_ftr_safe_value`).
    fn safe(&self, new: i64, cur: i64) -> i64 {
        match self.kind {
            Kind::Exact(v) => v,
            Kind::Lower => new.min(cur),
            Kind::HigherOrZero if new == 0 || cur == 0 => 0,
            Kind::Higher | Kind::HigherOrZero => new.max(cur),
        }
    }
}

use Kind::{Exact, Higher, HigherOrZero, Lower};

/// Eight 4-bit unsigned lower-safe fields (cpufeature.c's ftr_generic_32bits).
const GENERIC32: &[Field] = &[
    f(28, 4, false, Lower),
    f(24, 4, false, Lower),
    f(20, 4, false, Lower),
    f(16, 4, false, Lower),
    f(12, 4, false, Lower),
    f(8, 4, false, Lower),
    f(4, 4, false, Lower),
    f(0, 4, false, Lower),
];

/// Unsigned lower-safe 4-bit fields at these shifts.
macro_rules! lower {
    ($($s:literal),*) => {{
        const T: &[Field] = &[$(f($s, 4, false, Lower)),*];
        T
    }};
}

/// A table of fields as a constant (a `const fn` call is not promoted to a static).
macro_rules! tbl {
    ($($e:expr),* $(,)?) => {{
        const T: &[Field] = &[$($e),*];
        T
    }};
}

/// The described fields of each register (cpufeature.c's arm64_ftr_regs), with KVM's own kinds
/// where `kvm_arm64_ftr_safe_value` changes them (ID_AA64DFR0_EL1.PMUVer and DebugVer,
/// ID_DFR0_EL1.PerfMon are lower-safe for a VM). A register not listed has no described field.
fn fields(i: usize) -> &'static [Field] {
    match i {
        _ if i == idx(0, 1, 0) => lower!(24, 16, 12, 8, 4, 0), // ID_PFR0_EL1
        _ if i == idx(0, 1, 1) => GENERIC32,                   // ID_PFR1_EL1
        _ if i == ID_DFR0 => lower!(24, 20, 16, 12, 8, 4, 0),
        _ if i == idx(0, 1, 4) => tbl![
            // ID_MMFR0_EL1
            f(28, 4, true, Lower),
            f(24, 4, false, Lower),
            f(20, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, true, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        // ID_MMFR1..3_EL1, ID_ISAR1..4_EL1, MVFR0_EL1, MVFR1_EL1
        _ if (idx(0, 1, 5)..=idx(0, 1, 7)).contains(&i)
            || (idx(0, 2, 1)..=idx(0, 2, 4)).contains(&i)
            || i == idx(0, 3, 0)
            || i == idx(0, 3, 1) =>
        {
            GENERIC32
        }
        _ if i == idx(0, 2, 0) => lower!(24, 20, 16, 12, 8, 4, 0), // ID_ISAR0_EL1
        _ if i == idx(0, 2, 5) => lower!(24, 16, 12, 8, 4, 0),     // ID_ISAR5_EL1
        _ if i == idx(0, 2, 6) => tbl![
            // ID_MMFR4_EL1: SpecSEI is higher-safe
            f(28, 4, false, Lower),
            f(24, 4, false, Lower),
            f(20, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Higher),
        ],
        _ if i == idx(0, 2, 7) => lower!(24, 20, 16, 12, 8, 4, 0), // ID_ISAR6_EL1
        _ if i == idx(0, 3, 2) || i == idx(0, 3, 4) => lower!(4, 0), // MVFR2_EL1, ID_PFR2_EL1
        _ if i == idx(0, 3, 5) => tbl![f(0, 4, true, Lower)],      // ID_DFR1_EL1
        _ if i == idx(0, 3, 6) => lower!(0),                       // ID_MMFR5_EL1
        _ if i == PFR0 => tbl![
            f(60, 4, false, Lower),
            f(56, 4, false, Lower),
            f(48, 4, false, Lower),
            f(44, 4, false, Lower),
            f(40, 4, false, Lower),
            f(36, 4, false, Lower),
            f(32, 4, false, Lower),
            f(28, 4, false, Lower),
            f(24, 4, false, Lower),
            f(20, 4, true, Lower),
            f(16, 4, true, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        _ if i == PFR1 => tbl![
            f(56, 4, false, Lower),
            f(44, 4, false, Lower),
            f(40, 4, true, Lower),
            f(24, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        _ if i == idx(0, 4, 2) => lower!(32, 12, 8, 4), // ID_AA64PFR2_EL1
        _ if i == idx(0, 4, 4) => lower!(56, 52, 48, 44, 40, 32, 24, 20, 16, 12, 4, 0), // ZFR0
        _ if i == idx(0, 4, 7) => tbl![
            // ID_AA64FPFR0_EL1: one-bit exact fields
            f(31, 1, false, Exact(0)),
            f(30, 1, false, Exact(0)),
            f(29, 1, false, Exact(0)),
            f(28, 1, false, Exact(0)),
            f(27, 1, false, Exact(0)),
            f(26, 1, false, Exact(0)),
            f(15, 1, false, Exact(0)),
            f(1, 1, false, Exact(0)),
            f(0, 1, false, Exact(0)),
        ],
        _ if i == DFR0 => tbl![
            f(36, 4, true, Lower),
            f(32, 4, false, Lower),
            f(28, 4, false, Lower),
            f(20, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        _ if i == idx(0, 6, 0) => lower!(60, 56, 52, 48, 44, 40, 36, 32, 28, 20, 16, 12, 8, 4),
        _ if i == idx(0, 6, 1) => tbl![
            // ID_AA64ISAR1_EL1: API and APA exact
            f(60, 4, false, Lower),
            f(56, 4, false, Lower),
            f(52, 4, false, Lower),
            f(48, 4, false, Lower),
            f(44, 4, false, Lower),
            f(40, 4, false, Lower),
            f(36, 4, false, Lower),
            f(32, 4, false, Lower),
            f(28, 4, false, Lower),
            f(24, 4, false, Lower),
            f(20, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Exact(0)),
            f(4, 4, false, Exact(0)),
            f(0, 4, false, Lower),
        ],
        _ if i == idx(0, 6, 2) => tbl![
            // ID_AA64ISAR2_EL1: APA3 exact
            f(60, 4, false, Lower),
            f(56, 4, false, Lower),
            f(52, 4, false, Lower),
            f(48, 4, false, Lower),
            f(28, 4, false, Lower),
            f(20, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Exact(0)),
            f(8, 4, false, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        _ if i == idx(0, 6, 3) => lower!(28, 24, 16, 4), // ID_AA64ISAR3_EL1
        _ if i == idx(0, 7, 0) => tbl![
            // ID_AA64MMFR0_EL1: the stage-2 granules exact, TGRAN4 and TGRAN64 signed
            f(60, 4, false, Lower),
            f(56, 4, false, Lower),
            f(44, 4, false, Lower),
            f(40, 4, false, Exact(1)),
            f(36, 4, false, Exact(1)),
            f(32, 4, false, Exact(1)),
            f(28, 4, true, Lower),
            f(24, 4, true, Lower),
            f(20, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        _ if i == idx(0, 7, 1) => tbl![
            // ID_AA64MMFR1_EL1: SpecSEI higher-safe
            f(60, 4, false, Lower),
            f(52, 4, false, Lower),
            f(44, 4, false, Lower),
            f(40, 4, false, Lower),
            f(36, 4, false, Lower),
            f(32, 4, false, Lower),
            f(28, 4, false, Lower),
            f(24, 4, false, Higher),
            f(20, 4, false, Lower),
            f(16, 4, false, Lower),
            f(12, 4, false, Lower),
            f(8, 4, false, Lower),
            f(4, 4, false, Lower),
            f(0, 4, false, Lower),
        ],
        _ if i == MMFR2 => lower!(60, 56, 52, 48, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0),
        _ if i == idx(0, 7, 3) => lower!(16, 8, 4, 0), // ID_AA64MMFR3_EL1
        _ if i == idx(0, 7, 4) => tbl![f(24, 4, true, Lower), f(20, 4, false, Lower)], // MMFR4
        _ if i == CTR => tbl![
            f(31, 1, false, Exact(1)),
            f(29, 1, false, Lower),
            f(28, 1, false, Lower),
            f(24, 4, false, HigherOrZero),
            f(20, 4, false, HigherOrZero),
            f(16, 4, false, Lower),
            f(14, 2, false, Exact(0b10)),
            f(0, 4, false, Lower),
        ],
        _ => &[],
    }
}

/// The AArch32 ID registers a VMM may write, all 32 bits (AA32_ID_WRITABLE), when the CPU runs
/// AArch32 at EL0: ID_PFR0, ID_PFR1, ID_DFR0, ID_MMFR0..3, ID_ISAR0..6, ID_MMFR4, MVFR0..2,
/// ID_PFR2, ID_MMFR5 (ID_AFR0 and ID_DFR1 are hidden, the rest unallocated).
fn aa32_writable(i: usize) -> bool {
    (ID_PFR0..=idx(0, 3, 6)).contains(&i)
        && ![idx(0, 1, 3), idx(0, 3, 3), idx(0, 3, 5)].contains(&i)
}

/// The writable mask of register `i` (the `val` of its sys_reg_desc in Linux 7.3); `aa32`: the
/// CPU runs AArch32 at EL0. 0 for registers a VMM can only write with their current value.
pub fn writable_mask(i: usize, aa32: bool) -> u64 {
    const ALL: u64 = u64::MAX;
    match i {
        _ if aa32_writable(i) && aa32 => 0xffff_ffff,
        _ if aa32_writable(i) => 0,
        MIDR => 0xffff_ffff,
        REVIDR | AIDR => ALL,
        CLIDR => !0xffff_8000_0000_0000,
        CTR => 1 << 29 | 1 << 28 | 0xf << 16 | 0b11 << 14 | 0xf,
        // ~(AMU | MPAM | SVE | AdvSIMD | FP)
        PFR0 => !(0xf << 44 | 0xf << 40 | 0xf << 32 | 0xf << 20 | 0xf << 16),
        // DF2, CSV2_frac, RAS_frac, SSBS, BT
        PFR1 => 0xf << 56 | 0xf << 32 | 0xf << 12 | 0xf << 4 | 0xf,
        // FPMR, GCIE, MTEFAR, MTESTOREONLY
        _ if i == idx(0, 4, 2) => 0xf << 32 | 0xf << 12 | 0xf << 8 | 0xf << 4,
        _ if i == idx(0, 4, 4) => !0xf000_00f0_f000_0f00, // ID_AA64ZFR0_EL1: ~RES0
        _ if i == idx(0, 4, 7) => !0xffff_ffff_03ff_7f00, // ID_AA64FPFR0_EL1: ~RES0
        // DoubleLock, WRPs, PMUVer, DebugVer
        DFR0 => 0xf << 36 | 0xf << 20 | 0xf << 8 | 0xf,
        _ if i == idx(0, 6, 0) => !0xf00_000f, // ID_AA64ISAR0_EL1: ~RES0
        _ if i == idx(0, 6, 1) => !(0xffu64 << 24 | 0xff << 4), // ~(GPI | GPA | API | APA)
        _ if i == idx(0, 6, 2) => !0xff00,     // ~(APA3 | GPA3)
        _ if i == idx(0, 6, 3) => 0xf << 28 | 0xf << 24 | 0xf << 16 | 0xf << 4,
        _ if i == idx(0, 7, 0) => !(0x00ff_0000_0000_0000 | 0xf0), // ~(RES0 | ASIDBITS)
        _ if i == idx(0, 7, 1) => !(0xf << 28 | 0xf << 8 | 0xf << 4), // ~(XNX | VH | VMIDBits)
        // ~(RES0 | EVT | FWB | IDS | NV | CCIDX)
        MMFR2 => !(0xf000_0000_0000 | 0xf << 56 | 0xf << 40 | 0xf << 36 | 0xf << 24 | 0xf << 20),
        _ if i == idx(0, 7, 3) => 0xf | 0xf << 4 | 0xf << 8 | 0xf << 16, // TCRX..S1POE
        _ if i == idx(0, 7, 4) => 0xf << 20,                             // NV_frac
        _ => 0,
    }
}

/// Whether `val` is a safe value for register `i` against the VM's `limit`
/// (`arm64_check_features`): each described field the writable mask covers whole must be its
/// own safe value against the limit's, and every other bit the limit's. EINVAL otherwise.
pub fn check_features(i: usize, writable: u64, limit: u64, val: u64) -> Result<(), Errno> {
    let mut mask = 0;
    for fl in fields(i) {
        let m = fl.mask();
        if m & writable != m {
            continue;
        }
        mask |= m;
        let (v, l) = (fl.value(val), fl.value(limit));
        if v != l && fl.safe(v, l) != v {
            return Err(Errno::EINVAL);
        }
    }
    if val & !mask != limit & !mask {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// The register-specific part of a VMM's write (`set_id_aa64pfr0_el1` and its siblings), before
/// the VM-has-run rule and the feature check: the value to go on with, or EINVAL. `host` is the
/// CPU's own value of the register.
pub fn filter_write(i: usize, host: u64, mut val: u64) -> Result<u64, Errno> {
    let field = |v: u64, sh: u32| (v >> sh) & 0xf;
    match i {
        PFR0 => {
            // MPAM equal to the CPU's is accepted and dropped (older KVMs showed it).
            const MPAM: u64 = 0xf << 40;
            if host & MPAM == val & MPAM {
                val &= !MPAM;
            }
            // AArch64 at EL0 and EL1 cannot be taken away.
            if field(val, 0) == 0 || field(val, 4) == 0 {
                return Err(Errno::EINVAL);
            }
        }
        PFR1 => {
            const MPAM_FRAC: u64 = 0xf << 16;
            if host & MPAM_FRAC == val & MPAM_FRAC {
                val &= !MPAM_FRAC;
            }
            // MTE2 without asymmetric faults: a VMM may write MTE_frac 0 (what older KVMs
            // showed); the CPU's 0xf stays.
            if field(host, 8) == 2 && field(host, 40) == 0xf && field(val, 40) == 0 {
                val |= 0xf << 40;
            }
        }
        DFR0 => {
            // An IMPLEMENTATION DEFINED PMU reads as none; DebugVer is at least Armv8.0.
            if field(val, 8) == 0xf {
                val &= !(0xf << 8);
            }
            if field(val, 0) < 6 {
                return Err(Errno::EINVAL);
            }
        }
        ID_DFR0 => {
            if field(val, 24) == 0xf {
                val &= !(0xf << 24);
            }
            let perfmon = field(val, 24);
            if perfmon != 0 && perfmon < 3 {
                return Err(Errno::EINVAL);
            }
            if field(val, 0) < 6 {
                return Err(Errno::EINVAL);
            }
        }
        MMFR2 => {
            // The deprecated NV field: the CPU's value is accepted and dropped.
            const NV: u64 = 0xf << 24;
            if host & NV == val & NV {
                val &= !NV;
            }
        }
        CTR => match (val >> 14) & 3 {
            // L1Ip: only VIPT and PIPT (the other two encodings are reserved).
            0 | 1 => return Err(Errno::EINVAL),
            _ => {}
        },
        _ => {}
    }
    Ok(val)
}

/// Whether a VMM may write `val` to a vCPU's CLIDR_EL1 (`set_clidr`): no RES0 bit, and a
/// hierarchy that needs no data cache clean to the PoU only where the CPU's CTR_EL0 says so
/// (IDC).
pub fn clidr_write_ok(val: u64, host_ctr: u64) -> bool {
    let loc = (val >> 24) & 7;
    let louis = (val >> 21) & 7;
    let louu = (val >> 27) & 7;
    let idc = loc == 0 || (louis == 0 && louu == 0);
    val & 0xffff_8000_0000_0000 == 0 && !(host_ctr & (1 << 28) == 0 && idc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_index_is_linuxs() {
        assert_eq!(idx(0, 4, 0), 32);
        assert_eq!(idx(3, 0, 1), 129);
        assert_eq!(idx(1, 0, 1), 65);
        assert_eq!(idx_of_sysreg(0x6030_0000_0013_c020), Some(32)); // ID_AA64PFR0_EL1
        assert_eq!(idx_of_sysreg(0x6030_0000_0013_d801), Some(CTR));
        assert_eq!(idx_of_sysreg(0x6030_0000_0013_c100), None); // SCTLR_EL1
        assert_eq!(KVM_ARM_GET_REG_WRITABLE_MASKS, 0x8040_aeb6);
    }

    #[test]
    fn lower_safe_fields_may_only_go_down() {
        let i = idx(0, 6, 0); // ID_AA64ISAR0_EL1
        let w = writable_mask(i, true);
        let limit = 0x0221_1111_2021_2120; // AES 2, SHA1 1, ...
        assert_eq!(check_features(i, w, limit, limit), Ok(()));
        assert_eq!(check_features(i, w, limit, limit - 0x10), Ok(())); // AES 1
        assert_eq!(
            check_features(i, w, limit, limit + 0x10),
            Err(Errno::EINVAL)
        );
        // Bits 24..27 (RES0) belong to no field: only the limit's value.
        assert_eq!(
            check_features(i, w, limit, limit | 1 << 24),
            Err(Errno::EINVAL)
        );
    }

    #[test]
    fn signed_higher_and_exact_fields() {
        let dfr0 = DFR0;
        let w = writable_mask(dfr0, true);
        // DoubleLock 0xf (-1, not implemented): 0 would add the feature.
        let limit = 0xf << 36 | 6;
        assert_eq!(check_features(dfr0, w, limit, 6), Err(Errno::EINVAL));
        assert_eq!(check_features(dfr0, w, limit, limit), Ok(()));
        let mmfr1 = idx(0, 7, 1);
        let w = writable_mask(mmfr1, true);
        assert_eq!(check_features(mmfr1, w, 0, 1 << 24), Ok(())); // SpecSEI up
        let mmfr0 = idx(0, 7, 0);
        let w = writable_mask(mmfr0, true);
        let limit = 2u64 << 40;
        assert_eq!(check_features(mmfr0, w, limit, 1 << 40), Ok(())); // exact safe 1
        assert_eq!(check_features(mmfr0, w, limit, 3 << 40), Err(Errno::EINVAL));
        assert_eq!(check_features(mmfr0, w, limit, 0), Err(Errno::EINVAL));
    }

    #[test]
    fn filters_refuse_what_linux_refuses() {
        assert_eq!(filter_write(PFR0, 0, 0x11), Ok(0x11));
        assert_eq!(filter_write(PFR0, 0, 0x10), Err(Errno::EINVAL));
        assert_eq!(filter_write(PFR0, 1 << 40, 1 << 40 | 0x11), Ok(0x11));
        assert_eq!(filter_write(DFR0, 0, 5), Err(Errno::EINVAL));
        assert_eq!(filter_write(ID_DFR0, 0, 1 << 24 | 6), Err(Errno::EINVAL));
        assert_eq!(filter_write(CTR, 0, 1 << 14), Err(Errno::EINVAL));
        assert!(clidr_write_ok(1 << 24 | 0b011, 1 << 28));
        assert!(!clidr_write_ok(1 << 63, 1 << 28));
        assert!(!clidr_write_ok(0, 0));
    }
}
