//! File descriptors: open and close, read and write (plain, positioned, vectored), seek,
//! truncate, pipes, dup, fcntl and ioctl.

#![forbid(unsafe_code)]

use crate::fs::epoll::{self};
use crate::fs::{self, pipe, Caller, File, Kind};
use crate::mm::uaccess::{Partial, UserPtr, UserSlice};
use crate::mm::{try_reserve, try_vec};
use crate::process::CurrentTask;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    iovec_total, Iovec, MAX_RW_COUNT, O_ACCMODE, O_CLOEXEC, O_CREAT, O_DIRECT, O_DIRECTORY, O_EXCL,
    O_LARGEFILE, O_NOFOLLOW, O_NONBLOCK, O_PATH, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY, SEEK_CUR,
    SEEK_END, SEEK_SET, SETFL_MASK, UIO_MAXIOV,
};

pub(super) const CHUNK: usize = 64 * 1024;

pub(super) fn file(cur: &CurrentTask, fd: i32) -> SysResult<Arc<File>> {
    cur.files().lock().get(fd)
}

pub(super) fn install(cur: &CurrentTask, file: Arc<File>, cloexec: bool) -> SysResult<usize> {
    cur.files()
        .lock()
        .install(cur, file, cloexec)
        .map(|fd| fd as usize)
}

pub fn openat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    flags: u32,
    mode: u32,
) -> SysResult<usize> {
    let path = UserPtr::<u8>::new(path).read_path()?;
    let follow = flags & O_NOFOLLOW == 0;
    let node = match fs::resolve(cur, dirfd, &path, follow) {
        Ok(r) => {
            if flags & O_CREAT != 0 && flags & O_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            r
        }
        Err(Errno::ENOENT) if flags & O_CREAT != 0 => {
            let p = fs::resolve_parent(cur, dirfd, &path)?;
            if p.trailing_slash {
                return Err(Errno::EISDIR);
            }
            let umask = cur.fs().lock().umask;
            let node = p
                .dir
                .create(&p.name, Kind::File, mode & 0o7777 & !umask, cur.euid())?;
            let full = if p.dir_path == "/" {
                alloc::format!("/{}", p.name)
            } else {
                alloc::format!("{}/{}", p.dir_path, p.name)
            };
            fs::Resolved { node, path: full }
        }
        Err(e) => return Err(e),
    };
    let kind = node.node.kind();
    if kind == Kind::Symlink && !follow && flags & O_PATH == 0 {
        return Err(Errno::ELOOP);
    }
    if flags & O_DIRECTORY != 0 && kind != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let acc = flags & O_ACCMODE;
    if kind == Kind::Dir && (acc != O_RDONLY || flags & O_CREAT != 0) && flags & O_PATH == 0 {
        return Err(Errno::EISDIR);
    }
    if flags & O_TRUNC != 0 && acc != O_RDONLY && kind == Kind::File {
        node.node.truncate(0)?;
    }
    let file = if flags & O_PATH != 0 {
        File::new(
            Some(node.node.clone()),
            Arc::new(fs::NodeOps(node.node)),
            flags,
            node.path,
        )
    } else {
        fs::open_node(
            cur,
            node.node,
            flags & !(O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC),
            node.path,
        )?
    };
    install(cur, file, flags & O_CLOEXEC != 0)
}

