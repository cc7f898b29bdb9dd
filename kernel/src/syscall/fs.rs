//! File syscalls.

use crate::fs::epoll::{self, Epoll};
use crate::fs::{self as vfs, pipe, File, Kind};
use crate::mm::uaccess;
use crate::task;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::fs as f;
use zerocopy::IntoBytes;

const CHUNK: usize = 64 * 1024;

/// Reads a user path (at most PATH_MAX bytes with its NUL).
pub fn read_path(va: usize) -> SysResult<String> {
    let bytes = uaccess::read_cstr(va, 4095)?;
    String::from_utf8(bytes).map_err(|_| Errno::ENOENT)
}

fn file(fd: i32) -> SysResult<Arc<File>> {
    task::current().files().lock().get(fd)
}

/// Linux's access_ok: the range lies in user space (whether it is mapped shows when it is
/// copied; a tagged pointer is one under the tagged address ABI).
fn check_user(va: usize, len: usize) -> SysResult<()> {
    uaccess::access_ok(va, len).map(|_| ())
}

fn install(file: Arc<File>, cloexec: bool) -> SysResult<usize> {
    task::current()
        .files()
        .lock()
        .install(file, cloexec)
        .map(|fd| fd as usize)
}

pub fn openat(dirfd: i32, path: usize, flags: u32, mode: u32) -> SysResult<usize> {
    let path = read_path(path)?;
    let follow = flags & f::O_NOFOLLOW == 0;
    let node = match vfs::resolve(dirfd, &path, follow) {
        Ok(r) => {
            if flags & f::O_CREAT != 0 && flags & f::O_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            r
        }
        Err(Errno::ENOENT) if flags & f::O_CREAT != 0 => {
            let p = vfs::resolve_parent(dirfd, &path)?;
            if p.trailing_slash {
                return Err(Errno::EISDIR);
            }
            let umask = task::current().fs().lock().umask;
            let node = p.dir.create(&p.name, Kind::File, mode & 0o7777 & !umask)?;
            let full = if p.dir_path == "/" {
                alloc::format!("/{}", p.name)
            } else {
                alloc::format!("{}/{}", p.dir_path, p.name)
            };
            vfs::Resolved { node, path: full }
        }
        Err(e) => return Err(e),
    };
    let kind = node.node.kind();
    if kind == Kind::Symlink && !follow && flags & f::O_PATH == 0 {
        return Err(Errno::ELOOP);
    }
    if flags & f::O_DIRECTORY != 0 && kind != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let acc = flags & f::O_ACCMODE;
    if kind == Kind::Dir
        && (acc != f::O_RDONLY || flags & f::O_CREAT != 0)
        && flags & f::O_PATH == 0
    {
        return Err(Errno::EISDIR);
    }
    if flags & f::O_TRUNC != 0 && acc != f::O_RDONLY && kind == Kind::File {
        node.node.truncate(0)?;
    }
    let file = if flags & f::O_PATH != 0 {
        File::new(
            Some(node.node.clone()),
            Arc::new(vfs::NodeOps(node.node)),
            flags,
            node.path,
        )
    } else {
        vfs::open_node(
            node.node,
            flags & !(f::O_CREAT | f::O_EXCL | f::O_TRUNC | f::O_CLOEXEC),
            node.path,
        )?
    };
    install(file, flags & f::O_CLOEXEC != 0)
}

pub fn close(fd: i32) -> SysResult<usize> {
    let e = task::current().files().lock().close(fd)?;
    drop(e);
    Ok(0)
}

fn do_read(file: &File, buf: usize, count: usize, off: Option<u64>) -> SysResult<usize> {
    if !file.readable() {
        return Err(Errno::EBADF);
    }
    if file.node.as_ref().is_some_and(|n| n.kind() == Kind::Dir) {
        return Err(Errno::EISDIR);
    }
    let count = count.min(f::MAX_RW_COUNT);
    check_user(buf, count)?;
    if let Some(r) = file.ops.read_to_user(file, buf, count) {
        return r;
    }
    let mut kbuf = vec![0u8; count.min(CHUNK)];
    let mut done = 0;
    loop {
        let want = kbuf.len().min(count - done);
        let n = match off {
            Some(o) => file.ops.pread(file, &mut kbuf[..want], o + done as u64)?,
            None => match file.ops.read(file, &mut kbuf[..want]) {
                Ok(n) => n,
                Err(e) if done > 0 && matches!(e, Errno::EAGAIN | Errno::ERESTARTSYS) => 0,
                Err(e) => return Err(e),
            },
        };
        if let Err((e, copied)) = uaccess::copy_to_user_partial(buf + done, &kbuf[..n]) {
            // As Linux: what reached the buffer counts, and a file's offset covers only that.
            if off.is_none() && file.ops.seekable() {
                let mut pos = file.pos.lock();
                *pos = pos.saturating_sub((n - copied) as u64);
            }
            done += copied;
            return if done > 0 { Ok(done) } else { Err(e) };
        }
        done += n;
        // Only regular files fill the whole request in several pieces.
        if n < want || done == count || !file.ops.seekable() {
            return Ok(done);
        }
    }
}

