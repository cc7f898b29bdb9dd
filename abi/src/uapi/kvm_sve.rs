//! SVE for guests through Linux's arm64 KVM API (Documentation/virt/kvm/api.rst, "KVM_ARM_VCPU_INIT"
//! and "KVM_ARM_VCPU_FINALIZE"; arch/arm64/include/uapi/asm/kvm.h; arch/arm64/kvm/guest.c):
//! the vCPU feature, the vector-length pseudo-register a VMM sets before finalizing, and the
//! Z, P and FFR registers by their ONE_REG IDs, with Linux's rules and errors.
//!
//! A vCPU's saved SVE state has the signal frame's payload layout (the kernel's save format),
//! at the vCPU's largest VL: Z_n at 16·vq·n, P_n at 512·vq + 2·vq·n, FFR after P15. An ID
//! names a 2048-bit (Z) or 256-bit (P, FFR) slice; the bytes past the vCPU's VL read as zero
//! and are ignored when written.

use super::errno::Errno;
use super::kvm::{KVMIO, KVM_REG_ARM64};
use super::tty::iow;
use crate::fp::vl::VlSet;

pub const KVM_CAP_ARM_SVE: u64 = 170;
/// The vCPU feature bit (KVM_ARM_VCPU_INIT) and the KVM_ARM_VCPU_FINALIZE argument.
pub const KVM_ARM_VCPU_SVE: u32 = 4;
/// `_IOW(KVMIO, 0xc2, int)`.
pub const KVM_ARM_VCPU_FINALIZE: u32 = iow(KVMIO, 0xc2, 4);

pub const KVM_REG_ARM64_SVE: u64 = 0x15 << 16;
const KVM_REG_SIZE_U256: u64 = 0x0050_0000_0000_0000;
const KVM_REG_SIZE_U512: u64 = 0x0060_0000_0000_0000;
const KVM_REG_SIZE_U2048: u64 = 0x0080_0000_0000_0000;
const ZREG_BASE: u64 = 0;
const PREG_BASE: u64 = 0x400;
const FFR_BASE: u64 = 0x600;
/// Bytes of one slice: a Z register at the architecture's largest VL, a P register or FFR.
pub const ZREG_SLICE: usize = 256;
pub const PREG_SLICE: usize = 32;
/// Words of the vector-length bitmap (bit vq-1 of word (vq-1)/64 for each length offered).
pub const VLS_WORDS: usize = 8;
/// The largest vq the architecture allows (2048-bit vectors).
pub const VQ_MAX: u32 = 16;

/// `KVM_REG_ARM64_SVE_VLS`: the vCPU's vector lengths, writable until it is finalized.
pub const KVM_REG_ARM64_SVE_VLS: u64 =
    KVM_REG_ARM64 | KVM_REG_ARM64_SVE | KVM_REG_SIZE_U512 | 0xffff;

pub const fn zreg(n: u64, slice: u64) -> u64 {
    KVM_REG_ARM64 | KVM_REG_ARM64_SVE | KVM_REG_SIZE_U2048 | ZREG_BASE | (n << 5) | slice
}

pub const fn preg(n: u64, slice: u64) -> u64 {
    KVM_REG_ARM64 | KVM_REG_ARM64_SVE | KVM_REG_SIZE_U256 | PREG_BASE | (n << 5) | slice
}

pub const fn ffr(slice: u64) -> u64 {
    KVM_REG_ARM64 | KVM_REG_ARM64_SVE | KVM_REG_SIZE_U256 | FFR_BASE | slice
}

/// The SVE IDs of a finalized vCPU in KVM_GET_REG_LIST's order (copy_sve_reg_indices): the
/// vector lengths first, so that a VMM restoring in list order sets them before the data.
pub fn reg_ids() -> impl Iterator<Item = u64> {
    core::iter::once(KVM_REG_ARM64_SVE_VLS)
        .chain((0..32).map(|n| zreg(n, 0)))
        .chain((0..16).map(|n| preg(n, 0)))
        .chain(core::iter::once(ffr(0)))
}

/// Where a Z, P or FFR ID's data lies in a saved state of `vq`: the offset, the bytes there
/// (the rest of the ID's slice is padding), as `sve_reg_to_region` decides. ENOENT for a slice
/// past the first (the only one while vectors are at most 2048 bits); EINVAL for an ID that is
/// no Z, P or FFR register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub offset: usize,
    pub len: usize,
    /// The slice's size (2048 or 256 bits) in bytes: what the VMM's buffer holds.
    pub slice: usize,
}

pub fn region(id: u64, vq: usize) -> Result<Region, Errno> {
    let slice = id & 0x1f;
    let n = ((id >> 5) & 0x1f) as usize;
    if (zreg(0, 0)..=zreg(31, 31)).contains(&id) {
        if slice > 0 {
            return Err(Errno::ENOENT);
        }
        return Ok(Region {
            offset: 16 * vq * n,
            len: 16 * vq,
            slice: ZREG_SLICE,
        });
    }
    if (preg(0, 0)..=ffr(31)).contains(&id) {
        if slice > 0 {
            return Err(Errno::ENOENT);
        }
        // FFR follows P15 as a seventeenth predicate (FFR_BASE = P16's place).
        let n = if id >= ffr(0) { 16 } else { n };
        return Ok(Region {
            offset: 512 * vq + 2 * vq * n,
            len: 2 * vq,
            slice: PREG_SLICE,
        });
    }
    Err(Errno::EINVAL)
}

