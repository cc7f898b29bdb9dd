//! Placing a new user mapping (near a hint, MAP_FIXED, MAP_FIXED_NOREPLACE) and the limits an
//! address space grows under, as Linux applies them: RLIMIT_AS on the total mapped, RLIMIT_DATA
//! on private writable memory. The caller passes the limits in (`rlimit`): they are the
//! process's, kept with the tasks above this floor. mmap, brk and mremap (syscall/mm.rs) and
//! map_shadow_stack (process/gcs.rs) share it.

#![forbid(unsafe_code)]

use super::aspace::{AddrSpace, Backing, Prot, MMAP_MIN, USER_END};
use crate::arch::mmu::PAGE_SIZE;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sys::{RLIMIT_AS, RLIMIT_DATA};

/// Where a new mapping goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Near `addr` if there is room there, else wherever there is (addr 0: anywhere).
    Hint,
    /// At `addr`, replacing what is there (MAP_FIXED).
    Fixed,
    /// At `addr`, EEXIST if anything is there (MAP_FIXED_NOREPLACE).
    NoReplace,
}

/// ENOMEM when `more` bytes of new mappings (`data`: private writable ones) would pass
/// RLIMIT_AS or RLIMIT_DATA; `rlimit` gives a limit's current value.
pub fn check_limits(
    mm: &AddrSpace,
    more: usize,
    data: bool,
    rlimit: impl Fn(u32) -> u64,
) -> SysResult<()> {
    // `more` is the user's (mremap's growth may be near the whole address space): checked.
    let over = |have: usize, limit: u64| have.checked_add(more).is_none_or(|t| t as u64 > limit);
    if over(mm.total_vm(), rlimit(RLIMIT_AS)) {
        return Err(Errno::ENOMEM);
    }
    if data && over(mm.data_vm(), rlimit(RLIMIT_DATA)) {
        return Err(Errno::ENOMEM);
    }
    Ok(())
}

/// Places a new mapping of `len` (page-rounded) bytes as `place` says, checks RLIMIT_AS and
/// RLIMIT_DATA, and maps it; returns its start. mmap's and map_shadow_stack's common part.
pub fn map_new(
    mm: &mut AddrSpace,
    addr: usize,
    len: usize,
    prot: Prot,
    backing: Backing,
    place: Place,
    rlimit: impl Fn(u32) -> u64,
) -> SysResult<usize> {
    let start = if place == Place::Hint {
        mm.find_free(len, addr & !(PAGE_SIZE - 1))
            .ok_or(Errno::ENOMEM)?
    } else {
        let end = addr.checked_add(len).ok_or(Errno::ENOMEM)?;
        if end > USER_END || addr < MMAP_MIN {
            return Err(if place == Place::NoReplace {
                Errno::ENOMEM
            } else {
                Errno::EPERM
            });
        }
        if place == Place::NoReplace && !mm.is_free(addr, end) {
            return Err(Errno::EEXIST);
        }
        addr
    };
    check_limits(mm, len, prot.w() && !backing.is_shared(), rlimit)?;
    mm.map(start, start + len, prot, backing)?;
    Ok(start)
}