/// close_range: closes (or with CLOSE_RANGE_CLOEXEC marks close-on-exec) every open descriptor
/// in `[first, last]`; CLOSE_RANGE_UNSHARE first gives the caller its own table.
pub fn close_range(cur: &CurrentTask, first: u32, last: u32, flags: u32) -> SysResult<usize> {
    const UNSHARE: u32 = 1 << 1;
    const CLOEXEC: u32 = 1 << 2;
    if flags & !(UNSHARE | CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    if flags & UNSHARE != 0 {
        let copy = cur.files().lock().clone();
        *cur.files.lock() = Arc::new(spin::Mutex::new(copy));
    }
    let table = cur.files();
    let mut closed = Vec::new();
    {
        let mut t = table.lock();
        let end = (last as usize).min(t.capacity().saturating_sub(1));
        for fd in first as usize..=end {
            let fd = fd as i32;
            if flags & CLOEXEC != 0 {
                if let Ok(e) = t.entry_mut(fd) {
                    e.cloexec = true;
                }
            } else if let Ok(e) = t.close(fd) {
                // Dropped after the table's lock: a last close may do work.
                if closed.try_reserve(1).is_ok() {
                    closed.push(e);
                }
            }
        }
    }
    drop(closed);
    Ok(0)
}

pub fn close(cur: &CurrentTask, fd: i32) -> SysResult<usize> {
    let e = cur.files().lock().close(fd)?;
    drop(e);
    Ok(0)
}

fn do_read(
    cur: &CurrentTask,
    file: &File,
    buf: usize,
    count: usize,
    off: Option<u64>,
) -> SysResult<usize> {
    if !file.readable() {
        return Err(Errno::EBADF);
    }
    if file.node.as_ref().is_some_and(|n| n.kind() == Kind::Dir) {
        return Err(Errno::EISDIR);
    }
    let count = count.min(MAX_RW_COUNT);
    let mut user = UserSlice::new(buf, count);
    user.check()?;
    if let Some(r) = file.ops.read_to_user(cur, file, user) {
        return r;
    }
    let mut kbuf = try_vec(count.min(CHUNK), 0u8)?;
    let mut done = 0;
    loop {
        let want = kbuf.len().min(count - done);
        let n = match off {
            Some(o) => file
                .ops
                .pread(cur, file, &mut kbuf[..want], o + done as u64)?,
            None => match file.ops.read(cur, file, &mut kbuf[..want]) {
                Ok(n) => n,
                Err(e) if done > 0 && matches!(e, Errno::EAGAIN | Errno::ERESTARTSYS) => 0,
                Err(e) => return Err(e),
            },
        };
        if let Err(p) = user.copy_out(&kbuf[..n]) {
            // As Linux: what reached the buffer counts, and a file's offset covers only that.
            if off.is_none() && file.ops.seekable() {
                let mut pos = file.pos.lock();
                *pos = pos.saturating_sub((n - p.done) as u64);
            }
            return p.after(done).short_count();
        }
        done += n;
        // Only regular files fill the whole request in several pieces.
        if n < want || done == count || !file.ops.seekable() {
            return Ok(done);
        }
    }
}

fn do_write(
    cur: &CurrentTask,
    file: &File,
    buf: usize,
    count: usize,
    off: Option<u64>,
) -> SysResult<usize> {
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    let count = count.min(MAX_RW_COUNT);
    let mut user = UserSlice::new(buf, count);
    user.check()?;
    let mut done = 0;
    while done < count {
        let n = (count - done).min(CHUNK);
        let mut kbuf = try_vec(n, 0u8)?;
        // A fault part-way writes what came before it (a short count, as on Linux).
        let (n, fault) = match user.copy_in(&mut kbuf) {
            Ok(()) => (n, None),
            // A pipe takes a chunk whole or not at all.
            Err(Partial { err, .. }) if file.ops.whole_chunks() => {
                return Partial { done, err }.short_count()
            }
            Err(Partial { done: 0, err }) => return Partial { done, err }.short_count(),
            Err(p) => (p.done, Some(p.err)),
        };
        let w = match off {
            Some(o) => file.ops.pwrite(cur, file, &kbuf[..n], o + done as u64),
            None => file.ops.write(cur, file, &kbuf[..n]),
        };
        match w {
            Ok(w) => {
                done += w;
                if w < n || fault.is_some() {
                    break;
                }
                // A long write to a device or pipe stops at a chunk boundary for a signal (as
                // a terminal's does on Linux), so a killed writer does not hold on for minutes.
                if done < count && !file.ops.seekable() && crate::process::signal::interrupted(cur)
                {
                    break;
                }
            }
            Err(err) => return Partial { done, err }.short_count(),
        }
    }
    Ok(done)
}

pub fn read(cur: &CurrentTask, fd: i32, buf: usize, count: usize) -> SysResult<usize> {
    let f = file(cur, fd)?;
    do_read(cur, &f, buf, count, None)
}

pub fn write(cur: &CurrentTask, fd: i32, buf: usize, count: usize) -> SysResult<usize> {
    let f = file(cur, fd)?;
    if super::net::is_socket(&f) {
        return super::net::write(cur, &f, buf, count);
    }
    do_write(cur, &f, buf, count, None)
}

pub fn pread64(cur: &CurrentTask, fd: i32, buf: usize, count: usize, off: i64) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    do_read(cur, &file, buf, count, Some(off as u64))
}

