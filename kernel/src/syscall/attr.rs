//! A file's attributes: chmod, chown and utimensat (and their fd and at forms), on the nodes
//! that keep attributes (ramfs and tmpfs; generated /proc and /sys nodes answer EPERM, as
//! Linux's do for most of them).

#![forbid(unsafe_code)]

use super::file::file;
use crate::fs::{self, Attrs, Inode};
use crate::mm::uaccess::UserPtr;
use crate::process::CurrentTask;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_NOFOLLOW, S_ISGID, S_ISUID, UTIME_NOW, UTIME_OMIT,
};

const S_IXGRP: u32 = 0o010;
use svelt_abi::uapi::time::Timespec;

fn euid(cur: &CurrentTask) -> u32 {
    cur.process().euid.load(Ordering::Relaxed)
}

/// The node `path` names from `dirfd`, or `dirfd`'s own node for an empty path with
/// AT_EMPTY_PATH.
fn node_at(
    cur: &CurrentTask,
    dirfd: i32,
    path: Option<usize>,
    flags: u32,
) -> SysResult<Arc<dyn Inode>> {
    let p = match path {
        Some(va) => UserPtr::<u8>::new(va).read_path()?,
        None => alloc::string::String::new(),
    };
    if p.is_empty() {
        if path.is_some() && flags & AT_EMPTY_PATH == 0 {
            return Err(Errno::ENOENT);
        }
        if dirfd == AT_FDCWD {
            return Ok(cur.fs().lock().cwd_node.clone());
        }
        return file(cur, dirfd)?.node.clone().ok_or(Errno::EPERM);
    }
    Ok(fs::resolve(cur, dirfd, &p, flags & AT_SYMLINK_NOFOLLOW == 0)?.node)
}

fn attrs_of(node: &dyn Inode) -> SysResult<&Attrs> {
    node.attrs().ok_or(Errno::EPERM)
}

/// Only the owner (or root) changes the mode.
fn chmod_node(cur: &CurrentTask, node: &dyn Inode, mode: u32) -> SysResult<usize> {
    let a = attrs_of(node)?;
    let me = euid(cur);
    if me != 0 && me != a.owner().0 {
        return Err(Errno::EPERM);
    }
    a.set_perm(mode);
    Ok(0)
}

pub fn fchmod(cur: &CurrentTask, fd: i32, mode: u32) -> SysResult<usize> {
    let f = file(cur, fd)?;
    if f.flags() & svelt_abi::uapi::fs::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let node = f.node.clone().ok_or(Errno::EPERM)?;
    chmod_node(cur, &*node, mode)
}

/// fchmodat (flags 0) and fchmodat2 (AT_SYMLINK_NOFOLLOW: a link's own mode cannot change,
/// EOPNOTSUPP; AT_EMPTY_PATH).
pub fn fchmodat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    mode: u32,
    flags: u32,
) -> SysResult<usize> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let node = node_at(cur, dirfd, Some(path), flags)?;
    if flags & AT_SYMLINK_NOFOLLOW != 0 && node.kind() == fs::Kind::Symlink {
        return Err(Errno::EOPNOTSUPP);
    }
    chmod_node(cur, &*node, mode)
}

/// Root changes owner and group; an owner may only "change" them to what they are (Svelt
/// keeps no supplementary groups). As on Linux, any chown of a non-directory drops set-user-ID,
/// and set-group-ID when group execute is on (without it the bit marks mandatory locking).
fn chown_node(cur: &CurrentTask, node: &dyn Inode, uid: u32, gid: u32) -> SysResult<usize> {
    let a = attrs_of(node)?;
    let uid = (uid != u32::MAX).then_some(uid);
    let gid = (gid != u32::MAX).then_some(gid);
    let me = euid(cur);
    let (owner, group) = a.owner();
    if me != 0
        && (me != owner || uid.is_some_and(|u| u != owner) || gid.is_some_and(|g| g != group))
    {
        return Err(Errno::EPERM);
    }
    a.set_owner(uid, gid);
    if node.kind() != fs::Kind::Dir {
        let perm = a.perm();
        let mut kill = S_ISUID;
        if perm & S_IXGRP != 0 {
            kill |= S_ISGID;
        }
        if perm & kill != 0 {
            a.set_perm(perm & !kill);
        }
    }
    Ok(0)
}