fn do_write(file: &File, buf: usize, count: usize, off: Option<u64>) -> SysResult<usize> {
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    let count = count.min(f::MAX_RW_COUNT);
    check_user(buf, count)?;
    let mut done = 0;
    while done < count {
        let n = (count - done).min(CHUNK);
        let mut kbuf = vec![0u8; n];
        // A fault part-way writes what came before it (a short count, as on Linux).
        let (n, fault) = match uaccess::copy_from_user_partial(&mut kbuf, buf + done) {
            Ok(()) => (n, None),
            // A pipe takes a chunk whole or not at all.
            Err((e, _)) if file.ops.whole_chunks() => {
                if done > 0 {
                    break;
                }
                return Err(e);
            }
            Err((_, 0)) if done > 0 => break,
            Err((e, 0)) => return Err(e),
            Err((e, copied)) => (copied, Some(e)),
        };
        let w = match off {
            Some(o) => file.ops.pwrite(file, &kbuf[..n], o + done as u64),
            None => file.ops.write(file, &kbuf[..n]),
        };
        match w {
            Ok(w) => {
                done += w;
                if w < n || fault.is_some() {
                    break;
                }
                // A long write to a device or pipe stops at a chunk boundary for a signal (as
                // a terminal's does on Linux), so a killed writer does not hold on for minutes.
                if done < count
                    && !file.ops.seekable()
                    && crate::signal::interrupted(task::current())
                {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

pub fn read(fd: i32, buf: usize, count: usize) -> SysResult<usize> {
    let f = file(fd)?;
    do_read(&f, buf, count, None)
}

pub fn write(fd: i32, buf: usize, count: usize) -> SysResult<usize> {
    let f = file(fd)?;
    do_write(&f, buf, count, None)
}

pub fn pread64(fd: i32, buf: usize, count: usize, off: i64) -> SysResult<usize> {
    let file = file(fd)?;
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    do_read(&file, buf, count, Some(off as u64))
}

pub fn pwrite64(fd: i32, buf: usize, count: usize, off: i64) -> SysResult<usize> {
    let file = file(fd)?;
    if off < 0 {
        return Err(Errno::EINVAL);
    }
    do_write(&file, buf, count, Some(off as u64))
}

fn read_iovecs(iov: usize, cnt: usize) -> SysResult<Vec<f::Iovec>> {
    if cnt > f::UIO_MAXIOV {
        return Err(Errno::EINVAL);
    }
    let mut v = vec![f::Iovec::default(); cnt];
    uaccess::copy_from_user(v.as_mut_bytes(), iov)?;
    f::iovec_total(&v)?;
    Ok(v)
}

pub fn readv(fd: i32, iov: usize, cnt: usize) -> SysResult<usize> {
    let file = file(fd)?;
    let mut total = 0;
    for v in read_iovecs(iov, cnt)? {
        if v.iov_len == 0 {
            continue;
        }
        let n = match do_read(&file, v.iov_base as usize, v.iov_len as usize, None) {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(e) => return Err(e),
        };
        total += n;
        if n < v.iov_len as usize {
            break;
        }
    }
    Ok(total)
}

pub fn writev(fd: i32, iov: usize, cnt: usize) -> SysResult<usize> {
    let file = file(fd)?;
    let vs = read_iovecs(iov, cnt)?;
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    // As Linux: the lengths add up to at most MAX_RW_COUNT (later segments are cut short), and
    // every segment must lie in user space.
    let mut segs = Vec::with_capacity(vs.len());
    let mut total = 0usize;
    for v in &vs {
        let len = (v.iov_len as usize).min(f::MAX_RW_COUNT - total);
        check_user(v.iov_base as usize, len)?;
        total += len;
        segs.push((v.iov_base as usize, len));
    }
    if total == 0 {
        return Ok(0);
    }
    // A small writev is gathered into one write, so it reaches a pipe or the console as one
    // piece; a large one goes segment by segment.
    if total <= CHUNK {
        let mut kbuf = vec![0u8; total];
        let mut at = 0;
        for &(base, len) in &segs {
            uaccess::copy_from_user(&mut kbuf[at..at + len], base)?;
            at += len;
        }
        return file.ops.write(&file, &kbuf);
    }
    let mut done = 0;
    for &(base, len) in segs.iter().filter(|s| s.1 > 0) {
        match do_write(&file, base, len, None) {
            Ok(n) => {
                done += n;
                if n < len {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

pub fn lseek(fd: i32, off: i64, whence: u32) -> SysResult<usize> {
    let file = file(fd)?;
    if !file.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    let mut pos = file.pos.lock();
    let base = match whence {
        f::SEEK_SET => 0,
        f::SEEK_CUR => *pos as i64,
        f::SEEK_END => file.node.as_ref().map_or(0, |n| n.size() as i64),
        _ => return Err(Errno::EINVAL),
    };
    let new = base.checked_add(off).ok_or(Errno::EOVERFLOW)?;
    if new < 0 {
        return Err(Errno::EINVAL);
    }
    *pos = new as u64;
    Ok(new as usize)
}

fn stat_file(file: &File) -> f::Stat {
    match &file.node {
        Some(n) => vfs::stat_of(&**n),
        None => {
            let is_pipe = file.ops.as_any().is::<pipe::PipeEnd>();
            f::Stat {
                st_dev: 2,
                st_ino: Arc::as_ptr(&file.ops) as *const u8 as u64 & 0xffff_ffff,
                st_mode: if is_pipe { f::S_IFIFO | 0o600 } else { 0o600 },
                st_nlink: 1,
                st_blksize: 4096,
                ..Default::default()
            }
        }
    }
}

fn stat_at(dirfd: i32, path: usize, flags: u32) -> SysResult<f::Stat> {
    if flags
        & !(f::AT_SYMLINK_NOFOLLOW | f::AT_EMPTY_PATH | f::AT_NO_AUTOMOUNT | f::AT_STATX_SYNC_TYPE)
        != 0
    {
        return Err(Errno::EINVAL);
    }
    let p = read_path(path)?;
    if p.is_empty() {
        if flags & f::AT_EMPTY_PATH != 0 {
            if dirfd == f::AT_FDCWD {
                let cwd = task::current().fs().lock().cwd_node.clone();
                return Ok(vfs::stat_of(&*cwd));
            }
            let f = file(dirfd)?;
            return Ok(stat_file(&f));
        }
        return Err(Errno::ENOENT);
    }
    let r = vfs::resolve(dirfd, &p, flags & f::AT_SYMLINK_NOFOLLOW == 0)?;
    Ok(vfs::stat_of(&*r.node))
}

pub fn newfstatat(dirfd: i32, path: usize, buf: usize, flags: u32) -> SysResult<usize> {
    let st = stat_at(dirfd, path, flags)?;
    uaccess::copy_to_user(buf, st.as_bytes())?;
    Ok(0)
}

pub fn fstat(fd: i32, buf: usize) -> SysResult<usize> {
    let f = file(fd)?;
    let st = stat_file(&f);
    uaccess::copy_to_user(buf, st.as_bytes())?;
    Ok(0)
}

pub fn statx(dirfd: i32, path: usize, flags: u32, mask: u32, buf: usize) -> SysResult<usize> {
    let st = stat_at(dirfd, path, flags)?;
    let sx = f::Statx::from_stat(&st, mask | f::STATX_BASIC_STATS);
    uaccess::copy_to_user(buf, sx.as_bytes())?;
    Ok(0)
}

pub fn getdents64(fd: i32, buf: usize, count: usize) -> SysResult<usize> {
    let file = file(fd)?;
    let node = file.node.clone().ok_or(Errno::ENOTDIR)?;
    if node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    check_user(buf, count)?;
    let mut list: Vec<(String, u64, Kind)> = vec![
        (".".into(), node.ino(), Kind::Dir),
        ("..".into(), 1, Kind::Dir),
    ];
    list.extend(node.entries()?);
    let mut pos = file.pos.lock();
    let mut kbuf = vec![0u8; count.min(CHUNK)];
    let mut w = f::Dirent64Writer::new(&mut kbuf);
    let start = *pos as usize;
    let mut next = start;
    for (i, (name, ino, kind)) in list.iter().enumerate().skip(start) {
        if !w.push(*ino, (i + 1) as i64, kind.dirent_type(), name.as_bytes()) {
            break;
        }
        next = i + 1;
    }
    let n = w.finish()?;
    uaccess::copy_to_user(buf, &kbuf[..n])?;
    *pos = next as u64;
    Ok(n)
}

pub fn readlinkat(dirfd: i32, path: usize, buf: usize, size: usize) -> SysResult<usize> {
    if (size as i32) <= 0 {
        return Err(Errno::EINVAL);
    }
    let p = read_path(path)?;
    let r = vfs::resolve(dirfd, &p, false)?;
    let target = r.node.readlink()?;
    let n = target.len().min(size);
    uaccess::copy_to_user(buf, &target.as_bytes()[..n])?;
    Ok(n)
}

pub fn faccessat(dirfd: i32, path: usize, mode: u32, flags: u32) -> SysResult<usize> {
    if mode & !7 != 0 || flags & !(f::AT_EACCESS | f::AT_SYMLINK_NOFOLLOW | f::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let p = read_path(path)?;
    let r = vfs::resolve(dirfd, &p, flags & f::AT_SYMLINK_NOFOLLOW == 0)?;
    // Everything runs as root: only execute permission needs an x bit (directories always pass).
    if mode & f::X_OK != 0 && r.node.kind() != Kind::Dir && r.node.perm() & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    Ok(0)
}

pub fn chdir(path: usize) -> SysResult<usize> {
    let p = read_path(path)?;
    let r = vfs::resolve(f::AT_FDCWD, &p, true)?;
    if r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let fs = task::current().fs();
    let mut g = fs.lock();
    g.cwd = r.path;
    g.cwd_node = r.node;
    Ok(0)
}

pub fn fchdir(fd: i32) -> SysResult<usize> {
    let file = file(fd)?;
    let node = file.node.clone().ok_or(Errno::ENOTDIR)?;
    if node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let fs = task::current().fs();
    let mut g = fs.lock();
    g.cwd = file.path.clone();
    g.cwd_node = node;
    Ok(0)
}

pub fn getcwd(buf: usize, size: usize) -> SysResult<usize> {
    let cwd = task::current().fs().lock().cwd.clone();
    let len = cwd.len() + 1;
    if size < len {
        return Err(Errno::ERANGE);
    }
    uaccess::copy_to_user(buf, cwd.as_bytes())?;
    uaccess::copy_to_user(buf + cwd.len(), &[0])?;
    Ok(len)
}

pub fn mkdirat(dirfd: i32, path: usize, mode: u32) -> SysResult<usize> {
    let p = read_path(path)?;
    let r = vfs::resolve_parent(dirfd, &p)?;
    if r.name == "." || r.name == ".." {
        return Err(Errno::EEXIST);
    }
    let umask = task::current().fs().lock().umask;
    r.dir.create(&r.name, Kind::Dir, mode & 0o7777 & !umask)?;
    Ok(0)
}

pub fn unlinkat(dirfd: i32, path: usize, flags: u32) -> SysResult<usize> {
    if flags & !f::AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let p = read_path(path)?;
    let r = vfs::resolve_parent(dirfd, &p)?;
    match r.name.as_str() {
        "." => return Err(Errno::EINVAL),
        ".." => return Err(Errno::ENOTEMPTY),
        _ => {}
    }
    r.dir.unlink(&r.name, flags & f::AT_REMOVEDIR != 0)?;
    Ok(0)
}

pub fn symlinkat(target: usize, dirfd: i32, path: usize) -> SysResult<usize> {
    let t = read_path(target)?;
    let p = read_path(path)?;
    let r = vfs::resolve_parent(dirfd, &p)?;
    r.dir.link(&r.name, crate::fs::ramfs::RamSymlink::new(t))?;
    Ok(0)
}

pub fn mknodat(dirfd: i32, path: usize, mode: u32, dev: u64) -> SysResult<usize> {
    let p = read_path(path)?;
    let r = vfs::resolve_parent(dirfd, &p)?;
    match mode & f::S_IFMT {
        f::S_IFCHR => {
            let (major, minor) = (
                ((dev >> 8) & 0xfff) as u32,
                ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
            );
            r.dir.link(
                &r.name,
                crate::fs::ramfs::DevNode::new(mode & 0o7777, major, minor),
            )?;
        }
        0 | f::S_IFREG => {
            r.dir.create(&r.name, Kind::File, mode & 0o7777)?;
        }
        _ => return Err(Errno::EPERM),
    }
    Ok(0)
}

pub fn ftruncate(fd: i32, len: i64) -> SysResult<usize> {
    let file = file(fd)?;
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

pub fn fsync(fd: i32) -> SysResult<usize> {
    file(fd).map(|_| 0)
}

pub fn pipe2(fds: usize, flags: u32) -> SysResult<usize> {
    if flags & !(f::O_CLOEXEC | f::O_NONBLOCK | f::O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    check_user(fds, 8)?;
    let (r, w) = pipe::new_pipe();
    let nb = flags & f::O_NONBLOCK;
    let rf = File::new(None, r, f::O_RDONLY | nb, String::from("pipe:"));
    let wf = File::new(None, w, f::O_WRONLY | nb, String::from("pipe:"));
    let cloexec = flags & f::O_CLOEXEC != 0;
    let files = task::current().files();
    let mut t = files.lock();
    let a = t.install(rf, cloexec)?;
    let b = match t.install(wf, cloexec) {
        Ok(b) => b,
        Err(e) => {
            let _ = t.close(a);
            return Err(e);
        }
    };
    drop(t);
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&a.to_le_bytes());
    out[4..].copy_from_slice(&b.to_le_bytes());
    if let Err(e) = uaccess::copy_to_user(fds, &out) {
        let mut t = files.lock();
        let _ = t.close(a);
        let _ = t.close(b);
        return Err(e);
    }
    Ok(0)
}

pub fn dup(fd: i32) -> SysResult<usize> {
    let files = task::current().files();
    let mut t = files.lock();
    let file = t.get(fd)?;
    t.install(file, false).map(|fd| fd as usize)
}

pub fn dup3(old: i32, new: i32, flags: u32) -> SysResult<usize> {
    if flags & !f::O_CLOEXEC != 0 || old == new {
        return Err(Errno::EINVAL);
    }
    if new < 0 {
        return Err(Errno::EBADF);
    }
    let files = task::current().files();
    let mut t = files.lock();
    let file = t.get(old)?;
    let prev = t.install_at(new as usize, file, flags & f::O_CLOEXEC != 0)?;
    drop(t);
    drop(prev);
    Ok(new as usize)
}

pub fn fcntl(fd: i32, cmd: u32, arg: usize) -> SysResult<usize> {
    let files = task::current().files();
    let mut t = files.lock();
    let file = t.get(fd)?;
    match cmd {
        f::F_DUPFD | f::F_DUPFD_CLOEXEC => {
            if arg >= vfs::nofile_limit() {
                return Err(Errno::EINVAL);
            }
            t.install_from(arg, file, cmd == f::F_DUPFD_CLOEXEC)
                .map(|fd| fd as usize)
        }
        f::F_GETFD => Ok(t.entry_mut(fd)?.cloexec as usize),
        f::F_SETFD => {
            t.entry_mut(fd)?.cloexec = arg as u32 & f::FD_CLOEXEC != 0;
            Ok(0)
        }
        f::F_GETFL => Ok((file.flags() | f::O_LARGEFILE) as usize),
        f::F_SETFL => {
            let keep = file.flags() & !f::SETFL_MASK;
            file.flags.store(
                keep | (arg as u32 & f::SETFL_MASK),
                core::sync::atomic::Ordering::Relaxed,
            );
            epoll::notify();
            Ok(0)
        }
        f::F_GETLK
        | f::F_SETLK
        | f::F_SETLKW
        | f::F_OFD_GETLK
        | f::F_OFD_SETLK
        | f::F_OFD_SETLKW => Ok(0),
        f::F_GETPIPE_SZ | f::F_SETPIPE_SZ => {
            let end = file
                .ops
                .as_any()
                .downcast_ref::<pipe::PipeEnd>()
                .ok_or(Errno::EBADF)?;
            if cmd == f::F_GETPIPE_SZ {
                Ok(end.capacity())
            } else {
                end.set_capacity(arg, super::cred::privileged())
            }
        }
        f::F_GETOWN | f::F_SETOWN => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

pub fn ioctl(fd: i32, cmd: u32, arg: usize) -> SysResult<usize> {
    let files = task::current().files();
    let file = files.lock().get(fd)?;
    match cmd {
        svelt_abi::tty::FIOCLEX | svelt_abi::tty::FIONCLEX => {
            files.lock().entry_mut(fd)?.cloexec = cmd == svelt_abi::tty::FIOCLEX;
            Ok(0)
        }
        svelt_abi::tty::FIONBIO => {
            let on = uaccess::read_u32(arg)? != 0;
            let fl = file.flags() & !f::O_NONBLOCK;
            file.flags.store(
                fl | if on { f::O_NONBLOCK } else { 0 },
                core::sync::atomic::Ordering::Relaxed,
            );
            Ok(0)
        }
        _ => file.ops.ioctl(&file, cmd, arg),
    }
}

pub fn epoll_create1(flags: u32) -> SysResult<usize> {
    if flags & !f::EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    let file = File::new(
        None,
        Epoll::new(),
        f::O_RDWR,
        String::from("anon_inode:[eventpoll]"),
    );
    install(file, flags & f::EPOLL_CLOEXEC != 0)
}

fn as_epoll(file: &File) -> SysResult<&Epoll> {
    file.ops
        .as_any()
        .downcast_ref::<Epoll>()
        .ok_or(Errno::EINVAL)
}

pub fn epoll_ctl(epfd: i32, op: u32, fd: i32, event: usize) -> SysResult<usize> {
    let ep_file = file(epfd)?;
    let target = file(fd)?;
    let ep = as_epoll(&ep_file)?;
    if epfd == fd {
        return Err(Errno::EINVAL);
    }
    if target
        .node
        .as_ref()
        .is_some_and(|n| matches!(n.kind(), Kind::File | Kind::Dir))
    {
        return Err(Errno::EPERM);
    }
    let ev = if op == f::EPOLL_CTL_DEL {
        f::EpollEvent::default()
    } else {
        uaccess::read_struct::<f::EpollEvent>(event)?
    };
    ep.ctl(op, fd, &target, ev)?;
    Ok(0)
}

/// Converts a poll timeout in ms (negative: forever) into a deadline.
fn ms_deadline(ms: i32) -> Option<u64> {
    (ms >= 0).then(|| crate::time::deadline_after_ns(ms as u64 * 1_000_000))
}

pub fn epoll_pwait(
    epfd: i32,
    events: usize,
    max: i32,
    timeout: i32,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult<usize> {
    if max <= 0 || max as usize > (i32::MAX as usize) / f::EpollEvent::SIZE {
        return Err(Errno::EINVAL);
    }
    let ep_file = file(epfd)?;
    let ep = as_epoll(&ep_file)?;
    check_user(events, max as usize * f::EpollEvent::SIZE)?;
    let _mask = crate::signal::TempMask::from_user(sigmask, sigsetsize)?;
    let ready = epoll::wait_ready(
        || {
            let v = ep.collect(max as usize);
            (!v.is_empty()).then_some(v)
        },
        if timeout == 0 {
            Some(0)
        } else {
            ms_deadline(timeout)
        },
    )
    .map_err(|_| Errno::EINTR)?
    .unwrap_or_default();
    uaccess::copy_to_user(events, ready.as_bytes())?;
    Ok(ready.len())
}

fn read_timeout(ts: usize) -> SysResult<Option<u64>> {
    if ts == 0 {
        return Ok(None);
    }
    let t = uaccess::read_struct::<svelt_abi::time::Timespec>(ts)?.validate()?;
    let ns = (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64);
    Ok(Some(crate::time::deadline_after_ns(ns)))
}

pub fn ppoll(
    fds: usize,
    nfds: usize,
    tmo: usize,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult<usize> {
    if nfds > vfs::nofile_limit() {
        return Err(Errno::EINVAL);
    }
    let mut pfds = vec![f::PollFd::default(); nfds];
    uaccess::copy_from_user(pfds.as_mut_bytes(), fds)?;
    let deadline = read_timeout(tmo)?;
    let _mask = crate::signal::TempMask::from_user(sigmask, sigsetsize)?;
    let files = task::current().files();
    let r = epoll::wait_ready(
        || {
            let t = files.lock();
            let mut n = 0;
            for p in pfds.iter_mut() {
                p.revents = 0;
                if p.fd < 0 {
                    continue;
                }
                let ev = match t.get(p.fd) {
                    Ok(file) => {
                        let ready = file.ops.poll() as u16;
                        ready & (p.events as u16 | f::POLLERR | f::POLLHUP)
                    }
                    Err(_) => f::POLLNVAL,
                };
                if ev != 0 {
                    p.revents = ev as i16;
                    n += 1;
                }
            }
            (n > 0).then_some(n)
        },
        deadline,
    );
    let n = match r {
        Ok(v) => v.unwrap_or(0),
        Err(_) => return Err(Errno::ERESTARTNOHAND),
    };
    uaccess::copy_to_user(fds, pfds.as_bytes())?;
    Ok(n)
}

pub fn pselect6(
    nfds: i32,
    rd: usize,
    wr: usize,
    ex: usize,
    tmo: usize,
    sig: usize,
) -> SysResult<usize> {
    if !(0..=vfs::NR_OPEN as i32).contains(&nfds) {
        return Err(Errno::EINVAL);
    }
    let bytes = (nfds as usize).div_ceil(64) * 8;
    let read_set = |va: usize| -> SysResult<Vec<u8>> {
        let mut b = vec![0u8; bytes];
        if va != 0 {
            uaccess::copy_from_user(&mut b, va)?;
        }
        Ok(b)
    };
    let (rs, ws, xs) = (read_set(rd)?, read_set(wr)?, read_set(ex)?);
    let deadline = read_timeout(tmo)?;
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let _mask = if sig != 0 {
        let (p, len) = (
            uaccess::read_u64(sig)?,
            uaccess::read_u64(sig.wrapping_add(8))?,
        );
        crate::signal::TempMask::from_user(p as usize, len as usize)?
    } else {
        crate::signal::TempMask::from_user(0, 8)?
    };
    let files = task::current().files();
    let bit = |s: &[u8], i: usize| s[i / 8] & (1 << (i % 8)) != 0;
    let mut out = (vec![0u8; bytes], vec![0u8; bytes], vec![0u8; bytes]);
    let r = epoll::wait_ready(
        || {
            let t = files.lock();
            let mut n = 0;
            out = (vec![0u8; bytes], vec![0u8; bytes], vec![0u8; bytes]);
            for i in 0..nfds as usize {
                if !(bit(&rs, i) || bit(&ws, i) || bit(&xs, i)) {
                    continue;
                }
                let Ok(file) = t.get(i as i32) else {
                    return Some(Err(Errno::EBADF));
                };
                let ready = file.ops.poll() as u16;
                if bit(&rs, i) && ready & (f::POLLIN | f::POLLHUP | f::POLLERR) != 0 {
                    out.0[i / 8] |= 1 << (i % 8);
                    n += 1;
                }
                if bit(&ws, i) && ready & (f::POLLOUT | f::POLLERR) != 0 {
                    out.1[i / 8] |= 1 << (i % 8);
                    n += 1;
                }
            }
            (n > 0).then_some(Ok(n))
        },
        deadline,
    );
    let n = match r {
        Ok(Some(r)) => r?,
        Ok(None) => 0,
        Err(_) => return Err(Errno::ERESTARTNOHAND),
    };
    for (va, s) in [(rd, &out.0), (wr, &out.1), (ex, &out.2)] {
        if va != 0 {
            uaccess::copy_to_user(va, s)?;
        }
    }
    Ok(n)
}

/// mount(2): tmpfs and ramfs are real, empty instances grafted over the target; proc, sysfs,
/// devtmpfs and devpts are built in at their usual places, so mounting them changes nothing.
/// Remounts, binds, moves and propagation changes are accepted and do nothing.
pub fn mount(
    source: usize,
    target: usize,
    fstype: usize,
    flags: u64,
    data: usize,
) -> SysResult<usize> {
    use svelt_abi::mount as m;
    use vfs::pagecache::{Limit, RAMFS_MAGIC, TMPFS_MAGIC};
    const NOT_NEW: u64 = m::MS_REMOUNT
        | m::MS_BIND
        | m::MS_MOVE
        | m::MS_SHARED
        | m::MS_PRIVATE
        | m::MS_SLAVE
        | m::MS_UNBINDABLE;
    let t = read_path(target)?;
    let r = vfs::resolve(f::AT_FDCWD, &t, true)?;
    if r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    if fstype == 0 || flags & NOT_NEW != 0 {
        return Ok(0);
    }
    let ty = read_path(fstype)?;
    let (fstype, magic) = match ty.as_str() {
        "proc" | "sysfs" | "devtmpfs" | "devpts" => return Ok(0),
        "tmpfs" => ("tmpfs", TMPFS_MAGIC),
        "ramfs" => ("ramfs", RAMFS_MAGIC),
        _ => return Err(Errno::ENODEV),
    };
    // At most a page of options, as Linux copies.
    let data = match data {
        0 => String::new(),
        va => match uaccess::read_cstr(va, 4095) {
            Ok(b) => String::from_utf8(b).map_err(|_| Errno::EINVAL)?,
            Err(Errno::EFAULT) => return Err(Errno::EFAULT),
            Err(_) => return Err(Errno::EINVAL),
        },
    };
    let source = match source {
        0 => String::from("none"),
        va => read_path(va)?,
    };
    let total = crate::mm::frame::total() as u64;
    let new = if fstype == "tmpfs" {
        let opts = m::parse_tmpfs(&data, total)?;
        let limit = match opts.blocks {
            None => Limit::HalfOfRam,
            Some(0) => Limit::None,
            Some(n) => Limit::Pages(usize::try_from(n).unwrap_or(usize::MAX)),
        };
        let mode = opts.mode.unwrap_or(0o1777);
        vfs::NewMount {
            source,
            fstype,
            flags,
            opts,
            limit,
            magic,
            mode,
        }
    } else {
        // ramfs takes mode= and ignores every other option.
        let mut mode = 0o755;
        for w in data.split(',').filter(|w| w.starts_with("mode=")) {
            mode = m::parse_tmpfs(w, total)?.mode.unwrap_or(mode);
        }
        vfs::NewMount {
            source,
            fstype,
            flags,
            opts: m::TmpfsOptions::default(),
            limit: Limit::None,
            magic,
            mode,
        }
    };
    vfs::mount_fresh(&r, new)?;
    Ok(0)
}

/// umount2(2): tmpfs and ramfs mounts go away (busy or not); anything else is EINVAL.
pub fn umount2(target: usize, flags: u32) -> SysResult<usize> {
    use svelt_abi::mount as m;
    let known = m::MNT_FORCE | m::MNT_DETACH | m::MNT_EXPIRE | m::UMOUNT_NOFOLLOW;
    let expire_with_force =
        flags & m::MNT_EXPIRE != 0 && flags & (m::MNT_FORCE | m::MNT_DETACH) != 0;
    if flags & !known != 0 || expire_with_force {
        return Err(Errno::EINVAL);
    }
    let t = read_path(target)?;
    let r = vfs::resolve(f::AT_FDCWD, &t, flags & m::UMOUNT_NOFOLLOW == 0)?;
    vfs::umount(&r)?;
    Ok(0)
}

pub fn umask(mask: u32) -> SysResult<usize> {
    let fs = task::current().fs();
    let mut g = fs.lock();
    let old = g.umask;
    g.umask = mask & 0o777;
    Ok(old as usize)
}

/// struct statfs (arm64: 64-bit words, 120 bytes). /proc and /sys go by their place; every
/// other node reports its tmpfs/ramfs instance (the root's when it has none: devices, pipes).
fn write_statfs(buf: usize, node: Option<&dyn vfs::Inode>, path: &str) -> SysResult<usize> {
    const PROC_SUPER_MAGIC: u64 = 0x9fa0;
    const SYSFS_MAGIC: u64 = 0x6265_6572;
    let under = |root: &str| path == root || path.starts_with(&alloc::format!("{root}/"));
    let mut w = [0u64; 15];
    if under("/proc") {
        w[0] = PROC_SUPER_MAGIC;
    } else if under("/sys") {
        w[0] = SYSFS_MAGIC;
    } else {
        let sb = node
            .and_then(|n| n.superblock())
            .unwrap_or_else(vfs::pagecache::TmpfsSb::root);
        w[0] = sb.magic;
        // The size limit in pages and what is left of it (f_blocks, f_bfree, f_bavail); zero
        // without a limit.
        if let Some(limit) = sb.limit() {
            w[2] = limit as u64;
            w[3] = limit.saturating_sub(sb.used()) as u64;
            w[4] = w[3];
        }
    }
    w[1] = 4096; // f_bsize
    w[8] = 255; // f_namelen
    w[9] = 4096; // f_frsize
    let mut b = [0u8; 120];
    for (i, v) in w.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    uaccess::copy_to_user(buf, &b)?;
    Ok(0)
}

pub fn statfs(path: usize, buf: usize) -> SysResult<usize> {
    let p = read_path(path)?;
    let r = vfs::resolve(f::AT_FDCWD, &p, true)?;
    write_statfs(buf, Some(&*r.node), &r.path)
}

pub fn fstatfs(fd: i32, buf: usize) -> SysResult<usize> {
    let f = file(fd)?;
    write_statfs(buf, f.node.as_deref(), &f.path)
}
