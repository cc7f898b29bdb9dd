//! Memory-management uapi: mmap/mprotect/madvise/mremap/msync/mlockall constants (asm-generic
//! values plus the arm64 PROT_BTI/PROT_MTE) and the argument checks mmap applies before it
//! looks at the address space.

use crate::uapi::errno::{Errno, SysResult};

pub const PROT_NONE: u32 = 0x0;
pub const PROT_READ: u32 = 0x1;
pub const PROT_WRITE: u32 = 0x2;
pub const PROT_EXEC: u32 = 0x4;
pub const PROT_SEM: u32 = 0x8;
/// arm64: pages are BTI guarded.
pub const PROT_BTI: u32 = 0x10;
/// arm64: pages have MTE tags.
pub const PROT_MTE: u32 = 0x20;
pub const PROT_GROWSDOWN: u32 = 0x0100_0000;
pub const PROT_GROWSUP: u32 = 0x0200_0000;

pub const MAP_SHARED: u32 = 0x01;
pub const MAP_PRIVATE: u32 = 0x02;
pub const MAP_SHARED_VALIDATE: u32 = 0x03;
pub const MAP_TYPE: u32 = 0x0f;
pub const MAP_FIXED: u32 = 0x10;
pub const MAP_ANONYMOUS: u32 = 0x20;
pub const MAP_GROWSDOWN: u32 = 0x0100;
pub const MAP_DENYWRITE: u32 = 0x0800;
pub const MAP_EXECUTABLE: u32 = 0x1000;
pub const MAP_LOCKED: u32 = 0x2000;
pub const MAP_NORESERVE: u32 = 0x4000;
pub const MAP_POPULATE: u32 = 0x8000;
pub const MAP_NONBLOCK: u32 = 0x10000;
pub const MAP_STACK: u32 = 0x20000;
pub const MAP_HUGETLB: u32 = 0x40000;
pub const MAP_SYNC: u32 = 0x80000;
pub const MAP_FIXED_NOREPLACE: u32 = 0x100000;
pub const MAP_UNINITIALIZED: u32 = 0x4000000;
/// mmap's error return as a pointer: (void *)-1.
pub const MAP_FAILED: usize = usize::MAX;

/// Flags MAP_SHARED_VALIDATE accepts (`LEGACY_MAP_MASK` plus MAP_SYNC); others give EOPNOTSUPP.
pub const LEGACY_MAP_MASK: u32 = MAP_SHARED
    | MAP_PRIVATE
    | MAP_FIXED
    | MAP_ANONYMOUS
    | MAP_DENYWRITE
    | MAP_EXECUTABLE
    | MAP_UNINITIALIZED
    | MAP_GROWSDOWN
    | MAP_LOCKED
    | MAP_NORESERVE
    | MAP_POPULATE
    | MAP_NONBLOCK
    | MAP_STACK
    | MAP_HUGETLB;

pub const MREMAP_MAYMOVE: u32 = 1;
pub const MREMAP_FIXED: u32 = 2;
pub const MREMAP_DONTUNMAP: u32 = 4;

pub const MS_ASYNC: u32 = 1;
pub const MS_INVALIDATE: u32 = 2;
pub const MS_SYNC: u32 = 4;

pub const MCL_CURRENT: u32 = 1;
pub const MCL_FUTURE: u32 = 2;
pub const MCL_ONFAULT: u32 = 4;

pub const MADV_NORMAL: u32 = 0;
pub const MADV_RANDOM: u32 = 1;
pub const MADV_SEQUENTIAL: u32 = 2;
pub const MADV_WILLNEED: u32 = 3;
pub const MADV_DONTNEED: u32 = 4;
pub const MADV_FREE: u32 = 8;
pub const MADV_REMOVE: u32 = 9;
pub const MADV_DONTFORK: u32 = 10;
pub const MADV_DOFORK: u32 = 11;
pub const MADV_MERGEABLE: u32 = 12;
pub const MADV_UNMERGEABLE: u32 = 13;
pub const MADV_HUGEPAGE: u32 = 14;
pub const MADV_NOHUGEPAGE: u32 = 15;
pub const MADV_DONTDUMP: u32 = 16;
pub const MADV_DODUMP: u32 = 17;
pub const MADV_WIPEONFORK: u32 = 18;
pub const MADV_KEEPONFORK: u32 = 19;
pub const MADV_COLD: u32 = 20;
pub const MADV_PAGEOUT: u32 = 21;
pub const MADV_POPULATE_READ: u32 = 22;
pub const MADV_POPULATE_WRITE: u32 = 23;
pub const MADV_DONTNEED_LOCKED: u32 = 24;
pub const MADV_COLLAPSE: u32 = 25;
pub const MADV_HWPOISON: u32 = 100;
pub const MADV_SOFT_OFFLINE: u32 = 101;

/// The kind of mapping an mmap call asks for, after its flags are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmapRequest {
    /// Page-aligned start: a hint, or exact with `fixed`.
    pub addr: usize,
    /// Length rounded up to whole pages.
    pub len: usize,
    pub prot: u32,
    pub flags: u32,
    pub shared: bool,
    pub anonymous: bool,
    /// MAP_FIXED: replace whatever is there.
    pub fixed: bool,
    /// MAP_FIXED_NOREPLACE: exact address, EEXIST if anything is there.
    pub noreplace: bool,
    /// File offset (page-aligned; 0 for anonymous).
    pub offset: u64,
}

/// PROT bits arm64 knows (`arch_validate_prot`): mprotect rejects others with EINVAL.
pub const PROT_KNOWN: u32 = PROT_READ | PROT_WRITE | PROT_EXEC | PROT_SEM | PROT_BTI | PROT_MTE;