pub fn fchown(cur: &CurrentTask, fd: i32, uid: u32, gid: u32) -> SysResult<usize> {
    let f = file(cur, fd)?;
    if f.flags() & svelt_abi::uapi::fs::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    let node = f.node.clone().ok_or(Errno::EPERM)?;
    chown_node(cur, &*node, uid, gid)
}

pub fn fchownat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    uid: u32,
    gid: u32,
    flags: u32,
) -> SysResult<usize> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let node = node_at(cur, dirfd, Some(path), flags)?;
    chown_node(cur, &*node, uid, gid)
}

/// The extended-attribute calls on a file system without extended attributes, as Linux's
/// ramfs answers them: lists are empty, reading, setting and removing are EOPNOTSUPP, once the
/// path or descriptor is found (`target`: the descriptor for the f* forms, else the path).
pub fn xattr(cur: &CurrentTask, what: Xattr, target: usize, follow: bool) -> SysResult<usize> {
    match what {
        Xattr::Fd => {
            file(cur, target as i32)?;
        }
        Xattr::Path => {
            let p = UserPtr::<u8>::new(target).read_path()?;
            fs::resolve(cur, AT_FDCWD, &p, follow)?;
        }
    }
    Err(Errno::EOPNOTSUPP)
}

/// listxattr and its forms: found, and empty.
pub fn listxattr(cur: &CurrentTask, what: Xattr, target: usize, follow: bool) -> SysResult<usize> {
    xattr(cur, what, target, follow).or_else(|e| match e {
        Errno::EOPNOTSUPP => Ok(0),
        e => Err(e),
    })
}

/// How an xattr call names its file.
#[derive(Clone, Copy)]
pub enum Xattr {
    Path,
    Fd,
}

/// One utimensat time: `None` to leave it (UTIME_OMIT), else nanoseconds since the epoch.
fn time_value(t: &Timespec, now: u64) -> SysResult<Option<u64>> {
    match t.tv_nsec {
        UTIME_OMIT => Ok(None),
        UTIME_NOW => Ok(Some(now)),
        n if (0..1_000_000_000).contains(&n) => {
            // Times before 1970 are kept as 1970 (the node stores unsigned nanoseconds).
            let s = u64::try_from(t.tv_sec).unwrap_or(0);
            Ok(Some(
                s.saturating_mul(1_000_000_000).saturating_add(n as u64),
            ))
        }
        _ => Err(Errno::EINVAL),
    }
}

/// utimensat: a null `path` means `dirfd` itself (futimens, which takes no flags). Both times
/// UTIME_OMIT is nothing to do, checked before anything else (even the path). Setting both
/// times to now needs ownership or write permission (EACCES); any other request needs
/// ownership (EPERM); root may do both.
pub fn utimensat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    times: usize,
    flags: u32,
) -> SysResult<usize> {
    let now = crate::time::realtime_ns();
    let (atime, mtime, touch) = if times == 0 {
        (Some(now), Some(now), true)
    } else {
        let [a, m] = UserPtr::<[Timespec; 2]>::new(times).read()?;
        if a.tv_nsec == UTIME_OMIT && m.tv_nsec == UTIME_OMIT {
            return Ok(0);
        }
        let touch = a.tv_nsec == UTIME_NOW && m.tv_nsec == UTIME_NOW;
        (time_value(&a, now)?, time_value(&m, now)?, touch)
    };
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let node = if path != 0 {
        node_at(cur, dirfd, Some(path), flags)?
    } else if dirfd == AT_FDCWD {
        // Linux reads the (null) path name.
        return Err(Errno::EFAULT);
    } else if flags != 0 {
        return Err(Errno::EINVAL);
    } else {
        file(cur, dirfd)?.node.clone().ok_or(Errno::EPERM)?
    };
    let a = attrs_of(&*node)?;
    let me = euid(cur);
    if me != 0 && me != a.owner().0 {
        if !touch {
            return Err(Errno::EPERM);
        }
        // Write permission of the caller's class: Svelt's processes are all in group 0.
        let class = if a.owner().1 == 0 {
            a.perm() >> 3
        } else {
            a.perm()
        };
        if class & 0o2 == 0 {
            return Err(Errno::EACCES);
        }
    }
    a.set_times(atime, mtime);
    Ok(0)
}
