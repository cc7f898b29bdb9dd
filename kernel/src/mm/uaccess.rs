//! The running task's user memory, reached through the MMU: fallible copies in and out that
//! never hand out a reference into user memory. Each checks the range first (Linux's
//! access_ok: no overflow, below `USER_END`), so a kernel address is an `EFAULT` and never a
//! kernel read; a missing or forbidden page shows up as a fault the fixup table turns into a
//! short count (`arch::aarch64::uaccess`).
//!
//! A fault may take the address-space lock to page memory in, so none of these may be called
//! inside `task::with_mm` (or with the lock held any other way).
//!
//! Another process's memory (exec, ptrace, process_vm_*) still goes through `AddrSpace`'s
//! software walk.

use crate::arch::aarch64::uaccess as arch;
use alloc::vec::Vec;
use svelt_abi::errno::{Errno, SysResult};
use zerocopy::{FromBytes, IntoBytes};

pub use arch::USER_END;
const _: () = assert!(USER_END == super::aspace::USER_END);

/// Whether `[va, va + len)` lies in user space (whether it is mapped shows when it is touched):
/// the address to reach it at (the same one, or without its tag under the tagged address ABI).
pub fn access_ok(va: usize, len: usize) -> SysResult<usize> {
    match va.checked_add(len) {
        Some(end) if end <= USER_END => Ok(va),
        _ => tagged_access_ok(va, len),
    }
}

/// A pointer with a top-byte tag, from a task that enabled the tagged address ABI: the
/// untagged range must be user space (the MMU ignores the tag too: TCR_EL1.TBI0).
#[cold]
fn tagged_access_ok(va: usize, len: usize) -> SysResult<usize> {
    // IRQs masked: the flag read is this CPU's and the running task's.
    let irqs = crate::arch::aarch64::cpu::IrqGuard::new();
    let tagged = crate::percpu::this()
        .user_tagged_addr
        .load(core::sync::atomic::Ordering::Relaxed);
    drop(irqs);
    if !tagged {
        return Err(Errno::EFAULT);
    }
    let va = svelt_abi::sys::untagged_addr(va);
    match va.checked_add(len) {
        Some(end) if end <= USER_END => Ok(va),
        _ => Err(Errno::EFAULT),
    }
}

/// Fills `dst` from user address `va`.
pub fn copy_from_user(dst: &mut [u8], va: usize) -> SysResult<()> {
    copy_from_user_partial(dst, va).map_err(|(e, _)| e)
}

/// Fills `dst` from user address `va`; on a fault, the error and how many bytes were copied.
pub fn copy_from_user_partial(dst: &mut [u8], va: usize) -> Result<(), (Errno, usize)> {
    let va = access_ok(va, dst.len()).map_err(|e| (e, 0))?;
    // SAFETY: dst is a writable slice of dst.len() bytes; the user range was checked above.
    let left = unsafe { arch::copy_from_user(dst.as_mut_ptr(), va, dst.len()) };
    match left {
        0 => Ok(()),
        n => Err((Errno::EFAULT, dst.len() - n)),
    }
}

/// Reads `len` bytes at user address `va` into a new vector, without zero-filling it first:
/// ENOMEM when the memory cannot be had, EFAULT on a fault.
pub fn read_vec(va: usize, len: usize) -> SysResult<Vec<u8>> {
    let va = access_ok(va, len)?;
    let mut v: Vec<u8> = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    // SAFETY: the vector has room for `len` bytes; the user range was checked above.
    let left = unsafe { arch::copy_from_user(v.as_mut_ptr(), va, len) };
    if left != 0 {
        return Err(Errno::EFAULT);
    }
    // SAFETY: the copy initialised all `len` bytes (nothing was left over).
    unsafe { v.set_len(len) };
    Ok(v)
}

/// Copies `src` to user address `va`.
pub fn copy_to_user(va: usize, src: &[u8]) -> SysResult<()> {
    copy_to_user_partial(va, src).map_err(|(e, _)| e)
}

/// Copies `src` to user address `va`; on a fault, the error and how many bytes were copied.
pub fn copy_to_user_partial(va: usize, src: &[u8]) -> Result<(), (Errno, usize)> {
    let va = access_ok(va, src.len()).map_err(|e| (e, 0))?;
    // SAFETY: src is a readable slice of src.len() bytes; the user range was checked above.
    let left = unsafe { arch::copy_to_user(va, src.as_ptr(), src.len()) };
    match left {
        0 => Ok(()),
        n => Err((Errno::EFAULT, src.len() - n)),
    }
}

/// Zeroes `len` bytes at user address `va`.
pub fn clear_user(va: usize, len: usize) -> SysResult<()> {
    let va = access_ok(va, len)?;
    // SAFETY: the user range was checked above.
    match unsafe { arch::clear_user(va, len) } {
        0 => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// Reads a NUL-terminated string of at most `max` bytes (without the NUL): ENAMETOOLONG when
/// none of the first `max + 1` bytes is a NUL, EFAULT when a byte before the NUL is unreadable.
/// Reads a user path (at most PATH_MAX bytes with its NUL).
pub fn read_path(va: usize) -> SysResult<alloc::string::String> {
    let bytes = read_cstr(va, 4095)?;
    alloc::string::String::from_utf8(bytes).map_err(|_| Errno::ENOENT)
}

pub fn read_cstr(va: usize, max: usize) -> SysResult<Vec<u8>> {
    let va = access_ok(va, 0)?;
    let limit = max.saturating_add(1);
    let mut out: Vec<u8> = Vec::new();
    // Most strings are short: look at a small piece first, then at doubling ones.
    let mut step = 128;
    loop {
        let at = out.len();
        let start = va.checked_add(at).ok_or(Errno::EFAULT)?;
        let want = step.min(limit - at).min(USER_END.saturating_sub(start));
        if want == 0 {
            return Err(Errno::EFAULT);
        }
        out.try_reserve(want).map_err(|_| Errno::ENOMEM)?;
        out.resize(at + want, 0);
        // SAFETY: out[at..at + want] is writable; [start, start + want) is below USER_END.
        let got = unsafe { arch::strncpy_from_user(out.as_mut_ptr().add(at), start, want) }
            .ok_or(Errno::EFAULT)?;
        if got < want {
            out.truncate(at + got);
            return Ok(out);
        }
        if out.len() >= limit {
            return Err(Errno::ENAMETOOLONG);
        }
        step = step.saturating_mul(2);
    }
}

/// Reads a value (an integer, or a uapi struct: any plain-data type without padding, as
/// svelt_abi lays them out) from user address `va`. Write one back with `copy_to_user(va, v.as_bytes())`.
pub fn read_struct<T: FromBytes + IntoBytes>(va: usize) -> SysResult<T> {
    let mut v = T::new_zeroed();
    copy_from_user(v.as_mut_bytes(), va)?;
    Ok(v)
}

pub fn read_u32(va: usize) -> SysResult<u32> {
    read_struct(va)
}

pub fn read_u64(va: usize) -> SysResult<u64> {
    read_struct(va)
}

pub fn write_u32(va: usize, v: u32) -> SysResult<()> {
    copy_to_user(va, v.as_bytes())
}

pub fn write_u64(va: usize, v: u64) -> SysResult<()> {
    copy_to_user(va, v.as_bytes())
}
