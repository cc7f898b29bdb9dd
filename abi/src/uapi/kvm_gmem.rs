//! guest_memfd (Documentation/virt/kvm/api.rst: KVM_CREATE_GUEST_MEMFD,
//! KVM_SET_USER_MEMORY_REGION2, KVM_CAP_GUEST_MEMFD, KVM_CAP_GUEST_MEMFD_FLAGS): the argument
//! layouts and the rules of virt/kvm/guest_memfd.c (`kvm_gmem_create`, `kvm_gmem_fallocate`)
//! and virt/kvm/kvm_main.c (`check_memory_region_flags`, `kvm_set_memory_region`) that need no
//! kernel state.

use super::errno::Errno;
use super::kvm::{
    check_region, KvmUserspaceMemoryRegion, SlotChange, KVMIO, KVM_MEM_LOG_DIRTY_PAGES,
    KVM_MEM_READONLY,
};
use super::tty::iowr;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const KVM_CAP_GUEST_MEMFD: u64 = 234;
pub const KVM_CAP_GUEST_MEMFD_FLAGS: u64 = 244;
pub const KVM_CREATE_GUEST_MEMFD: u32 = iowr(KVMIO, 0xd4, 64);
/// The file may be mapped (MAP_SHARED only).
pub const GUEST_MEMFD_FLAG_MMAP: u64 = 1 << 0;
/// Its pages start shared with the host, so a mapping of them may fault them in.
pub const GUEST_MEMFD_FLAG_INIT_SHARED: u64 = 1 << 1;
/// What arm64 offers for every VM (`kvm_gmem_get_supported_flags`; arm64 keeps the generic
/// `kvm_arch_supports_gmem_init_shared`, true).
pub const GUEST_MEMFD_FLAGS: u64 = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
/// KVM_RUN's exit when a guest_memfd page cannot be had: `memory_fault` (flags, gpa, size
/// at the union's start).
pub const KVM_EXIT_MEMORY_FAULT: u32 = 39;
/// A memory slot backed by a guest_memfd (KVM_SET_USER_MEMORY_REGION2 only).
pub const KVM_MEM_GUEST_MEMFD: u32 = 1 << 2;

/// `struct kvm_create_guest_memfd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmCreateGuestMemfd {
    pub size: u64,
    pub flags: u64,
    pub reserved: [u64; 6],
}
const _: () = assert!(core::mem::size_of::<KvmCreateGuestMemfd>() == 64);

/// `struct kvm_userspace_memory_region2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct KvmUserspaceMemoryRegion2 {
    pub slot: u32,
    pub flags: u32,
    pub guest_phys_addr: u64,
    pub memory_size: u64,
    pub userspace_addr: u64,
    pub guest_memfd_offset: u64,
    pub guest_memfd: u32,
    pub pad1: u32,
    pub pad2: [u64; 14],
}
const _: () = assert!(core::mem::size_of::<KvmUserspaceMemoryRegion2>() == 160);

/// KVM_CREATE_GUEST_MEMFD's checks (`kvm_gmem_create`): known flags, then a positive size in
/// whole pages. The reserved words are not looked at.
pub fn check_create(a: &KvmCreateGuestMemfd, page: u64) -> Result<(), Errno> {
    if a.flags & !GUEST_MEMFD_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    if a.size as i64 <= 0 || a.size & (page - 1) != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// A KVM_SET_USER_MEMORY_REGION2, checked: the slot change and, for a guest_memfd slot, the
/// descriptor and offset to bind (which need the VM to check further).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region2 {
    pub change: SlotChange,
    pub gmem: Option<(u32, u64)>,
}

/// Checks a KVM_SET_USER_MEMORY_REGION2 as `check_memory_region_flags` and
/// `kvm_set_memory_region` do: a guest_memfd slot may neither log dirty pages nor be
/// read-only, and its offset is page-aligned and does not wrap with the size; the rest as
/// [`check_region`]. A `Set` keeps KVM_MEM_GUEST_MEMFD in its flags.
pub fn check_region2(
    r: &KvmUserspaceMemoryRegion2,
    page: u64,
    user_end: u64,
    ipa_limit: u64,
) -> Result<Region2, Errno> {
    let gmem = r.flags & KVM_MEM_GUEST_MEMFD != 0;
    let valid = if gmem {
        KVM_MEM_GUEST_MEMFD
    } else {
        KVM_MEM_LOG_DIRTY_PAGES | KVM_MEM_READONLY
    };
    if r.flags & !valid != 0 {
        return Err(Errno::EINVAL);
    }
    if gmem
        && (r.guest_memfd_offset & (page - 1) != 0
            || r.guest_memfd_offset.checked_add(r.memory_size).is_none())
    {
        return Err(Errno::EINVAL);
    }
    let v1 = KvmUserspaceMemoryRegion {
        slot: r.slot,
        flags: r.flags & !KVM_MEM_GUEST_MEMFD,
        guest_phys_addr: r.guest_phys_addr,
        memory_size: r.memory_size,
        userspace_addr: r.userspace_addr,
    };
    let change = match check_region(&v1, page, user_end, ipa_limit)? {
        SlotChange::Set {
            slot,
            gpa,
            size,
            uaddr,
            flags,
        } => SlotChange::Set {
            slot,
            gpa,
            size,
            uaddr,
            flags: flags | (r.flags & KVM_MEM_GUEST_MEMFD),
        },
        d => d,
    };
    let gmem = match change {
        SlotChange::Set { .. } if gmem => Some((r.guest_memfd, r.guest_memfd_offset)),
        _ => None,
    };
    Ok(Region2 { change, gmem })
}