pub fn pwrite64(
    cur: &CurrentTask,
    fd: i32,
    buf: usize,
    count: usize,
    off: i64,
) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    do_write(cur, &file, buf, count, Some(off as u64))
}

/// A user iovec array of `cnt` entries (at most UIO_MAXIOV), each length checked.
pub(super) fn read_iovecs(iov: usize, cnt: usize) -> SysResult<Vec<Iovec>> {
    if cnt > UIO_MAXIOV {
        return Err(Errno::EINVAL);
    }
    let mut v = try_vec(cnt, Iovec::default())?;
    UserPtr::new(iov).read_slice(&mut v)?;
    iovec_total(&v)?;
    Ok(v)
}

/// An iovec array's pieces as user slices. As Linux: the lengths add up to at most
/// MAX_RW_COUNT (later pieces are cut short), and every piece must lie in user space.
pub(super) fn user_segments(vs: &[Iovec]) -> SysResult<Vec<UserSlice>> {
    let mut segs = Vec::new();
    try_reserve(&mut segs, vs.len())?;
    let mut total = 0usize;
    for v in vs {
        let len = (v.iov_len as usize).min(MAX_RW_COUNT - total);
        let seg = UserSlice::new(v.iov_base as usize, len);
        seg.check()?;
        total += len;
        segs.push(seg);
    }
    Ok(segs)
}

pub fn readv(cur: &CurrentTask, fd: i32, iov: usize, cnt: usize) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if super::net::is_socket(&file) {
        return super::net::rw(cur, &file, iov, cnt, false);
    }
    let mut total = 0;
    for v in read_iovecs(iov, cnt)? {
        if v.iov_len == 0 {
            continue;
        }
        let n = match do_read(cur, &file, v.iov_base as usize, v.iov_len as usize, None) {
            Ok(n) => n,
            Err(err) => return Partial { done: total, err }.short_count(),
        };
        total += n;
        if n < v.iov_len as usize {
            break;
        }
    }
    Ok(total)
}

pub fn writev(cur: &CurrentTask, fd: i32, iov: usize, cnt: usize) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if super::net::is_socket(&file) {
        return super::net::rw(cur, &file, iov, cnt, true);
    }
    let vs = read_iovecs(iov, cnt)?;
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    let segs = user_segments(&vs)?;
    let total: usize = segs.iter().map(|s| s.len()).sum();
    if total == 0 {
        return Ok(0);
    }
    // A small writev is gathered into one write, so it reaches a pipe or the console as one
    // piece; a large one goes segment by segment.
    if total <= CHUNK {
        let mut kbuf = try_vec(total, 0u8)?;
        let mut at = 0;
        for mut seg in segs.iter().copied() {
            let len = seg.len();
            seg.copy_in(&mut kbuf[at..at + len])?;
            at += len;
        }
        return file.ops.write(cur, &file, &kbuf);
    }
    let mut done = 0;
    for seg in segs.iter().filter(|s| !s.is_empty()) {
        match do_write(cur, &file, seg.addr(), seg.len(), None) {
            Ok(n) => {
                done += n;
                if n < seg.len() {
                    break;
                }
            }
            Err(err) => return Partial { done, err }.short_count(),
        }
    }
    Ok(done)
}

