//! SME for guests: the ABI of Mark Brown's series "KVM: arm64: Implement support for SME" (v12),
//! which Linux 7.3 does not have yet; docs/kvm-sme.md records what the series decides and what
//! Svelt chose where it is silent. The vCPU feature, the streaming vector-length
//! pseudo-register, the ZA rows and ZT0 by their ONE_REG IDs, the SME system registers, and the
//! rules a VMM's accesses follow (errors in the series' order, SVCR's side effects).
//!
//! ZA is kept as SVL_bytes rows of SVL_bytes each, at the vCPU's largest SVL (row n at
//! n·SVL_bytes), ZT0's 64 bytes after it.

use super::errno::Errno;
use super::kvm::{sysreg_id, KVM_REG_ARM64};
use crate::fp::vl::VlSet;

/// `KVM_CAP_ARM_SME` (the series' value moved at each rebase; the first free one after 7.3).
pub const KVM_CAP_ARM_SME: u64 = 252;
/// `KVM_ARM_VCPU_SME`: the vCPU feature bit (past Linux 7.3's KVM_VCPU_MAX_FEATURES).
pub const KVM_ARM_VCPU_SME: u32 = 10;
/// `KVM_ARM_VCPU_VEC`: KVM_ARM_VCPU_FINALIZE's argument for SVE, SME or both (SVE's old 4).
pub const KVM_ARM_VCPU_VEC: i32 = 4;

/// The coprocessor group of the SME registers.
pub const KVM_REG_ARM64_SME: u64 = 0x17 << 16;
const KVM_REG_SIZE_U512: u64 = 0x0060_0000_0000_0000;
const KVM_REG_SIZE_U2048: u64 = 0x0080_0000_0000_0000;

/// `KVM_REG_ARM64_SME_VLS`: the vCPU's streaming vector lengths, the bitmap of SVE_VLS.
pub const KVM_REG_ARM64_SME_VLS: u64 =
    KVM_REG_ARM64 | KVM_REG_ARM64_SME | KVM_REG_SIZE_U512 | 0xfffe;
/// `KVM_REG_ARM64_SME_ZTREG(0)`: ZT0, 512 bits.
pub const ZT0: u64 = KVM_REG_ARM64 | KVM_REG_ARM64_SME | KVM_REG_SIZE_U512 | 0x0600;
/// Bytes of ZT0.
pub const ZT0_BYTES: usize = 64;
/// Bytes of one ZA row ID's slice (2048 bits, whatever the SVL).
pub const ZA_SLICE: usize = 256;

/// `KVM_REG_ARM64_SME_ZAHREG(n, slice)`: row `n` of ZA.
pub const fn za_row(n: u64, slice: u64) -> u64 {
    KVM_REG_ARM64 | KVM_REG_ARM64_SME | KVM_REG_SIZE_U2048 | (n << 5) | slice
}

/// The SME system registers (listed and reachable only for a vCPU with SME).
pub const SVCR: u64 = sysreg_id(3, 3, 4, 2, 2);
pub const SMCR_EL1: u64 = sysreg_id(3, 0, 1, 2, 6);
pub const SMPRI_EL1: u64 = sysreg_id(3, 0, 1, 2, 4);
pub const TPIDR2_EL0: u64 = sysreg_id(3, 3, 13, 0, 5);
pub const SYSREGS: [u64; 5] = [SMPRI_EL1, SMCR_EL1, SMIDR_EL1, TPIDR2_EL0, SVCR];

/// SVCR's bits: streaming mode, ZA storage on.
pub const SVCR_SM: u64 = 1;
pub const SVCR_ZA: u64 = 2;
/// SMCR_EL1's bits the guest's own SMCR is loaded with (LEN, EZT0, FA64).
pub const SMCR_LOADED: u64 = 0xf | 1 << 30 | 1 << 31;
/// FPSR after the CPU enters or leaves streaming mode (its cumulative exception flags set).
pub const FPSR_AFTER_SM_CHANGE: u64 = 0x0800_009f;

/// ID_AA64PFR1_EL1.SME (1: SME, 2: SME2 with ZT0) and ID_AA64SMFR0_EL1.FA64.
pub const PFR1_SME_SHIFT: u32 = 24;
pub const PFR1_SME: u64 = 0xf << PFR1_SME_SHIFT;
pub const SMFR0_FA64: u64 = 1 << 63;