/// What fallocate does on a guest_memfd (`kvm_gmem_fallocate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallocate {
    /// Free the pages of [start, end) (page offsets): they read as zero again.
    PunchHole { start: u64, end: u64 },
    /// Allocate the pages of [start, end).
    Allocate { start: u64, end: u64 },
}

pub const FALLOC_FL_KEEP_SIZE: i32 = 1;
pub const FALLOC_FL_PUNCH_HOLE: i32 = 2;

/// fallocate's rules on a guest_memfd of `size` bytes, after the generic ones (vfs_fallocate:
/// offset >= 0, len > 0, known modes): the size never changes (KEEP_SIZE is required,
/// EOPNOTSUPP), page-aligned offset and length (EINVAL), and an allocation inside the file
/// (EINVAL); a hole may be punched past the end (it frees nothing there).
pub fn fallocate(
    mode: i32,
    offset: u64,
    len: u64,
    size: u64,
    page: u64,
) -> Result<Fallocate, Errno> {
    if mode & FALLOC_FL_KEEP_SIZE == 0 || mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) != 0
    {
        return Err(Errno::EOPNOTSUPP);
    }
    if offset & (page - 1) != 0 || len & (page - 1) != 0 {
        return Err(Errno::EINVAL);
    }
    let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
    let (start, end) = (offset / page, end / page);
    if mode & FALLOC_FL_PUNCH_HOLE != 0 {
        Ok(Fallocate::PunchHole { start, end })
    } else if end * page > size {
        Err(Errno::EINVAL)
    } else {
        Ok(Fallocate::Allocate { start, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_rules() {
        let mk = |size, flags| KvmCreateGuestMemfd {
            size,
            flags,
            ..Default::default()
        };
        assert_eq!(check_create(&mk(4096, 0), 4096), Ok(()));
        assert_eq!(check_create(&mk(4096, 3), 4096), Ok(()));
        assert_eq!(check_create(&mk(4096, 4), 4096), Err(Errno::EINVAL));
        assert_eq!(check_create(&mk(0, 0), 4096), Err(Errno::EINVAL));
        assert_eq!(check_create(&mk(1, 0), 4096), Err(Errno::EINVAL));
        assert_eq!(check_create(&mk(!4095u64, 0), 4096), Err(Errno::EINVAL));
    }

    #[test]
    fn region2_rules() {
        let mut r = KvmUserspaceMemoryRegion2 {
            slot: 1,
            flags: KVM_MEM_GUEST_MEMFD,
            guest_phys_addr: 1 << 32,
            memory_size: 4096,
            ..Default::default()
        };
        let ok = check_region2(&r, 4096, 1 << 48, 1 << 40).unwrap();
        assert_eq!(ok.gmem, Some((0, 0)));
        r.flags |= KVM_MEM_READONLY;
        assert_eq!(
            check_region2(&r, 4096, 1 << 48, 1 << 40),
            Err(Errno::EINVAL)
        );
        r.flags = KVM_MEM_GUEST_MEMFD | KVM_MEM_LOG_DIRTY_PAGES;
        assert_eq!(
            check_region2(&r, 4096, 1 << 48, 1 << 40),
            Err(Errno::EINVAL)
        );
        r.flags = KVM_MEM_GUEST_MEMFD;
        r.guest_memfd_offset = 100;
        assert_eq!(
            check_region2(&r, 4096, 1 << 48, 1 << 40),
            Err(Errno::EINVAL)
        );
        r.guest_memfd_offset = !4095u64;
        assert_eq!(
            check_region2(&r, 4096, 1 << 48, 1 << 40),
            Err(Errno::EINVAL)
        );
        // Large but not wrapping: left to the binding (the file's size).
        r.guest_memfd_offset = (i64::MAX as u64) & !4095;
        assert!(check_region2(&r, 4096, 1 << 48, 1 << 40).is_ok());
    }

    #[test]
    fn fallocate_rules() {
        let (p, size) = (4096, 4 * 4096);
        assert_eq!(fallocate(0, 0, p, size, p), Err(Errno::EOPNOTSUPP));
        assert_eq!(
            fallocate(FALLOC_FL_KEEP_SIZE, 0, size, size, p),
            Ok(Fallocate::Allocate { start: 0, end: 4 })
        );
        assert_eq!(
            fallocate(FALLOC_FL_KEEP_SIZE, size, p, size, p),
            Err(Errno::EINVAL)
        );
        assert_eq!(fallocate(3, p - 1, p, size, p), Err(Errno::EINVAL));
        assert_eq!(
            fallocate(3, size + p, p, size, p),
            Ok(Fallocate::PunchHole { start: 5, end: 6 })
        );
        assert_eq!(fallocate(3, p, p - 1, size, p), Err(Errno::EINVAL));
    }
}