/// mprotect's check of its `prot` argument (GROWSDOWN/GROWSUP are handled by the caller).
pub fn mprotect_prot_check(prot: u32) -> SysResult<u32> {
    if prot & !(PROT_KNOWN | PROT_GROWSDOWN | PROT_GROWSUP) != 0 {
        Err(Errno::EINVAL)
    } else {
        Ok(prot)
    }
}

/// The argument checks mmap makes before touching the address space, in Linux's order:
/// offset not page-aligned ⇒ EINVAL (arm64 `sys_mmap`); len 0 ⇒ EINVAL; the rounded-up length
/// overflowing ⇒ ENOMEM; offset + length overflowing ⇒ EOVERFLOW; a mapping type other than
/// SHARED, PRIVATE or SHARED_VALIDATE ⇒ EINVAL; SHARED_VALIDATE with unknown flags ⇒ EOPNOTSUPP;
/// MAP_FIXED(_NOREPLACE) at an unaligned address ⇒ EINVAL. Unknown PROT bits are ignored here,
/// as Linux's mmap does. `page` is the page size (a power of two).
pub fn mmap_check(
    addr: usize,
    len: usize,
    prot: u32,
    flags: u32,
    offset: u64,
    page: usize,
) -> SysResult<MmapRequest> {
    if offset & (page as u64 - 1) != 0 {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let len = len.checked_next_multiple_of(page).ok_or(Errno::ENOMEM)?;
    if offset.checked_add(len as u64).is_none() {
        return Err(Errno::EOVERFLOW);
    }
    let shared = match flags & MAP_TYPE {
        MAP_PRIVATE => false,
        MAP_SHARED => true,
        MAP_SHARED_VALIDATE => {
            if flags & !(LEGACY_MAP_MASK | MAP_SYNC | MAP_FIXED_NOREPLACE | MAP_SHARED_VALIDATE)
                != 0
            {
                return Err(Errno::EOPNOTSUPP);
            }
            true
        }
        _ => return Err(Errno::EINVAL),
    };
    let fixed = flags & MAP_FIXED != 0;
    let noreplace = !fixed && flags & MAP_FIXED_NOREPLACE != 0;
    if (fixed || noreplace) && addr & (page - 1) != 0 {
        return Err(Errno::EINVAL);
    }
    let anonymous = flags & MAP_ANONYMOUS != 0;
    // No huge page pool (as Linux with vm.nr_hugepages = 0): an anonymous MAP_HUGETLB finds
    // no pages to reserve; a file that is not on hugetlbfs refuses the flag (ksys_mmap_pgoff).
    if flags & MAP_HUGETLB != 0 {
        return Err(if anonymous {
            Errno::ENOMEM
        } else {
            Errno::EINVAL
        });
    }
    Ok(MmapRequest {
        addr: addr & !(page - 1),
        len,
        prot,
        flags,
        shared,
        anonymous,
        fixed,
        noreplace,
        offset: if anonymous { 0 } else { offset },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG: usize = 4096;

    #[test]
    fn mmap_argument_rules() {
        let r = mmap_check(0, 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, 0, PG).unwrap();
        assert_eq!(r.len, PG);
        assert!(r.anonymous && !r.shared && !r.fixed);
        assert_eq!(mmap_check(0, 0, 0, MAP_PRIVATE, 0, PG), Err(Errno::EINVAL));
        assert!(mmap_check(0, PG, 0x40, MAP_PRIVATE, 0, PG).is_ok());
        assert_eq!(mprotect_prot_check(0x40), Err(Errno::EINVAL));
        assert_eq!(mprotect_prot_check(PROT_READ | PROT_BTI), Ok(0x11));
        assert_eq!(mmap_check(0, PG, 0, 0, 0, PG), Err(Errno::EINVAL));
        assert_eq!(mmap_check(0, PG, 0, 0x4, 0, PG), Err(Errno::EINVAL));
        assert_eq!(mmap_check(0, PG, 0, MAP_PRIVATE, 1, PG), Err(Errno::EINVAL));
        assert_eq!(
            mmap_check(0, usize::MAX, 0, MAP_PRIVATE, 0, PG),
            Err(Errno::ENOMEM)
        );
        assert_eq!(
            mmap_check(0x1001, PG, 0, MAP_PRIVATE | MAP_FIXED, 0, PG),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            mmap_check(0, PG, 0, MAP_SHARED_VALIDATE | 0x200_0000, 0, PG),
            Err(Errno::EOPNOTSUPP)
        );
        // No huge pages: anonymous MAP_HUGETLB finds none, a plain file refuses it.
        let huge = MAP_PRIVATE | MAP_HUGETLB | (21 << 26);
        assert_eq!(
            mmap_check(0, 2 << 20, PROT_READ, huge | MAP_ANONYMOUS, 0, PG),
            Err(Errno::ENOMEM)
        );
        assert_eq!(
            mmap_check(0, PG, PROT_READ, huge, 0, PG),
            Err(Errno::EINVAL)
        );
        // Unknown flags are ignored with plain MAP_SHARED.
        assert!(
            mmap_check(0, PG, 0, MAP_SHARED | 0x200_0000, 0, PG)
                .unwrap()
                .shared
        );
        let r = mmap_check(
            0x5000,
            PG,
            PROT_READ,
            MAP_PRIVATE | MAP_FIXED_NOREPLACE,
            0,
            PG,
        );
        assert!(r.unwrap().noreplace);
        assert_eq!(
            mmap_check(0, PG, 0, MAP_PRIVATE, !0xfff, PG),
            Err(Errno::EOVERFLOW)
        );
    }
}
