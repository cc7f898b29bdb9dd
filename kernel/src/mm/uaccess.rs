//! The running task's user memory, reached through the MMU: typed, fallible copies in and out
//! that never hand out a reference into user memory.
//!
//! - `UserPtr<T>`: one `T` (an integer, a uapi struct, an array of them) at a user address,
//!   read and written by value; `read_cstring`/`read_path` for a `UserPtr<u8>` to a string.
//! - `UserSlice`: a user buffer of a length the caller chose (read/write, getdents, ...); its
//!   copies say how far they got (`Partial`), and `Partial::short_count` is the one place the
//!   "bytes moved, else the error" rule of read/write-like calls is written.
//!
//! Each copy checks its range first (Linux's access_ok: no overflow, below `USER_END`), so a
//! kernel address is an `EFAULT` and never a kernel read; a missing or forbidden page shows up
//! as a fault the fixup table turns into a short count (`arch::uaccess`). This file
//! holds the only unsafe on the way there.
//!
//! A fault may take the address-space lock to page memory in, so none of these may be called
//! inside `task::with_mm` (or with the lock held any other way).
//!
//! Another process's memory (exec, ptrace, process_vm_*) still goes through `AddrSpace`'s
//! software walk.

use crate::arch::uaccess as arch;
use alloc::string::String;
use alloc::vec::Vec;
use core::marker::PhantomData;
use svelt_abi::uapi::errno::{Errno, SysResult};
use zerocopy::{FromBytes, Immutable, IntoBytes};

pub use arch::USER_END;
const _: () = assert!(USER_END == super::aspace::USER_END);

/// Where a pointer whose arithmetic overflowed points: no range there passes `access_ok`
/// (tagged or not), so using it is EFAULT.
const NOWHERE: usize = usize::MAX;
const _: () = assert!(svelt_abi::uapi::sys::untagged_addr(NOWHERE) >= USER_END);

/// Whether `[va, va + len)` lies in user space (whether it is mapped shows when it is touched):
/// the address to reach it at (the same one, or without its tag under the tagged address ABI).
#[inline]
fn access_ok(va: usize, len: usize) -> SysResult<usize> {
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
    let irqs = crate::arch::cpu::IrqGuard::new();
    let tagged = crate::percpu::this()
        .user_tagged_addr
        .load(core::sync::atomic::Ordering::Relaxed);
    drop(irqs);
    if !tagged {
        return Err(Errno::EFAULT);
    }
    let va = svelt_abi::uapi::sys::untagged_addr(va);
    match va.checked_add(len) {
        Some(end) if end <= USER_END => Ok(va),
        _ => Err(Errno::EFAULT),
    }
}

/// A copy (or any byte transfer: a pipe write) that stopped part-way: `done` bytes moved
/// before `err`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    pub done: usize,
    pub err: Errno,
}

impl Partial {
    /// The same stop, counted from the start of a transfer that had already moved `before`
    /// bytes when this piece began.
    pub fn after(self, before: usize) -> Partial {
        Partial {
            done: before + self.done,
            err: self.err,
        }
    }

    /// What a read/write-like call returns when it stops: the bytes moved if there are any,
    /// else the error.
    pub fn short_count(self) -> SysResult<usize> {
        match self.done {
            0 => Err(self.err),
            n => Ok(n),
        }
    }
}

/// Where the bytes moved do not matter, a stopped copy is its error (so `?` works).
impl From<Partial> for Errno {
    fn from(p: Partial) -> Errno {
        p.err
    }
}

/// How a primitive's "bytes left" comes back: Ok, or how far it got.
fn left_to_result(len: usize, left: usize) -> Result<(), Partial> {
    match left {
        0 => Ok(()),
        left => Err(Partial {
            done: len - left,
            err: Errno::EFAULT,
        }),
    }
}

/// Fills the `n` bytes at `dst` from user address `va`.
///
/// # Safety
/// `dst` is writable for `n` bytes, and whatever bytes land there leave its contents valid
/// (bytes, or the storage of `FromBytes` values, padding included).
#[inline]
unsafe fn raw_copy_in(va: usize, dst: *mut u8, n: usize) -> Result<(), Partial> {
    let va = access_ok(va, n).map_err(|err| Partial { done: 0, err })?;
    // SAFETY: dst is writable for n bytes (this function's contract); [va, va + n) was just
    // checked to lie below USER_END.
    let left = unsafe { arch::copy_from_user(dst, va, n) };
    left_to_result(n, left)
}

