//! brk, mmap, munmap, mprotect, mremap, msync, madvise.
//!
//! Limits as Linux applies them: vm.max_map_count (in the address space), RLIMIT_AS on the
//! total mapped, RLIMIT_DATA on private writable memory (brk and mmap; mm::place checks both,
//! with the process's values from here).

#![forbid(unsafe_code)]

use crate::arch::mmu::PAGE_SIZE;
use crate::fs::Kind;
use crate::mm::aspace::{AddrSpace, Backing, Prot, SharedMem, MMAP_MIN, USER_END};
use crate::mm::place::{check_limits, map_new, Place};
use crate::process::CurrentTask;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{O_APPEND, O_PATH};
use svelt_abi::uapi::mm as m;

const PAGE: usize = PAGE_SIZE;

fn rlimit(cur: &CurrentTask, resource: u32) -> u64 {
    cur.process().rlimit(resource)
}

pub fn brk(me: &CurrentTask, addr: usize) -> SysResult<usize> {
    me.with_mm(|mm| {
        let (start, cur) = (mm.brk_start, mm.brk);
        if addr < start || addr >= crate::mm::aspace::MMAP_TOP {
            return Ok(cur);
        }
        let old_end = cur.next_multiple_of(PAGE);
        let new_end = addr.next_multiple_of(PAGE);
        if new_end > old_end {
            if !mm.is_free(old_end, new_end)
                || check_limits(mm, new_end - old_end, true, |r| rlimit(me, r)).is_err()
                || mm
                    .map(
                        old_end,
                        new_end,
                        Prot(Prot::READ | Prot::WRITE),
                        Backing::Anon,
                    )
                    .is_err()
            {
                return Ok(cur);
            }
        } else if new_end < old_end && mm.unmap(new_end, old_end).is_err() {
            return Ok(cur);
        }
        mm.brk = addr;
        Ok(addr)
    })
}

pub fn mmap(
    cur: &CurrentTask,
    addr: usize,
    len: usize,
    prot: u32,
    flags: u32,
    fd: i32,
    off: u64,
) -> SysResult<usize> {
    let req = m::mmap_check(addr, len, prot, flags, off, PAGE)?;
    let p = Prot(prot & (m::PROT_READ | m::PROT_WRITE | m::PROT_EXEC));
    let place = if req.noreplace {
        Place::NoReplace
    } else if req.fixed {
        Place::Fixed
    } else {
        Place::Hint
    };
    let backing = if req.anonymous {
        if req.shared {
            Backing::Shared(SharedMem::new(), 0)
        } else {
            Backing::Anon
        }
    } else {
        let file = cur.files().lock().get(fd)?;
        let Some(node) = file.node.clone() else {
            // A file with no inode maps what its operations offer (a vCPU's kvm_run page).
            let node = file.ops.mmap_file().ok_or(Errno::ENODEV)?;
            if !req.shared && file.ops.mmap_shared_only() {
                return Err(Errno::EINVAL);
            }
            let (pgoff, pages) = (req.offset / PAGE as u64, req.len.div_ceil(PAGE) as u64);
            file.ops
                .mmap_check(pgoff, pages, p.0 & m::PROT_EXEC != 0, req.shared)?;
            let backing = Backing::File {
                node: node.clone(),
                off: req.offset,
                shared: req.shared,
                maywrite: !req.shared || file.writable(),
            };
            let r = cur
                .with_mm(|mm| map_new(mm, addr, req.len, p, backing, place, |r| rlimit(cur, r)))?;
            // Known as a mapper of the file, so that a hole punched in it leaves this mapping.
            if let Some(mm) = cur.mm() {
                crate::mm::aspace::register_file_map(&mm, &node);
            }
            return Ok(r);
        };
        match node.kind() {
            Kind::File => {}
            // /dev/zero maps as anonymous memory.
            Kind::CharDev if node.rdev() == (1, 5) => {}
            Kind::Dir | Kind::Symlink | Kind::CharDev | Kind::Socket | Kind::Fifo => {
                return Err(Errno::ENODEV)
            }
        }
        if !file.readable() || file.flags() & O_PATH != 0 {
            return Err(if file.flags() & O_PATH != 0 {
                Errno::EBADF
            } else {
                Errno::EACCES
            });
        }
        if req.shared && p.w() && (!file.writable() || file.flags() & O_APPEND != 0) {
            return Err(Errno::EACCES);
        }
        if node.kind() == Kind::CharDev {
            if req.shared {
                Backing::Shared(SharedMem::new(), 0)
            } else {
                Backing::Anon
            }
        } else {
            Backing::File {
                node,
                off: req.offset,
                shared: req.shared,
                maywrite: !req.shared || (file.writable() && file.flags() & O_APPEND == 0),
            }
        }
    };
    let len = req.len;
    let file_node = match &backing {
        Backing::File { node, .. } => Some(node.clone()),
        _ => None,
    };
    let r = cur.with_mm(|mm| map_new(mm, addr, len, p, backing, place, |r| rlimit(cur, r)))?;
    if let (Some(node), Some(mm)) = (file_node, cur.mm()) {
        crate::mm::aspace::register_file_map(&mm, &node);
    }
    Ok(r)
}