/// SMIDR_EL1 (op0 3, op1 1, CRn 0, CRm 0, op2 6), which HCR_EL2.TID1 traps.
pub const SMIDR_EL1: u64 = sysreg_id(3, 1, 0, 0, 6);
/// SMIDR_EL1.SMPS: streaming-mode execution priorities are supported.
pub const SMIDR_SMPS: u64 = 1 << 15;
/// SMIDR_EL1's fields (Arm ARM; Linux's arch/arm64/tools/sysreg): NSMC 59:56, HIP 55:52,
/// AFFINITY2 51:32, IMPLEMENTER 31:24, REVISION 23:16, SMPS 15, SH 14:13, AFFINITY 11:0.
const SMIDR_FIELDS: u64 = 0x0fff_ffff_ffff_efff;

/// What a guest with SME reads as SMIDR_EL1, from the CPU's: every field but SMPS, which is
/// hidden because guests get no priorities (SMPRI_EL1 is RAZ/WI for them, as in the series'
/// "Sanitise SMIDR_EL1"); the RES0 bits stay 0.
pub const fn guest_smidr(host: u64) -> u64 {
    host & SMIDR_FIELDS & !SMIDR_SMPS
}

/// What a SET of SVCR does besides storing it (the series' "flush" rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SvcrChange {
    /// SM changed: V/Z/P/FFR and FPMR to zero, FPSR to [`FPSR_AFTER_SM_CHANGE`].
    pub flush_vectors: bool,
    /// ZA went from 0 to 1: ZA and ZT0 to zero.
    pub zero_za: bool,
}

/// A VMM's write of SVCR over `old`: EINVAL for a bit past SM and ZA.
pub fn svcr_write(old: u64, new: u64) -> Result<SvcrChange, Errno> {
    if new & !(SVCR_SM | SVCR_ZA) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(SvcrChange {
        flush_vectors: (old ^ new) & SVCR_SM != 0,
        zero_za: old & SVCR_ZA == 0 && new & SVCR_ZA != 0,
    })
}

/// What an SME-group ID names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmeReg {
    Vls,
    /// Row n of ZA.
    ZaRow(usize),
    Zt0,
}

/// An SME-group ID against a vCPU whose largest SVL is `svl` bytes, in the series' order for
/// everything the ID alone decides: ENOENT for a slice past the first, EINVAL for a row past
/// the SVL or no such register. (Whether the vCPU has SME, ZT0, SVCR.ZA, finalize: the caller.)
pub fn decode(id: u64, svl: usize) -> Result<SmeReg, Errno> {
    if id == KVM_REG_ARM64_SME_VLS {
        return Ok(SmeReg::Vls);
    }
    if id == ZT0 {
        return Ok(SmeReg::Zt0);
    }
    if id & !0xffff == za_row(0, 0) && id & 0xe000 == 0 {
        if id & 0x1f != 0 {
            return Err(Errno::ENOENT);
        }
        let n = ((id >> 5) & 0xff) as usize;
        if n >= svl {
            return Err(Errno::EINVAL);
        }
        return Ok(SmeReg::ZaRow(n));
    }
    Err(Errno::EINVAL)
}

/// The SME-group IDs of a vCPU in KVM_GET_REG_LIST's order: SME_VLS, then (while SVCR.ZA)
/// the ZA rows and ZT0 if the VM has SME2.
pub fn reg_ids(svl: usize, za: bool, zt0: bool) -> impl Iterator<Item = u64> {
    let rows = if za { svl as u64 } else { 0 };
    core::iter::once(KVM_REG_ARM64_SME_VLS)
        .chain((0..rows).map(|n| za_row(n, 0)))
        .chain((za && zt0).then_some(ZT0))
}

/// A write of SME_VLS: the new largest SVL in vq, by SVE_VLS's rule (a non-empty prefix of
/// the host's set, since SMCR_EL2.LEN can only cap).
pub fn vls_set(host: VlSet, w: &[u64; super::kvm_sve::VLS_WORDS]) -> Result<u32, Errno> {
    let max = host.max_bytes().map_or(0, |b| b / 16);
    super::kvm_sve::vls_set(host, max, w)
}

/// A VMM's write of ID_AA64SMFR0_EL1 for a VM with SME: each 4-bit field (and the 1-bit FA64)
/// at most the limit's, every other bit the limit's; EINVAL otherwise.
pub fn smfr0_write_ok(limit: u64, v: u64) -> bool {
    if v & SMFR0_FA64 > limit & SMFR0_FA64 {
        return false;
    }
    (0..60)
        .step_by(4)
        .all(|sh| (v >> sh) & 0xf <= (limit >> sh) & 0xf)
}