pub fn lseek(cur: &CurrentTask, fd: i32, off: i64, whence: u32) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if !file.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    let mut pos = file.pos.lock();
    let base = match whence {
        SEEK_SET => 0,
        SEEK_CUR => *pos as i64,
        SEEK_END => file.node.as_ref().map_or(0, |n| n.size() as i64),
        _ => return Err(Errno::EINVAL),
    };
    let new = base.checked_add(off).ok_or(Errno::EOVERFLOW)?;
    if new < 0 {
        return Err(Errno::EINVAL);
    }
    *pos = new as u64;
    Ok(new as usize)
}

pub fn ftruncate(cur: &CurrentTask, fd: i32, len: i64) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    if !file.writable() {
        return Err(Errno::EINVAL);
    }
    let node = file.node.clone().ok_or(Errno::EINVAL)?;
    node.truncate(len as u64)?;
    Ok(0)
}

pub fn fsync(cur: &CurrentTask, fd: i32) -> SysResult<usize> {
    file(cur, fd).map(|_| 0)
}

/// sendfile: copies from a regular file (EINVAL for anything else) at `*offset` (then
/// advanced) or at its own position, to any file open for writing (not O_APPEND: EINVAL).
/// A failure after some bytes moved returns the count moved.
/// posix_fadvise: advice is only a hint, so after Linux's checks there is nothing to do (every
/// file is in memory). ESPIPE for pipes, EINVAL for a negative length or unknown advice.
pub fn fadvise64(cur: &CurrentTask, fd: i32, _off: i64, len: i64, advice: u32) -> SysResult<usize> {
    let file = file(cur, fd)?;
    if file.node.is_none() {
        return Err(Errno::ESPIPE);
    }
    // POSIX_FADV_NORMAL, RANDOM, SEQUENTIAL, WILLNEED, DONTNEED (4) and NOREUSE (5).
    if len < 0 || advice > 5 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

pub fn pipe2(cur: &CurrentTask, fds: usize, flags: u32) -> SysResult<usize> {
    if flags & !(O_CLOEXEC | O_NONBLOCK | O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    let fds = UserPtr::<[i32; 2]>::new(fds);
    UserSlice::new(fds.addr(), 8).check()?;
    let (r, w) = pipe::new_pipe();
    let nb = flags & O_NONBLOCK;
    let rf = File::new(None, r, O_RDONLY | nb, String::from("pipe:"));
    let wf = File::new(None, w, O_WRONLY | nb, String::from("pipe:"));
    let cloexec = flags & O_CLOEXEC != 0;
    let files = cur.files();
    let mut t = files.lock();
    let a = t.install(cur, rf, cloexec)?;
    let b = match t.install(cur, wf, cloexec) {
        Ok(b) => b,
        Err(e) => {
            let _ = t.close(a);
            return Err(e);
        }
    };
    drop(t);
    if let Err(e) = fds.write(&[a, b]) {
        let mut t = files.lock();
        let _ = t.close(a);
        let _ = t.close(b);
        return Err(e);
    }
    Ok(0)
}

pub fn dup(cur: &CurrentTask, fd: i32) -> SysResult<usize> {
    let files = cur.files();
    let mut t = files.lock();
    let file = t.get(fd)?;
    t.install(cur, file, false).map(|fd| fd as usize)
}

pub fn dup3(cur: &CurrentTask, old: i32, new: i32, flags: u32) -> SysResult<usize> {
    if flags & !O_CLOEXEC != 0 || old == new {
        return Err(Errno::EINVAL);
    }
    if new < 0 {
        return Err(Errno::EBADF);
    }
    let files = cur.files();
    let mut t = files.lock();
    let file = t.get(old)?;
    let prev = t.install_at(cur, new as usize, file, flags & O_CLOEXEC != 0)?;
    drop(t);
    drop(prev);
    Ok(new as usize)
}

pub fn fcntl(cur: &CurrentTask, fd: i32, cmd: u32, arg: usize) -> SysResult<usize> {
    use svelt_abi::uapi::fcntl::FcntlCmd;
    let files = cur.files();
    let mut t = files.lock();
    let file = t.get(fd)?;
    let cmd = FcntlCmd::decode(cmd, arg)?;
    if file.flags() & O_PATH != 0 && !cmd.allowed_on_path_fd() {
        return Err(Errno::EBADF);
    }
    match cmd {
        FcntlCmd::DupFd { min, cloexec } => {
            let min = min as usize;
            if min >= fs::nofile_limit(cur) {
                return Err(Errno::EINVAL);
            }
            t.install_from(cur, min, file, cloexec)
                .map(|fd| fd as usize)
        }
        FcntlCmd::GetFd => Ok(t.entry_mut(fd)?.cloexec as usize),
        FcntlCmd::SetFd { cloexec } => {
            t.entry_mut(fd)?.cloexec = cloexec;
            Ok(0)
        }
        FcntlCmd::GetFl => Ok((file.flags() | O_LARGEFILE) as usize),
        FcntlCmd::SetFl { flags } => {
            let keep = file.flags() & !SETFL_MASK;
            file.flags.store(
                keep | (flags & SETFL_MASK),
                core::sync::atomic::Ordering::Relaxed,
            );
            epoll::notify();
            Ok(0)
        }
        // Record locks always succeed: nothing else can hold one here yet.
        FcntlCmd::Lock { .. } => Ok(0),
        FcntlCmd::GetPipeSize | FcntlCmd::SetPipeSize { .. } => {
            let end = file
                .ops
                .as_any()
                .downcast_ref::<pipe::PipeEnd>()
                .ok_or(Errno::EBADF)?;
            match cmd {
                FcntlCmd::SetPipeSize { size } => {
                    end.set_capacity(size as usize, super::cred::privileged(cur))
                }
                _ => Ok(end.capacity()),
            }
        }
        FcntlCmd::GetOwn | FcntlCmd::SetOwn { .. } => Ok(0),
    }
}

pub fn ioctl(cur: &CurrentTask, fd: i32, cmd: u32, arg: usize) -> SysResult<usize> {
    let files = cur.files();
    let file = files.lock().get(fd)?;
    match cmd {
        svelt_abi::uapi::tty::FIOCLEX | svelt_abi::uapi::tty::FIONCLEX => {
            files.lock().entry_mut(fd)?.cloexec = cmd == svelt_abi::uapi::tty::FIOCLEX;
            Ok(0)
        }
        svelt_abi::uapi::tty::FIONBIO => {
            let on = UserPtr::<u32>::new(arg).read()? != 0;
            let fl = file.flags() & !O_NONBLOCK;
            file.flags.store(
                fl | if on { O_NONBLOCK } else { 0 },
                core::sync::atomic::Ordering::Relaxed,
            );
            Ok(0)
        }
        _ => file.ops.ioctl_as(&file, cur, cmd, arg),
    }
}

/// pidfd_open(pid, flags): a descriptor for the process `pid` (a thread-group leader), close-on-
/// exec, polling readable once the process has ended. flags: 0 or PIDFD_NONBLOCK (O_NONBLOCK).
pub fn pidfd_open(cur: &CurrentTask, pid: i32, flags: u32) -> SysResult<usize> {
    if flags & !svelt_abi::uapi::fs::O_NONBLOCK != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    // Found until reaped, though it may have no threads left.
    let p = match crate::process::find_pid(pid as u32) {
        Some(p) => p,
        // A thread that is not its group's leader: EINVAL; nothing at all: ESRCH.
        None if crate::process::find_task(pid as u32).is_some() => return Err(Errno::EINVAL),
        None => return Err(Errno::ESRCH),
    };
    let f = File::new(
        None,
        crate::process::pidfd::PidFd::new(&p),
        svelt_abi::uapi::fs::O_RDWR | flags,
        alloc::string::String::from("anon_inode:[pidfd]"),
    );
    install(cur, f, true)
}

/// eventfd2: a counter file (fs/eventfd.rs), read-write, `anon_inode:[eventfd]` in /proc.
pub fn eventfd2(cur: &CurrentTask, initval: u32, flags: u32) -> SysResult<usize> {
    const EFD_SEMAPHORE: u32 = 1;
    if flags & !(O_CLOEXEC | O_NONBLOCK | EFD_SEMAPHORE) != 0 {
        return Err(Errno::EINVAL);
    }
    let ops = Arc::new(fs::eventfd::EventFd::new(
        initval,
        flags & EFD_SEMAPHORE != 0,
    ));
    let f = File::new(
        None,
        ops,
        O_RDWR | (flags & O_NONBLOCK),
        String::from("anon_inode:[eventfd]"),
    );
    install(cur, f, flags & O_CLOEXEC != 0)
}

/// memfd_create: a tmpfs file in no directory, read-write, named `/memfd:NAME (deleted)` in
/// /proc; mode 0777 (0666 with MFD_NOEXEC_SEAL). Huge pages are not offered (EINVAL, as for a
/// size Linux cannot give); seals are not kept.
pub fn memfd_create(cur: &CurrentTask, name: UserPtr<u8>, flags: u32) -> SysResult<usize> {
    const MFD_CLOEXEC: u32 = 1;
    const MFD_ALLOW_SEALING: u32 = 2;
    const MFD_NOEXEC_SEAL: u32 = 8;
    const MFD_EXEC: u32 = 0x10;
    /// NAME_MAX minus the "memfd:" prefix.
    const MFD_NAME_MAX_LEN: usize = 249;
    if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC) != 0
        || flags & (MFD_NOEXEC_SEAL | MFD_EXEC) == (MFD_NOEXEC_SEAL | MFD_EXEC)
    {
        return Err(Errno::EINVAL);
    }
    let name = match name.read_cstring(MFD_NAME_MAX_LEN) {
        Err(Errno::ENAMETOOLONG) => return Err(Errno::EINVAL),
        r => r?,
    };
    let perm = if flags & MFD_NOEXEC_SEAL != 0 {
        0o666
    } else {
        0o777
    };
    let node = fs::made_by(
        cur,
        fs::ramfs::RamFile::with_sb(perm, fs::pagecache::TmpfsSb::root()),
    );
    let path = alloc::format!("/memfd:{} (deleted)", String::from_utf8_lossy(&name));
    let f = fs::open_node(cur, node, O_RDWR | O_LARGEFILE, path)?;
    install(cur, f, flags & MFD_CLOEXEC != 0)
}

pub fn flock(cur: &CurrentTask, fd: i32, op: u32) -> SysResult<usize> {
    let f = file(cur, fd)?;
    if f.flags() & O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    fs::flock::flock(&f, op)
}

/// fallocate on tmpfs: mode 0 extends the file to cover the range, FALLOC_FL_KEEP_SIZE
/// changes nothing (the pages come when written), with FALLOC_FL_PUNCH_HOLE the range
/// within the file reads as zeros; other modes are EOPNOTSUPP (Linux's vfs_fallocate checks).
pub fn fallocate(cur: &CurrentTask, fd: i32, mode: i32, offset: i64, len: i64) -> SysResult<usize> {
    const KEEP_SIZE: i32 = 1;
    const PUNCH_HOLE: i32 = 2;
    if offset < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    if mode & !(KEEP_SIZE | PUNCH_HOLE) != 0 || mode == PUNCH_HOLE {
        return Err(Errno::EOPNOTSUPP);
    }
    let f = file(cur, fd)?;
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    let end = offset.checked_add(len).ok_or(Errno::EFBIG)? as u64;
    let node = match &f.node {
        Some(n) => n.clone(),
        None if f.ops.as_any().is::<pipe::PipeEnd>() => return Err(Errno::ESPIPE),
        None => return f.ops.fallocate(mode, offset as u64, len as u64),
    };
    match node.kind() {
        Kind::File => {}
        Kind::Fifo => return Err(Errno::ESPIPE),
        Kind::Dir => return Err(Errno::EISDIR),
        _ => return Err(Errno::ENODEV),
    }
    let size = node.size();
    if mode & PUNCH_HOLE != 0 {
        let zeros = [0u8; 4096];
        let mut at = offset as u64;
        let stop = end.min(size);
        while at < stop {
            let n = ((stop - at) as usize).min(zeros.len());
            node.write_at(at, &zeros[..n])?;
            at += n as u64;
        }
    } else if mode & KEEP_SIZE == 0 && end > size {
        node.truncate(end)?;
    }
    Ok(0)
}