/// The page-aligned range `[addr, addr + len)` (len rounded up), or `err`.
fn user_range(addr: usize, len: usize, err: Errno) -> SysResult<usize> {
    if !addr.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    let end = len
        .checked_next_multiple_of(PAGE)
        .and_then(|l| addr.checked_add(l))
        .ok_or(err)?;
    if end > USER_END {
        return Err(err);
    }
    Ok(end)
}

pub fn munmap(cur: &CurrentTask, addr: usize, len: usize) -> SysResult<usize> {
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let end = user_range(addr, len, Errno::EINVAL)?;
    cur.with_mm(|mm| mm.unmap(addr, end).map(|()| 0))
}

pub fn mprotect(cur: &CurrentTask, addr: usize, len: usize, prot: u32) -> SysResult<usize> {
    let prot = m::mprotect_prot_check(prot)?;
    let end = user_range(addr, len, Errno::ENOMEM)?;
    if len == 0 {
        return Ok(0);
    }
    cur.with_mm(|mm| {
        // A shared mapping of a file not open for writing never becomes writable.
        if prot & m::PROT_WRITE != 0
            && mm.vmas().any(|v| {
                v.start < end
                    && v.end > addr
                    && matches!(
                        v.backing,
                        Backing::File {
                            shared: true,
                            maywrite: false,
                            ..
                        }
                    )
            })
        {
            return Err(Errno::EACCES);
        }
        // A shadow stack is never executable (Linux: arch_validate_flags).
        if prot & m::PROT_EXEC != 0
            && mm
                .vmas()
                .any(|v| v.start < end && v.end > addr && v.prot.shadow())
        {
            return Err(Errno::EINVAL);
        }
        mm.protect(addr, end, Prot(prot & 7)).map(|()| 0)
    })
}

/// Whether `[start, end)` is mapped without holes.
fn fully_mapped(mm: &AddrSpace, start: usize, end: usize) -> bool {
    mm.mapped_until(start, end) == end
}

pub fn msync(cur: &CurrentTask, addr: usize, len: usize, flags: u32) -> SysResult<usize> {
    if flags & !(m::MS_ASYNC | m::MS_INVALIDATE | m::MS_SYNC) != 0
        || flags & (m::MS_ASYNC | m::MS_SYNC) == (m::MS_ASYNC | m::MS_SYNC)
    {
        return Err(Errno::EINVAL);
    }
    let end = user_range(addr, len, Errno::ENOMEM)?;
    // File pages are the page cache itself: there is nothing to write back.
    cur.with_mm(|mm| {
        if fully_mapped(mm, addr, end) {
            Ok(0)
        } else {
            Err(Errno::ENOMEM)
        }
    })
}