/// The same for ID_AA64PFR1_EL1.SME (SME2 may go down to SME; SME cannot be taken away from
/// a vCPU initialised with it, as its registers exist).
pub fn pfr1_sme_ok(limit: u64, v: u64) -> bool {
    let (f, l) = (
        (v & PFR1_SME) >> PFR1_SME_SHIFT,
        (limit & PFR1_SME) >> PFR1_SME_SHIFT,
    );
    f >= 1 && f <= l
}

#[cfg(test)]
mod tests {
    #[test]
    fn guest_smidr_hides_priorities_only() {
        // Implementer 0x41, revision 2, SMPS, SH 0b11, affinity 0x123, and RES0 bits 63:60, 12.
        let host = 0xf000_0000_4102_f123 | 1 << 12;
        assert_eq!(guest_smidr(host), 0x0000_0000_4102_6123);
        assert_eq!(guest_smidr(0), 0);
        assert_eq!(SMIDR_EL1 & 0xffff, 0xc806);
    }

    use super::*;

    #[test]
    fn ids_are_the_series() {
        assert_eq!(KVM_REG_ARM64_SME_VLS, 0x6060_0000_0017_fffe);
        assert_eq!(ZT0, 0x6060_0000_0017_0600);
        assert_eq!(za_row(0, 0), 0x6080_0000_0017_0000);
        assert_eq!(za_row(255, 0), 0x6080_0000_0017_1fe0);
        assert_eq!(SVCR, 0x6030_0000_0013_da12);
        assert_eq!(SMCR_EL1, 0x6030_0000_0013_c096);
        assert_eq!(TPIDR2_EL0, 0x6030_0000_0013_de85);
        assert_eq!(SMPRI_EL1, 0x6030_0000_0013_c094);
    }

    #[test]
    fn decoding_keeps_zt0_and_row_48_apart() {
        assert_eq!(decode(ZT0, 64), Ok(SmeReg::Zt0));
        assert_eq!(decode(za_row(48, 0), 64), Ok(SmeReg::ZaRow(48)));
        assert_eq!(decode(za_row(48, 0), 32), Err(Errno::EINVAL));
        assert_eq!(decode(za_row(3, 1), 32), Err(Errno::ENOENT));
        assert_eq!(decode(KVM_REG_ARM64_SME_VLS, 16), Ok(SmeReg::Vls));
        assert_eq!(decode(ZT0 + 1, 16), Err(Errno::EINVAL));
    }

    #[test]
    fn svcr_writes() {
        assert_eq!(svcr_write(0, 4), Err(Errno::EINVAL));
        let c = svcr_write(0, 3).unwrap();
        assert!(c.flush_vectors && c.zero_za);
        let c = svcr_write(3, 2).unwrap();
        assert!(c.flush_vectors && !c.zero_za);
        let c = svcr_write(2, 2).unwrap();
        assert!(!c.flush_vectors && !c.zero_za);
    }

    #[test]
    fn list_follows_za() {
        assert_eq!(reg_ids(32, false, true).count(), 1);
        assert_eq!(reg_ids(32, true, false).count(), 33);
        assert_eq!(reg_ids(16, true, true).last(), Some(ZT0));
        assert_eq!(reg_ids(16, true, true).count(), 18);
    }

    #[test]
    fn id_writes() {
        let limit = SMFR0_FA64 | 1 << 32 | 0xf << 24;
        assert!(smfr0_write_ok(limit, limit & !SMFR0_FA64));
        assert!(!smfr0_write_ok(limit & !SMFR0_FA64, limit));
        assert!(!smfr0_write_ok(limit, limit | 1 << 4));
        assert!(pfr1_sme_ok(2 << 24, 1 << 24));
        assert!(!pfr1_sme_ok(1 << 24, 2 << 24));
        assert!(!pfr1_sme_ok(2 << 24, 0));
    }

    #[test]
    fn sme_lengths_need_not_start_at_128_bits() {
        let mut h = VlSet::default();
        h.insert_bytes(32);
        h.insert_bytes(64);
        assert_eq!(vls_set(h, &[0b1010, 0, 0, 0, 0, 0, 0, 0]), Ok(4));
        assert_eq!(vls_set(h, &[0b0010, 0, 0, 0, 0, 0, 0, 0]), Ok(2));
        assert_eq!(
            vls_set(h, &[0b1000, 0, 0, 0, 0, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            vls_set(h, &[0b1011, 0, 0, 0, 0, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
    }
}