/// KVM_REG_ARM64_SVE_VLS as read: each length of `host` up to the vCPU's largest.
pub fn vls_get(host: VlSet, max_vq: u32) -> [u64; VLS_WORDS] {
    let mut w = [0u64; VLS_WORDS];
    for vq in 1..=max_vq {
        if host.contains_bytes(16 * vq) {
            w[(vq as usize - 1) / 64] |= 1 << ((vq - 1) % 64);
        }
    }
    w
}

/// A VMM's write of KVM_REG_ARM64_SVE_VLS (`set_sve_vls`, after its ENOENT and EPERM checks):
/// the new largest vq. The set must be exactly the host's lengths up to its largest (a guest
/// is capped through ZCR_EL2.LEN, so single lengths cannot be taken away), that largest no more
/// than `kvm_max_vq`, and not empty; EINVAL otherwise.
pub fn vls_set(host: VlSet, kvm_max_vq: u32, w: &[u64; VLS_WORDS]) -> Result<u32, Errno> {
    let present = |vq: u32| w[(vq as usize - 1) / 64] & (1 << ((vq - 1) % 64)) != 0;
    // Bits past the architecture's largest vq are looked at as Linux does: up to SVE_VQ_MAX
    // (512), so any of them makes the largest too big.
    let mut max = 0;
    for vq in 1..=(VLS_WORDS as u32 * 64) {
        if present(vq) {
            max = vq;
        }
    }
    if max > kvm_max_vq {
        return Err(Errno::EINVAL);
    }
    if (1..=max).any(|vq| present(vq) != host.contains_bytes(16 * vq)) {
        return Err(Errno::EINVAL);
    }
    if max == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(vls: &[u32]) -> VlSet {
        let mut s = VlSet::default();
        for &v in vls {
            s.insert_bytes(v);
        }
        s
    }

    #[test]
    fn ids_are_linuxs() {
        assert_eq!(KVM_REG_ARM64_SVE_VLS, 0x6060_0000_0015_ffff);
        assert_eq!(zreg(0, 0), 0x6080_0000_0015_0000);
        assert_eq!(zreg(31, 0), 0x6080_0000_0015_03e0);
        assert_eq!(preg(15, 0), 0x6050_0000_0015_05e0);
        assert_eq!(ffr(0), 0x6050_0000_0015_0600);
        assert_eq!(KVM_ARM_VCPU_FINALIZE, 0x4004_aec2);
        assert_eq!(reg_ids().count(), 1 + 32 + 16 + 1);
    }

    #[test]
    fn regions_follow_the_saved_layout() {
        let r = region(zreg(3, 0), 2).unwrap();
        assert_eq!((r.offset, r.len, r.slice), (96, 32, 256));
        let r = region(preg(1, 0), 2).unwrap();
        assert_eq!((r.offset, r.len, r.slice), (1024 + 4, 4, 32));
        let r = region(ffr(0), 4).unwrap();
        assert_eq!(r.offset, 512 * 4 + 32 * 4);
        assert_eq!(region(zreg(0, 1), 4), Err(Errno::ENOENT));
        assert_eq!(region(ffr(1), 4), Err(Errno::ENOENT));
        assert_eq!(region(KVM_REG_ARM64_SVE_VLS, 4), Err(Errno::EINVAL));
        assert_eq!(region(ffr(31) + 1, 4), Err(Errno::EINVAL));
    }

    #[test]
    fn vector_lengths_as_set_vls() {
        let h = host(&[16, 32, 48, 64]);
        let mut w = vls_get(h, 4);
        assert_eq!(w[0], 0b1111);
        assert_eq!(vls_get(h, 2)[0], 0b11);
        assert_eq!(vls_set(h, 4, &w), Ok(4));
        w[0] = 0b11;
        assert_eq!(vls_set(h, 4, &w), Ok(2));
        w[0] = 0b101; // a hole the host does not have
        assert_eq!(vls_set(h, 4, &w), Err(Errno::EINVAL));
        w[0] = 0b11111; // past the host's largest
        assert_eq!(vls_set(h, 4, &w), Err(Errno::EINVAL));
        w[0] = 0;
        assert_eq!(vls_set(h, 4, &w), Err(Errno::EINVAL));
        w[7] = 1 << 63;
        assert_eq!(vls_set(h, 4, &w), Err(Errno::EINVAL));
        // A host with only powers of two: 1, 2, 4.
        let h = host(&[16, 32, 64]);
        assert_eq!(vls_get(h, 4)[0], 0b1011);
        assert_eq!(vls_set(h, 4, &[0b1011, 0, 0, 0, 0, 0, 0, 0]), Ok(4));
        assert_eq!(vls_set(h, 4, &[0b0011, 0, 0, 0, 0, 0, 0, 0]), Ok(2));
        assert_eq!(
            vls_set(h, 4, &[0b0111, 0, 0, 0, 0, 0, 0, 0]),
            Err(Errno::EINVAL)
        );
    }
}