/// Copies `src` to user address `va`.
#[inline]
fn raw_copy_out(va: usize, src: &[u8]) -> Result<(), Partial> {
    let va = access_ok(va, src.len()).map_err(|err| Partial { done: 0, err })?;
    // SAFETY: src is readable for its length; [va, va + src.len()) was just checked to lie below
    // USER_END.
    let left = unsafe { arch::copy_to_user(va, src.as_ptr(), src.len()) };
    left_to_result(src.len(), left)
}

/// A user buffer: `len` bytes at `addr`, as a system call's (pointer, length) pair names one.
/// Copies go to (or come from) its front, as many bytes as the kernel-side slice has, which
/// must fit; the front then moves past the bytes moved, so copies in a row fill it in order
/// (`addr` and `len` are what is left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserSlice {
    addr: usize,
    len: usize,
}

impl UserSlice {
    pub const fn new(addr: usize, len: usize) -> UserSlice {
        UserSlice { addr, len }
    }

    pub const fn addr(self) -> usize {
        self.addr
    }

    pub const fn len(self) -> usize {
        self.len
    }

    /// Linux's access_ok: the range lies in user space (EFAULT otherwise); whether it is
    /// mapped is only found out by a copy.
    pub fn access_ok(self) -> SysResult<()> {
        access_ok(self.addr, self.len).map(|_| ())
    }

    pub const fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Linux's access_ok for the whole buffer, for calls that refuse a bad one before doing
    /// anything: EFAULT when it does not lie in user space (whether it is mapped shows later).
    #[inline]
    pub fn check(self) -> SysResult<()> {
        access_ok(self.addr, self.len).map(|_| ())
    }

    /// The buffer from byte `n` on (empty past the end).
    #[inline]
    pub fn skip(self, n: usize) -> UserSlice {
        let n = n.min(self.len);
        UserSlice {
            addr: self.addr.checked_add(n).unwrap_or(NOWHERE),
            len: self.len - n,
        }
    }

    /// Refuses a copy of `n` bytes when fewer are left: EFAULT (a kernel slip, refused rather
    /// than reaching past what the caller gave).
    #[inline]
    fn fits(self, n: usize) -> Result<(), Partial> {
        match n <= self.len {
            true => Ok(()),
            false => Err(Partial {
                done: 0,
                err: Errno::EFAULT,
            }),
        }
    }

    /// Moves the front past `r`'s bytes (all of them, or as many as it says).
    #[inline]
    fn advance(&mut self, n: usize, r: Result<(), Partial>) -> Result<(), Partial> {
        let done = match r {
            Ok(()) => n,
            Err(p) => p.done,
        };
        // No overflow: the done bytes were in user space, and at most `len` of them.
        self.addr += done;
        self.len -= done;
        r
    }

    /// Fills `dst` from the front of the buffer.
    #[inline]
    pub fn copy_in(&mut self, dst: &mut [u8]) -> Result<(), Partial> {
        self.fits(dst.len())?;
        // SAFETY: dst is a byte slice, writable for its length, and any bytes are valid in it.
        let r = unsafe { raw_copy_in(self.addr, dst.as_mut_ptr(), dst.len()) };
        self.advance(dst.len(), r)
    }

    /// Copies `src` to the front of the buffer.
    #[inline]
    pub fn copy_out(&mut self, src: &[u8]) -> Result<(), Partial> {
        self.fits(src.len())?;
        let r = raw_copy_out(self.addr, src);
        self.advance(src.len(), r)
    }

    /// The buffer's bytes up to the first fault (all of them when none faults) in a new
    /// vector, without zero-filling it first: ENOMEM when the memory cannot be had, EFAULT when
    /// the buffer does not lie in user space.
    pub fn read_prefix(self) -> SysResult<Vec<u8>> {
        let len = self.len;
        let va = access_ok(self.addr, len)?;
        let mut v: Vec<u8> = Vec::new();
        v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        // SAFETY: the vector has room for `len` bytes; the user range was checked above.
        let left = unsafe { arch::copy_from_user(v.as_mut_ptr(), va, len) };
        // SAFETY: the copy initialised the first `len - left` bytes (it stops at the fault).
        unsafe { v.set_len(len - left) };
        Ok(v)
    }

