//! The dirty ring (Documentation/virt/kvm/api.rst: KVM_CAP_DIRTY_LOG_RING,
//! KVM_CAP_DIRTY_LOG_RING_ACQ_REL, KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP, KVM_RESET_DIRTY_RINGS):
//! the numbers and layouts of include/uapi/linux/kvm.h and the rules of virt/kvm/kvm_main.c
//! (`kvm_vm_ioctl_enable_dirty_log_ring`, `kvm_vcpu_mmap`) and virt/kvm/dirty_ring.c.
//!
//! Each vCPU has a ring of `struct kvm_dirty_gfn`, a power of two of them, which the VMM maps
//! from the vCPU's file at page KVM_DIRTY_LOG_PAGE_OFFSET. The kernel fills an entry (slot,
//! offset) and then sets its DIRTY flag; the VMM reads it and sets RESET; KVM_RESET_DIRTY_RINGS
//! takes the RESET entries back (flags 0) and write-protects their pages again.

use super::errno::Errno;
use super::kvm::KVMIO;
use super::tty::io;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Total-store-order rings (x86 only): 0 on arm64.
pub const KVM_CAP_DIRTY_LOG_RING: u64 = 192;
/// The ring with acquire/release flags: arm64's (HAVE_KVM_DIRTY_RING_ACQ_REL).
pub const KVM_CAP_DIRTY_LOG_RING_ACQ_REL: u64 = 223;
/// The ring plus the slots' bitmaps, for writes made with no vCPU running.
pub const KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP: u64 = 225;

pub const KVM_RESET_DIRTY_RINGS: u32 = io(KVMIO, 0xc7);
pub const KVM_EXIT_DIRTY_RING_FULL: u32 = 31;

/// Where a vCPU's ring starts in its file, in pages (arch/arm64/include/uapi/asm/kvm.h).
pub const KVM_DIRTY_LOG_PAGE_OFFSET: u64 = 64;

pub const KVM_DIRTY_GFN_F_DIRTY: u32 = 1 << 0;
pub const KVM_DIRTY_GFN_F_RESET: u32 = 1 << 1;

/// Entries kept free past the soft limit (include/linux/kvm_host.h), and the most a ring has.
pub const KVM_DIRTY_RING_RSVD_ENTRIES: u32 = 64;
pub const KVM_DIRTY_RING_MAX_ENTRIES: u32 = 65536;

/// `struct kvm_dirty_gfn`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmDirtyGfn {
    pub flags: u32,
    pub slot: u32,
    pub offset: u64,
}
const _: () = assert!(core::mem::size_of::<KvmDirtyGfn>() == 16);
pub const GFN_SIZE: u32 = 16;
/// Offsets of the fields within an entry.
pub const GFN_FLAGS: usize = 0;
pub const GFN_SLOT: usize = 4;
pub const GFN_OFFSET: usize = 8;

/// The largest ring in bytes: what KVM_CHECK_EXTENSION answers for ACQ_REL.
pub const MAX_RING_BYTES: u32 = KVM_DIRTY_RING_MAX_ENTRIES * GFN_SIZE;

/// KVM_CHECK_EXTENSION's answers for the three ring capabilities; None for another.
pub fn check_extension(cap: u64) -> Option<usize> {
    match cap {
        KVM_CAP_DIRTY_LOG_RING => Some(0),
        KVM_CAP_DIRTY_LOG_RING_ACQ_REL => Some(MAX_RING_BYTES as usize),
        KVM_CAP_DIRTY_LOG_RING_WITH_BITMAP => Some(1),
        _ => None,
    }
}

/// The ring size KVM_ENABLE_CAP(ACQ_REL) sets from its `args[0]` (which Linux takes as a u32),
/// checked in `kvm_vm_ioctl_enable_dirty_log_ring`'s order: a power of two, at least the
/// reserved entries and a page (EINVAL), at most the maximum (E2BIG), not set before (EINVAL).
/// Whether a vCPU exists (EINVAL) is the caller's, checked last.
pub fn ring_size(arg0: u64, already: u32, page: u32) -> Result<u32, Errno> {
    let size = arg0 as u32;
    if !size.is_power_of_two() {
        return Err(Errno::EINVAL);
    }
    if size < KVM_DIRTY_RING_RSVD_ENTRIES * GFN_SIZE || size < page {
        return Err(Errno::EINVAL);
    }
    if size > MAX_RING_BYTES {
        return Err(Errno::E2BIG);
    }
    if already != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(size)
}

/// Whether file page `pgoff` of a vCPU falls in its ring of `size` bytes.
pub fn in_ring(pgoff: u64, size: u32, page: u32) -> bool {
    pgoff >= KVM_DIRTY_LOG_PAGE_OFFSET && pgoff < KVM_DIRTY_LOG_PAGE_OFFSET + (size / page) as u64
}

/// `kvm_vcpu_mmap`: a mapping whose first or last page is in the ring must be shared and not
/// executable (EINVAL otherwise).
pub fn mmap_refused(
    pgoff: u64,
    pages: u64,
    size: u32,
    page: u32,
    exec: bool,
    shared: bool,
) -> bool {
    let touches = in_ring(pgoff, size, page) || in_ring(pgoff + pages.max(1) - 1, size, page);
    touches && (exec || !shared)
}

/// A ring's entry count and soft limit for `size` bytes (`kvm_dirty_ring_alloc`).
pub fn entries(size: u32) -> (u32, u32) {
    let n = size / GFN_SIZE;
    (n, n - KVM_DIRTY_RING_RSVD_ENTRIES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_linux_order() {
        assert_eq!(ring_size(0, 0, 4096), Err(Errno::EINVAL));
        assert_eq!(ring_size(3 * 4096, 0, 4096), Err(Errno::EINVAL));
        assert_eq!(ring_size(2048, 0, 4096), Err(Errno::EINVAL));
        assert_eq!(ring_size(2 << 20, 0, 4096), Err(Errno::E2BIG));
        // Too big and already set: E2BIG comes first.
        assert_eq!(ring_size(2 << 20, 4096, 4096), Err(Errno::E2BIG));
        assert_eq!(ring_size(4096, 4096, 4096), Err(Errno::EINVAL));
        assert_eq!(ring_size(4096, 0, 4096), Ok(4096));
        // Only the low 32 bits count.
        assert_eq!(ring_size((1 << 32) | 8192, 0, 4096), Ok(8192));
        assert_eq!(ring_size(1 << 20, 0, 4096), Ok(1 << 20));
        assert_eq!(entries(4096), (256, 192));
    }

    #[test]
    fn ring_mappings() {
        assert!(!in_ring(63, 8192, 4096));
        assert!(in_ring(64, 8192, 4096) && in_ring(65, 8192, 4096));
        assert!(!in_ring(66, 8192, 4096));
        assert!(mmap_refused(64, 2, 8192, 4096, false, false));
        assert!(mmap_refused(64, 2, 8192, 4096, true, true));
        assert!(!mmap_refused(64, 2, 8192, 4096, false, true));
        // The run page, privately: allowed.
        assert!(!mmap_refused(0, 1, 8192, 4096, false, false));
        // No ring: nothing is in it.
        assert!(!mmap_refused(64, 1, 0, 4096, false, false));
    }
}