pub fn mremap(
    cur: &CurrentTask,
    old: usize,
    old_len: usize,
    new_len: usize,
    flags: u32,
    new: usize,
) -> SysResult<usize> {
    if flags & !(m::MREMAP_MAYMOVE | m::MREMAP_FIXED | m::MREMAP_DONTUNMAP) != 0
        || (flags & m::MREMAP_FIXED != 0 && flags & m::MREMAP_MAYMOVE == 0)
        || !old.is_multiple_of(PAGE)
        || new_len == 0
    {
        return Err(Errno::EINVAL);
    }
    if flags & m::MREMAP_DONTUNMAP != 0 {
        return Err(Errno::EINVAL);
    }
    let old_len = old_len
        .checked_next_multiple_of(PAGE)
        .ok_or(Errno::EINVAL)?;
    let new_len = new_len
        .checked_next_multiple_of(PAGE)
        .ok_or(Errno::ENOMEM)?;
    if old_len == 0 {
        // Duplicating a shared mapping: not supported.
        return Err(Errno::EINVAL);
    }
    let old_end = old.checked_add(old_len).ok_or(Errno::EFAULT)?;
    cur.with_mm(|mm| {
        let v = mm.find_vma(old).ok_or(Errno::EFAULT)?;
        if old_end > v.end {
            return Err(Errno::EFAULT);
        }
        let (prot, backing, vstart, vend) = (v.prot, v.backing.clone(), v.start, v.end);
        let data = prot.w() && !backing.is_shared();
        if flags & m::MREMAP_FIXED != 0 {
            if !new.is_multiple_of(PAGE) {
                return Err(Errno::EINVAL);
            }
            let new_end = new.checked_add(new_len).ok_or(Errno::EINVAL)?;
            if new_end > USER_END || new < MMAP_MIN {
                return Err(Errno::EINVAL);
            }
            if new < old_end && old < new_end {
                return Err(Errno::EINVAL);
            }
            check_limits(mm, new_len.saturating_sub(old_len), data, |r| {
                rlimit(cur, r)
            })?;
            mm.unmap(new, new_end)?;
            return move_range(mm, old, old_len, new, new_len, prot, &backing, vstart);
        }
        if new_len <= old_len {
            mm.unmap(old + new_len, old_end)?;
            return Ok(old);
        }
        let grow = new_len - old_len;
        check_limits(mm, grow, data, |r| rlimit(cur, r))?;
        let grown_end = old_end.checked_add(grow).filter(|&e| e <= USER_END);
        if old_end == vend && grown_end.is_some_and(|e| mm.is_free(old_end, e)) {
            mm.map(
                old_end,
                old_end + grow,
                prot,
                backing.advanced_by(old_end - vstart),
            )?;
            return Ok(old);
        }
        if flags & m::MREMAP_MAYMOVE == 0 {
            return Err(Errno::ENOMEM);
        }
        let new = mm.find_free(new_len, 0).ok_or(Errno::ENOMEM)?;
        move_range(mm, old, old_len, new, new_len, prot, &backing, vstart)
    })
}

/// Moves the pages of `[old, old + old_len)` to a new mapping at `new` of `new_len` bytes.
#[allow(clippy::too_many_arguments)]
fn move_range(
    mm: &mut AddrSpace,
    old: usize,
    old_len: usize,
    new: usize,
    new_len: usize,
    prot: Prot,
    backing: &Backing,
    vstart: usize,
) -> SysResult<usize> {
    mm.map(new, new + new_len, prot, backing.advanced_by(old - vstart))?;
    mm.move_ptes(old, new, old_len.min(new_len))?;
    mm.unmap(old, old + old_len)?;
    Ok(new)
}