    /// `read_prefix` into `v`, which is emptied first and keeps its memory when it is large
    /// enough.
    pub fn read_prefix_into(self, v: &mut Vec<u8>) -> SysResult<()> {
        let len = self.len;
        let va = access_ok(self.addr, len)?;
        v.clear();
        v.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
        // SAFETY: the vector has room for `len` bytes; the user range was checked above.
        let left = unsafe { arch::copy_from_user(v.as_mut_ptr(), va, len) };
        // SAFETY: the copy initialised the first `len - left` bytes (it stops at the fault).
        unsafe { v.set_len(len - left) };
        Ok(())
    }

    /// The whole buffer in a new vector: EFAULT if any of it cannot be read.
    pub fn read_vec(self) -> SysResult<Vec<u8>> {
        let v = self.read_prefix()?;
        if v.len() < self.len {
            return Err(Errno::EFAULT);
        }
        Ok(v)
    }

    /// Zeroes the whole buffer.
    // No caller at the moment (getrusage and wait's rusage stopped writing zeros); kept with
    // the other user-access primitives.
    #[allow(dead_code)]
    pub fn clear(self) -> SysResult<()> {
        let va = access_ok(self.addr, self.len)?;
        // SAFETY: [va, va + len) was just checked to lie below USER_END.
        let left = unsafe { arch::clear_user(va, self.len) };
        Ok(left_to_result(self.len, left)?)
    }
}

/// A `T` at a user address (a system call's `T *` argument), read and written whole by value.
#[repr(transparent)]
pub struct UserPtr<T> {
    addr: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for UserPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for UserPtr<T> {}

impl<T> core::fmt::Debug for UserPtr<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "UserPtr({:#x})", self.addr)
    }
}

impl<T> UserPtr<T> {
    pub const fn new(addr: usize) -> UserPtr<T> {
        UserPtr {
            addr,
            _t: PhantomData,
        }
    }

    pub const fn addr(self) -> usize {
        self.addr
    }

    pub const fn is_null(self) -> bool {
        self.addr == 0
    }

    /// The `n`th `T` from here; an address that overflows is EFAULT when used.
    #[inline]
    pub fn add(self, n: usize) -> UserPtr<T> {
        let addr = n
            .checked_mul(core::mem::size_of::<T>())
            .and_then(|b| self.addr.checked_add(b))
            .unwrap_or(NOWHERE);
        UserPtr::new(addr)
    }
}

impl<T: FromBytes> UserPtr<T> {
    /// The `T` there (any bytes make one: plain data, padding allowed).
    #[inline]
    pub fn read(self) -> SysResult<T> {
        let mut v = T::new_zeroed();
        let n = core::mem::size_of::<T>();
        // SAFETY: v is a T, writable for its size, and T: FromBytes, so any bytes leave it valid.
        unsafe { raw_copy_in(self.addr, (&raw mut v).cast(), n) }?;
        Ok(v)
    }

    /// Fills `dst` with the `dst.len()` `T`s from here.
    pub fn read_slice(self, dst: &mut [T]) -> SysResult<()> {
        let n = core::mem::size_of_val(dst);
        // SAFETY: dst is writable for its n bytes, and T: FromBytes, so any bytes leave its
        // elements valid.
        unsafe { raw_copy_in(self.addr, dst.as_mut_ptr().cast(), n) }?;
        Ok(())
    }
}

impl<T: IntoBytes + Immutable> UserPtr<T> {
    /// Stores `v` there.
    #[inline]
    pub fn write(self, v: &T) -> SysResult<()> {
        Ok(raw_copy_out(self.addr, v.as_bytes())?)
    }

    /// Stores the `T`s of `src` from here on.
    pub fn write_slice(self, src: &[T]) -> SysResult<()> {
        Ok(raw_copy_out(self.addr, src.as_bytes())?)
    }
}

impl UserPtr<u8> {
    /// A NUL-terminated string of at most `max` bytes (without the NUL): ENAMETOOLONG when
    /// none of the first `max + 1` bytes is a NUL, EFAULT when a byte before the NUL is
    /// unreadable.
    pub fn read_cstring(self, max: usize) -> SysResult<Vec<u8>> {
        let va = access_ok(self.addr, 0)?;
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

    /// A path (at most PATH_MAX bytes with its NUL); one that is not UTF-8 names nothing here.
    pub fn read_path(self) -> SysResult<String> {
        let bytes = self.read_cstring(4095)?;
        String::from_utf8(bytes).map_err(|_| Errno::ENOENT)
    }
}
