//! brk, mmap, munmap, mprotect, madvise.

use crate::arch::aarch64::mmu::PAGE_SIZE;
use crate::mm::aspace::{Backing, Prot, SharedMem, MMAP_MIN, USER_END};
use crate::task::with_mm;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::mm as m;

const PAGE: usize = PAGE_SIZE;

pub fn brk(addr: usize) -> SysResult<usize> {
    with_mm(|mm| {
        let (start, cur) = (mm.brk_start, mm.brk);
        if addr < start || addr >= crate::mm::aspace::MMAP_TOP {
            return Ok(cur);
        }
        let old_end = cur.next_multiple_of(PAGE);
        let new_end = addr.next_multiple_of(PAGE);
        if new_end > old_end {
            if !mm.is_free(old_end, new_end) {
                return Ok(cur);
            }
            mm.map(
                old_end,
                new_end,
                Prot(Prot::READ | Prot::WRITE),
                Backing::Anon,
            );
        } else if new_end < old_end {
            mm.unmap(new_end, old_end);
        }
        mm.brk = addr;
        Ok(addr)
    })
}

pub fn mmap(addr: usize, len: usize, prot: u32, flags: u32, fd: i32, off: u64) -> SysResult<usize> {
    let req = m::mmap_check(addr, len, prot, flags, off, PAGE)?;
    if !req.anonymous {
        // File mappings: only what the initramfs files need could be supported by copying;
        // not implemented yet.
        let _ = crate::task::current().files().lock().get(fd)?;
        return Err(Errno::ENODEV);
    }
    let len = req.len;
    let p = Prot(prot & (m::PROT_READ | m::PROT_WRITE | m::PROT_EXEC));
    with_mm(|mm| {
        let start = if req.fixed || req.noreplace {
            if !addr.is_multiple_of(PAGE) {
                return Err(Errno::EINVAL);
            }
            let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
            if end > USER_END || addr < MMAP_MIN {
                return Err(if req.noreplace {
                    Errno::ENOMEM
                } else {
                    Errno::EPERM
                });
            }
            if req.noreplace && !mm.is_free(addr, end) {
                return Err(Errno::EEXIST);
            }
            addr
        } else {
            mm.find_free(len, addr & !(PAGE - 1)).ok_or(Errno::ENOMEM)?
        };
        let backing = if req.shared {
            Backing::Shared(SharedMem::new(), 0)
        } else {
            Backing::Anon
        };
        mm.map(start, start + len, p, backing);
        Ok(start)
    })
}

pub fn munmap(addr: usize, len: usize) -> SysResult<usize> {
    if !addr.is_multiple_of(PAGE) || len == 0 {
        return Err(Errno::EINVAL);
    }
    let end = addr
        .checked_add(len.next_multiple_of(PAGE))
        .ok_or(Errno::EINVAL)?;
    if end > USER_END {
        return Err(Errno::EINVAL);
    }
    with_mm(|mm| {
        mm.unmap(addr, end);
        Ok(0)
    })
}

pub fn mprotect(addr: usize, len: usize, prot: u32) -> SysResult<usize> {
    let prot = m::mprotect_prot_check(prot)?;
    if !addr.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let end = addr
        .checked_add(len.next_multiple_of(PAGE))
        .ok_or(Errno::ENOMEM)?;
    if end > USER_END {
        return Err(Errno::ENOMEM);
    }
    with_mm(|mm| mm.protect(addr, end, Prot(prot & 7)).map(|()| 0))
}

pub fn madvise(addr: usize, len: usize, advice: u32) -> SysResult<usize> {
    if !addr.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    match advice {
        m::MADV_DONTNEED => {
            // Private anonymous pages read back as zero afterwards: drop them.
            let end = addr
                .checked_add(len.next_multiple_of(PAGE))
                .ok_or(Errno::EINVAL)?;
            with_mm(|mm| {
                let vmas: alloc::vec::Vec<_> = mm
                    .vmas()
                    .filter(|v| v.start < end && v.end > addr)
                    .cloned()
                    .collect();
                for v in vmas {
                    let (s, e) = (v.start.max(addr), v.end.min(end));
                    if matches!(v.backing, Backing::Anon) {
                        mm.map(s, e, v.prot, Backing::Anon);
                    }
                }
                Ok(0)
            })
        }
        _ => Ok(0),
    }
}
