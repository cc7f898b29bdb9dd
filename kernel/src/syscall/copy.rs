//! Copies between files in the kernel: copy_file_range and sendfile, both reading the input
//! at an offset and writing what they read, through one loop.

#![forbid(unsafe_code)]

use super::file::{file, CHUNK};
use crate::fs::{File, Kind};
use crate::mm::try_vec;
use crate::mm::uaccess::UserPtr;
use crate::process::CurrentTask;
use alloc::sync::Arc;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{MAX_RW_COUNT, O_APPEND};

/// Reads up to `count` bytes (at most MAX_RW_COUNT) of `input` from offset `start` and hands
/// each piece to `write` with its offset from `start`; stops at the input's end or a short
/// write. An error ends the copy; it is returned only when nothing was copied (Linux's rule
/// for a partial transfer).
fn pump(
    cur: &CurrentTask,
    input: &File,
    start: u64,
    count: u64,
    mut write: impl FnMut(&[u8], u64) -> SysResult<usize>,
) -> SysResult<usize> {
    let count = usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(MAX_RW_COUNT);
    let mut kbuf = try_vec(count.min(CHUNK), 0u8)?;
    // An error after some bytes moved ends the copy with what moved.
    let partial = |done: usize, e: Errno| if done == 0 { Err(e) } else { Ok(done) };
    let mut done = 0;
    while done < count {
        let want = kbuf.len().min(count - done);
        let n = match input
            .ops
            .pread(cur, input, &mut kbuf[..want], start + done as u64)
        {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return partial(done, e),
        };
        let w = match write(&kbuf[..n], done as u64) {
            Ok(w) => w,
            Err(e) => return partial(done, e),
        };
        done += w;
        if w < n {
            break;
        }
    }
    Ok(done)
}

/// copy_file_range: bytes from one regular file to another at given or current offsets,
/// with the checks of Linux's vfs_copy_file_range in its order: flags must be 0 (EINVAL); a
/// directory is EISDIR and anything else not a regular file EINVAL; the input must be open
/// for reading and the output for writing without O_APPEND (EBADF); offsets that wrap are
/// EOVERFLOW; the copy is cut at the input's end (0 there); ranges overlapping in one file
/// are EINVAL, negative offsets EINVAL, files of two different file systems EXDEV. A NULL
/// offset pointer means the file's position, which moves by what was copied.
pub fn copy_file_range(
    cur: &CurrentTask,
    fd_in: i32,
    off_in: usize,
    fd_out: i32,
    off_out: usize,
    len: usize,
    flags: u32,
) -> SysResult<usize> {
    let input = file(cur, fd_in)?;
    let out = file(cur, fd_out)?;
    let read_off = |p: usize, f: &File| -> SysResult<i64> {
        if p != 0 {
            UserPtr::<i64>::new(p).read()
        } else {
            Ok(*f.pos.lock() as i64)
        }
    };
    let pos_in = read_off(off_in, &input)?;
    let pos_out = read_off(off_out, &out)?;
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let (node_in, node_out) = match (&input.node, &out.node) {
        (Some(a), Some(b)) => (a.clone(), b.clone()),
        _ => return Err(Errno::EINVAL),
    };
    if node_in.kind() == Kind::Dir || node_out.kind() == Kind::Dir {
        return Err(Errno::EISDIR);
    }
    if node_in.kind() != Kind::File || node_out.kind() != Kind::File {
        return Err(Errno::EINVAL);
    }
    if !input.readable() || !out.writable() || out.flags() & O_APPEND != 0 {
        return Err(Errno::EBADF);
    }
    let mut count = len as u64;
    // Offsets that wrap (taken as unsigned, as generic_copy_file_checks adds them).
    if (pos_in as u64).checked_add(count).is_none() || (pos_out as u64).checked_add(count).is_none()
    {
        return Err(Errno::EOVERFLOW);
    }
    if pos_in < 0 || pos_out < 0 {
        return Err(Errno::EINVAL);
    }
    let (pin, pout) = (pos_in as u64, pos_out as u64);
    let size_in = node_in.size();
    count = if pin >= size_in {
        0
    } else {
        count.min(size_in - pin)
    };
    let same = Arc::ptr_eq(&node_in, &node_out);
    if same && pout + count > pin && pout < pin + count {
        return Err(Errno::EINVAL);
    }
    if pin + count > i64::MAX as u64 || pout + count > i64::MAX as u64 {
        return Err(Errno::EINVAL);
    }
    match (node_in.superblock(), node_out.superblock()) {
        (Some(a), Some(b)) if !Arc::ptr_eq(&a, &b) => return Err(Errno::EXDEV),
        _ => {}
    }
    let done = pump(cur, &input, pin, count, |buf, at| {
        out.ops.pwrite(cur, &out, buf, pout + at)
    })?;
    for (p, f, start) in [(off_in, &input, pin), (off_out, &out, pout)] {
        let end = start + done as u64;
        if p != 0 {
            UserPtr::<i64>::new(p).write(&(end as i64))?;
        } else {
            *f.pos.lock() = end;
        }
    }
    Ok(done)
}

pub fn sendfile(
    cur: &CurrentTask,
    out_fd: i32,
    in_fd: i32,
    offset: usize,
    count: usize,
) -> SysResult<usize> {
    let input = file(cur, in_fd)?;
    let out = file(cur, out_fd)?;
    if !input.readable() || !out.writable() {
        return Err(Errno::EBADF);
    }
    if !input.node.as_ref().is_some_and(|n| n.kind() == Kind::File) || out.flags() & O_APPEND != 0 {
        return Err(Errno::EINVAL);
    }
    let off_ptr = UserPtr::<i64>::new(offset);
    let start = if offset != 0 {
        let o = off_ptr.read()?;
        u64::try_from(o).map_err(|_| Errno::EINVAL)?
    } else {
        *input.pos.lock()
    };
    let done = pump(cur, &input, start, count as u64, |buf, _| {
        out.ops.write(cur, &out, buf)
    })?;
    let end = start + done as u64;
    if offset != 0 {
        off_ptr.write(&(end as i64))?;
    } else {
        *input.pos.lock() = end;
    }
    Ok(done)
}