pub fn madvise(cur: &CurrentTask, addr: usize, len: usize, advice: u32) -> SysResult<usize> {
    if !addr.is_multiple_of(PAGE) {
        return Err(Errno::EINVAL);
    }
    match advice {
        m::MADV_DONTNEED | m::MADV_FREE => {
            let end = user_range(addr, len, Errno::EINVAL)?;
            cur.with_mm(|mm| {
                // Private anonymous pages read back as zero, file and shared pages as what
                // the object holds: drop this address space's references.
                let hole = !fully_mapped(mm, addr, end);
                let ranges = crate::mm::try_collect(
                    mm.vmas()
                        .filter(|v| v.start < end && v.end > addr)
                        .map(|v| (v.start.max(addr), v.end.min(end))),
                )?;
                for (s, e) in ranges {
                    mm.zap(s, e);
                }
                if hole {
                    Err(Errno::ENOMEM)
                } else {
                    Ok(0)
                }
            })
        }
        // No huge page can be made here, as Linux answers for a range it cannot collapse.
        m::MADV_COLLAPSE => Err(Errno::EINVAL),
        _ => Ok(0),
    }
}

/// ENOMEM/EPERM when `more` locked bytes would pass RLIMIT_MEMLOCK for an unprivileged caller.
fn check_memlock(cur: &CurrentTask, mm: &AddrSpace, more: usize) -> SysResult<()> {
    if super::cred::privileged(cur) {
        return Ok(());
    }
    let limit = rlimit(cur, svelt_abi::uapi::sys::RLIMIT_MEMLOCK);
    if limit == 0 {
        return Err(Errno::EPERM);
    }
    if (mm.locked_vm() + more) as u64 > limit {
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

/// mlock/mlock2 (`onfault`: MLOCK_ONFAULT, lock without faulting in) and munlock.
pub fn mlock(
    cur: &CurrentTask,
    addr: usize,
    len: usize,
    lock: bool,
    flags: u32,
) -> SysResult<usize> {
    const MLOCK_ONFAULT: u32 = 1;
    if flags & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    // The range is widened to whole pages (the start rounded down, as Linux does).
    let start = addr & !(PAGE - 1);
    let end = addr
        .checked_add(len)
        .and_then(|e| e.checked_next_multiple_of(PAGE))
        .ok_or(Errno::EINVAL)?;
    if end > USER_END {
        return Err(Errno::ENOMEM);
    }
    if start == end {
        return Ok(0);
    }
    cur.with_mm(|mm| {
        if lock {
            check_memlock(cur, mm, mm.unlocked_in(start, end))?;
        }
        // As Linux: the mappings before a hole are (un)locked, then the hole is ENOMEM (and
        // nothing is faulted in).
        let covered = mm.mapped_until(start, end);
        if covered < end {
            if covered > start {
                mm.set_locked(start, covered, lock, false)?;
            }
            return Err(Errno::ENOMEM);
        }
        mm.set_locked(start, end, lock, flags & MLOCK_ONFAULT == 0)
            .map(|()| 0)
    })
}

pub fn mlockall(cur: &CurrentTask, flags: u32) -> SysResult<usize> {
    if flags == 0
        || flags & !(m::MCL_CURRENT | m::MCL_FUTURE | m::MCL_ONFAULT) != 0
        || flags == m::MCL_ONFAULT
    {
        return Err(Errno::EINVAL);
    }
    cur.with_mm(|mm| {
        if flags & m::MCL_CURRENT != 0 {
            let all = crate::mm::try_collect(mm.vmas().map(|v| (v.start, v.end)))?;
            check_memlock(
                cur,
                mm,
                all.iter().map(|(s, e)| e - s).sum::<usize>() - mm.locked_vm(),
            )?;
            for (s, e) in all {
                mm.set_locked(s, e, true, flags & m::MCL_ONFAULT == 0)?;
            }
        }
        mm.set_lock_future(flags & m::MCL_FUTURE != 0);
        Ok(0)
    })
}

pub fn munlockall(cur: &CurrentTask) -> SysResult<usize> {
    cur.with_mm(|mm| {
        let all = crate::mm::try_collect(mm.vmas().map(|v| (v.start, v.end)))?;
        for (s, e) in all {
            mm.set_locked(s, e, false, false)?;
        }
        mm.set_lock_future(false);
        Ok(0)
    })
}
