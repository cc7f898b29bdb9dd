//! What a file is: stat, statx, getdents, readlink, access checks, statfs.

#![forbid(unsafe_code)]

use super::file::{file, CHUNK};
use crate::fs::{self, pipe, File, Kind};
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::mm::{try_reserve, try_vec};
use crate::process::CurrentTask;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    Dirent64Writer, Stat, Statx, AT_EACCESS, AT_EMPTY_PATH, AT_FDCWD, AT_NO_AUTOMOUNT,
    AT_STATX_SYNC_TYPE, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, S_IFIFO, X_OK,
};

fn stat_file(file: &File) -> Stat {
    match &file.node {
        Some(n) => fs::stat_of(&**n),
        None if file.ops.stat().is_some() => file.ops.stat().unwrap_or_default(),
        None if crate::net::socket_ino(file).is_some() => Stat {
            st_dev: 8,
            st_ino: crate::net::socket_ino(file).unwrap_or(0),
            st_mode: svelt_abi::uapi::fs::S_IFSOCK | 0o777,
            st_nlink: 1,
            st_blksize: 4096,
            ..Default::default()
        },
        None => {
            let is_pipe = file.ops.as_any().is::<pipe::PipeEnd>();
            Stat {
                st_dev: 2,
                st_ino: Arc::as_ptr(&file.ops) as *const u8 as u64 & 0xffff_ffff,
                st_mode: if is_pipe { S_IFIFO | 0o600 } else { 0o600 },
                st_nlink: 1,
                st_blksize: 4096,
                ..Default::default()
            }
        }
    }
}

fn stat_at(cur: &CurrentTask, dirfd: i32, path: usize, flags: u32) -> SysResult<Stat> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE) != 0 {
        return Err(Errno::EINVAL);
    }
    let p = UserPtr::<u8>::new(path).read_path()?;
    if p.is_empty() {
        if flags & AT_EMPTY_PATH != 0 {
            if dirfd == AT_FDCWD {
                let cwd = cur.fs().lock().cwd_node.clone();
                return Ok(fs::stat_of(&*cwd));
            }
            let f = file(cur, dirfd)?;
            return Ok(stat_file(&f));
        }
        return Err(Errno::ENOENT);
    }
    let r = fs::resolve(cur, dirfd, &p, flags & AT_SYMLINK_NOFOLLOW == 0)?;
    Ok(fs::stat_of(&*r.node))
}

pub fn newfstatat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    buf: usize,
    flags: u32,
) -> SysResult<usize> {
    let st = stat_at(cur, dirfd, path, flags)?;
    UserPtr::new(buf).write(&st)?;
    Ok(0)
}

pub fn fstat(cur: &CurrentTask, fd: i32, buf: usize) -> SysResult<usize> {
    let f = file(cur, fd)?;
    let st = stat_file(&f);
    UserPtr::new(buf).write(&st)?;
    Ok(0)
}

pub fn statx(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    flags: u32,
    mask: u32,
    buf: usize,
) -> SysResult<usize> {
    let st = stat_at(cur, dirfd, path, flags)?;
    let sx = Statx::from_stat(&st, mask | STATX_BASIC_STATS);
    UserPtr::new(buf).write(&sx)?;
    Ok(0)
}

pub fn getdents64(cur: &CurrentTask, fd: i32, buf: usize, count: usize) -> SysResult<usize> {
    let file = file(cur, fd)?;
    let node = file.node.clone().ok_or(Errno::ENOTDIR)?;
    if node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let mut user = UserSlice::new(buf, count);
    user.check()?;
    let entries = node.entries()?;
    let mut list: Vec<(String, u64, Kind)> = Vec::new();
    try_reserve(&mut list, entries.len() + 2)?;
    list.push((".".into(), node.ino(), Kind::Dir));
    list.push(("..".into(), 1, Kind::Dir));
    list.extend(entries);
    let mut pos = file.pos.lock();
    let mut kbuf = try_vec(count.min(CHUNK), 0u8)?;
    let mut w = Dirent64Writer::new(&mut kbuf);
    let start = *pos as usize;
    let mut next = start;
    for (i, (name, ino, kind)) in list.iter().enumerate().skip(start) {
        if !w.push(*ino, (i + 1) as i64, kind.dirent_type(), name.as_bytes()) {
            break;
        }
        next = i + 1;
    }
    let n = w.finish()?;
    user.copy_out(&kbuf[..n])?;
    *pos = next as u64;
    Ok(n)
}

pub fn readlinkat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    buf: usize,
    size: usize,
) -> SysResult<usize> {
    if (size as i32) <= 0 {
        return Err(Errno::EINVAL);
    }
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve(cur, dirfd, &p, false)?;
    let target = r.node.readlink(cur)?;
    let n = target.len().min(size);
    UserSlice::new(buf, size).copy_out(&target.as_bytes()[..n])?;
    Ok(n)
}

pub fn faccessat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    mode: u32,
    flags: u32,
) -> SysResult<usize> {
    if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve(cur, dirfd, &p, flags & AT_SYMLINK_NOFOLLOW == 0)?;
    // Everything runs as root: only execute permission needs an x bit (directories always pass).
    if mode & X_OK != 0 && r.node.kind() != Kind::Dir && r.node.perm() & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    Ok(0)
}

/// struct statfs (arm64: 64-bit words, 120 bytes). /proc and /sys go by their place (no
/// block or inode counts, as Linux's simple_statfs); every other node reports its tmpfs/ramfs
/// instance (the root's when it has none: devices, pipes).
fn write_statfs(buf: usize, node: Option<&dyn fs::Inode>, path: &str) -> SysResult<usize> {
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
            .unwrap_or_else(fs::pagecache::TmpfsSb::root);
        w[0] = sb.magic;
        // The size limit in pages and what is left of it (f_blocks, f_bfree, f_bavail); zero
        // without a limit.
        if let Some(limit) = sb.limit() {
            w[2] = limit as u64;
            w[3] = limit.saturating_sub(sb.used()) as u64;
            w[4] = w[3];
        }
        // The inode limit and what is left of it (f_files, f_ffree); zero without a limit.
        if let Some(limit) = sb.inode_limit() {
            w[5] = limit as u64;
            w[6] = limit.saturating_sub(sb.inodes()) as u64;
        }
    }
    w[1] = 4096; // f_bsize
    w[8] = 255; // f_namelen
    w[9] = 4096; // f_frsize
    UserPtr::new(buf).write(&w)?;
    Ok(0)
}

pub fn statfs(cur: &CurrentTask, path: usize, buf: usize) -> SysResult<usize> {
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve(cur, AT_FDCWD, &p, true)?;
    write_statfs(buf, Some(&*r.node), &r.path)
}

pub fn fstatfs(cur: &CurrentTask, fd: i32, buf: usize) -> SysResult<usize> {
    let f = file(cur, fd)?;
    write_statfs(buf, f.node.as_deref(), &f.path)
}
