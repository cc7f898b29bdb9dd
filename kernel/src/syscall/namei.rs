//! The name space: working directory, creating and removing names, mounts, umask.

#![forbid(unsafe_code)]

use super::file::file;
use crate::fs::{self, Caller, Kind};
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::CurrentTask;
use alloc::string::String;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{AT_FDCWD, AT_REMOVEDIR, S_IFCHR, S_IFIFO, S_IFMT, S_IFREG};

pub fn chdir(cur: &CurrentTask, path: usize) -> SysResult<usize> {
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve(cur, AT_FDCWD, &p, true)?;
    if r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    fs::may_search(cur, &*r.node)?;
    let fs = cur.fs();
    let mut g = fs.lock();
    g.cwd = r.path;
    g.cwd_node = r.node;
    Ok(0)
}

pub fn fchdir(cur: &CurrentTask, fd: i32) -> SysResult<usize> {
    let file = file(cur, fd)?;
    let node = file.node.clone().ok_or(Errno::ENOTDIR)?;
    if node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    fs::may_search(cur, &*node)?;
    let fs = cur.fs();
    let mut g = fs.lock();
    g.cwd = file.path.clone();
    g.cwd_node = node;
    Ok(0)
}

/// chroot: the directory becomes the process's root. The path is looked up first (ENOENT,
/// ENOTDIR), then searched (EACCES), and only then is CAP_SYS_CHROOT (root here) asked for
/// (EPERM), in Linux's order (fs/open.c, ksys_chroot). The cwd stays where it was.
pub fn chroot(cur: &CurrentTask, path: usize) -> SysResult<usize> {
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve(cur, AT_FDCWD, &p, true)?;
    if r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let euid = cur
        .process()
        .euid
        .load(core::sync::atomic::Ordering::Relaxed);
    fs::may_search(cur, &*r.node)?;
    if euid != 0 {
        return Err(Errno::EPERM);
    }
    cur.fs().lock().root = r.path.into();
    Ok(0)
}

pub fn getcwd(cur: &CurrentTask, buf: usize, size: usize) -> SysResult<usize> {
    let (cwd, root) = {
        let fs = cur.fs();
        let g = fs.lock();
        (g.cwd.clone(), g.root.clone())
    };
    // A cwd outside the root (chroot without chdir) is shown as Linux shows it.
    let cwd = match fs::relative_to_root(&cwd, &root) {
        Some(c) => String::from(c),
        None => alloc::format!("(unreachable){cwd}"),
    };
    let len = cwd.len() + 1;
    if size < len {
        return Err(Errno::ERANGE);
    }
    let mut out = UserSlice::new(buf, size);
    out.copy_out(cwd.as_bytes())?;
    out.copy_out(&[0])?;
    Ok(len)
}

pub fn mkdirat(cur: &CurrentTask, dirfd: i32, path: usize, mode: u32) -> SysResult<usize> {
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve_parent(cur, dirfd, &p)?;
    if r.name == "." || r.name == ".." {
        return Err(Errno::EEXIST);
    }
    let umask = cur.fs().lock().umask;
    r.dir
        .create(&r.name, Kind::Dir, mode & 0o7777 & !umask, cur.euid())?;
    Ok(0)
}

pub fn unlinkat(cur: &CurrentTask, dirfd: i32, path: usize, flags: u32) -> SysResult<usize> {
    if flags & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve_parent(cur, dirfd, &p)?;
    match r.name.as_str() {
        "." => return Err(Errno::EINVAL),
        ".." => return Err(Errno::ENOTEMPTY),
        _ => {}
    }
    r.dir.unlink(&r.name, flags & AT_REMOVEDIR != 0)?;
    Ok(0)
}

/// Whether two nodes belong to the same file system instance (rename and link stay inside one:
/// EXDEV otherwise).
fn same_fs(a: &dyn fs::Inode, b: &dyn fs::Inode) -> bool {
    match (a.superblock(), b.superblock()) {
        (Some(x), Some(y)) => alloc::sync::Arc::ptr_eq(&x, &y),
        _ => false,
    }
}

/// renameat and renameat2 (RENAME_NOREPLACE, RENAME_EXCHANGE), with Linux's errors: EBUSY for
/// `.` or `..`, ENOENT, EXDEV across file systems, ENOTDIR/EISDIR when a directory and a
/// non-directory would swap places, ENOTEMPTY for a non-empty target directory, EINVAL for a
/// directory moved under itself, EEXIST for NOREPLACE. Renaming a node onto itself does nothing.
pub fn renameat2(
    cur: &CurrentTask,
    olddfd: i32,
    oldpath: usize,
    newdfd: i32,
    newpath: usize,
    flags: u32,
) -> SysResult<usize> {
    const NOREPLACE: u32 = 1;
    const EXCHANGE: u32 = 2;
    if flags & !(NOREPLACE | EXCHANGE) != 0 || flags == NOREPLACE | EXCHANGE {
        return Err(Errno::EINVAL);
    }
    let o = UserPtr::<u8>::new(oldpath).read_path()?;
    let n = UserPtr::<u8>::new(newpath).read_path()?;
    let op = fs::resolve_parent(cur, olddfd, &o)?;
    let np = fs::resolve_parent(cur, newdfd, &n)?;
    if [&op.name, &np.name].iter().any(|x| *x == "." || *x == "..") {
        return Err(Errno::EBUSY);
    }
    // From the lookups on: two renames must not interleave their unlink and link halves, nor
    // act on what the other has just moved.
    let _g = RENAME.lock();
    let src = op.dir.lookup(&op.name)?;
    let dst = match np.dir.lookup(&np.name) {
        Ok(d) => Some(d),
        Err(Errno::ENOENT) if flags & EXCHANGE == 0 => None,
        Err(e) => return Err(e),
    };
    if !same_fs(&*op.dir, &*np.dir) {
        return Err(Errno::EXDEV);
    }
    let src_dir = src.kind() == Kind::Dir;
    if (op.trailing_slash || np.trailing_slash) && !src_dir {
        return Err(Errno::ENOTDIR);
    }
    if flags & NOREPLACE != 0 && dst.is_some() {
        return Err(Errno::EEXIST);
    }
    if let Some(d) = &dst {
        if alloc::sync::Arc::ptr_eq(d, &src) {
            return Ok(0);
        }
    }
    // A directory may not go inside itself (nor, when exchanging, the other one inside it).
    let inside = |dir: &fs::ResolvedParent, name: &str, into: &fs::ResolvedParent| {
        let base = if dir.dir_path == "/" {
            alloc::format!("/{name}")
        } else {
            alloc::format!("{}/{name}", dir.dir_path)
        };
        into.dir_path == base || into.dir_path.starts_with(&alloc::format!("{base}/"))
    };
    if src_dir && inside(&op, &op.name, &np) {
        return Err(Errno::EINVAL);
    }
    match dst {
        Some(d) if flags & EXCHANGE != 0 => {
            if d.kind() == Kind::Dir && inside(&np, &np.name, &op) {
                return Err(Errno::EINVAL);
            }
            np.dir.detach(&np.name)?;
            op.dir.detach(&op.name)?;
            np.dir.link(&np.name, src)?;
            op.dir.link(&op.name, d)?;
        }
        Some(d) => {
            match (src_dir, d.kind() == Kind::Dir) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) if !d.entries()?.is_empty() => return Err(Errno::ENOTEMPTY),
                _ => {}
            }
            if let Some(a) = d.attrs() {
                a.release_link(d.kind());
            }
            np.dir.detach(&np.name)?;
            np.dir.link(&np.name, src)?;
            op.dir.detach(&op.name)?;
        }
        None => {
            np.dir.link(&np.name, src)?;
            op.dir.detach(&op.name)?;
        }
    }
    Ok(0)
}

/// One rename at a time (see renameat2).
static RENAME: spin::Mutex<()> = spin::Mutex::new(());

/// linkat: a second name for a file (not a directory: EPERM), in the same file system (EXDEV).
/// AT_SYMLINK_FOLLOW follows a final symlink in `oldpath`; AT_EMPTY_PATH links `olddfd` itself.
pub fn linkat(
    cur: &CurrentTask,
    olddfd: i32,
    oldpath: usize,
    newdfd: i32,
    newpath: usize,
    flags: u32,
) -> SysResult<usize> {
    use svelt_abi::uapi::fs::{AT_EMPTY_PATH, AT_SYMLINK_FOLLOW};
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let o = UserPtr::<u8>::new(oldpath).read_path()?;
    let src = if o.is_empty() && flags & AT_EMPTY_PATH != 0 {
        file(cur, olddfd)?.node.clone().ok_or(Errno::ENOENT)?
    } else {
        fs::resolve(cur, olddfd, &o, flags & AT_SYMLINK_FOLLOW != 0)?.node
    };
    let n = UserPtr::<u8>::new(newpath).read_path()?;
    let np = fs::resolve_parent(cur, newdfd, &n)?;
    // Linux's order: the new name first (EEXIST), then the mounts (EXDEV), then the type.
    if np.dir.lookup(&np.name).is_ok() {
        return Err(Errno::EEXIST);
    }
    if np.trailing_slash {
        return Err(Errno::ENOENT);
    }
    // Symlinks and device nodes carry no instance of their own: any ramfs node may be linked
    // within the ramfs file systems, a generated one (/proc, /sys) nowhere.
    let linkable = match src.superblock() {
        Some(_) => same_fs(&*src, &*np.dir),
        None => src.attrs().is_some() && np.dir.superblock().is_some(),
    };
    if !linkable {
        return Err(Errno::EXDEV);
    }
    if src.kind() == Kind::Dir {
        return Err(Errno::EPERM);
    }
    // The new name costs an inode of the file system (ENOSPC when none is left).
    let charged = src.attrs().map(|a| a.charge_link()).transpose()? == Some(true);
    if let Err(e) = np.dir.link(&np.name, src.clone()) {
        if let (true, Some(a)) = (charged, src.attrs()) {
            a.uncharge_link();
        }
        return Err(e);
    }
    Ok(0)
}

pub fn symlinkat(cur: &CurrentTask, target: usize, dirfd: i32, path: usize) -> SysResult<usize> {
    let t = UserPtr::<u8>::new(target).read_path()?;
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve_parent(cur, dirfd, &p)?;
    r.dir
        .link(&r.name, fs::made_by(cur, fs::ramfs::RamSymlink::new(t)))?;
    Ok(0)
}

pub fn mknodat(
    cur: &CurrentTask,
    dirfd: i32,
    path: usize,
    mode: u32,
    dev: u64,
) -> SysResult<usize> {
    let p = UserPtr::<u8>::new(path).read_path()?;
    let r = fs::resolve_parent(cur, dirfd, &p)?;
    match mode & S_IFMT {
        S_IFCHR => {
            let (major, minor) = (
                ((dev >> 8) & 0xfff) as u32,
                ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
            );
            let node = fs::ramfs::DevNode::new(mode & 0o7777, major, minor);
            r.dir.link(&r.name, fs::made_by(cur, node))?;
        }
        0 | S_IFREG => {
            r.dir
                .create(&r.name, Kind::File, mode & 0o7777, cur.euid())?;
        }
        S_IFIFO => {
            let umask = cur.fs().lock().umask;
            let node = fs::pipe::FifoNode::new(mode & 0o7777 & !umask);
            r.dir.link(&r.name, fs::made_by(cur, node))?;
        }
        _ => return Err(Errno::EPERM),
    }
    Ok(0)
}

fn mount_devpts(r: &fs::Resolved, source: usize, flags: u64, data: usize) -> SysResult<usize> {
    let data = match data {
        0 => String::new(),
        va => match UserPtr::<u8>::new(va).read_cstring(4095) {
            Ok(b) => String::from_utf8(b).map_err(|_| Errno::EINVAL)?,
            Err(Errno::EFAULT) => return Err(Errno::EFAULT),
            Err(_) => return Err(Errno::EINVAL),
        },
    };
    let opts = svelt_abi::uapi::mount::parse_devpts(&data)?;
    if !fs::devpts::is_root(&*r.node) {
        let source = match source {
            0 => String::from("none"),
            va => UserPtr::<u8>::new(va).read_path()?,
        };
        fs::mount_existing(r, fs::devpts::root(), source, "devpts", flags)?;
    }
    fs::devpts::configure(opts);
    Ok(0)
}

/// mount(2): tmpfs and ramfs are real, empty instances grafted over the target; proc, sysfs
/// and devtmpfs are built in at their usual places, so mounting them changes nothing; devpts
/// is one instance (fs::devpts): a mount sets its options, and shows it at the target unless
/// the target is that instance already.
/// Remounts, binds, moves and propagation changes are accepted and do nothing.
pub fn mount(
    cur: &CurrentTask,
    source: usize,
    target: usize,
    fstype: usize,
    flags: u64,
    data: usize,
) -> SysResult<usize> {
    use fs::pagecache::{Limit, RAMFS_MAGIC, TMPFS_MAGIC};
    use svelt_abi::uapi::mount as m;
    const NOT_NEW: u64 = m::MS_REMOUNT
        | m::MS_BIND
        | m::MS_MOVE
        | m::MS_SHARED
        | m::MS_PRIVATE
        | m::MS_SLAVE
        | m::MS_UNBINDABLE;
    let t = UserPtr::<u8>::new(target).read_path()?;
    let r = fs::resolve(cur, AT_FDCWD, &t, true)?;
    if r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    if fstype == 0 || flags & NOT_NEW != 0 {
        return Ok(0);
    }
    let ty = UserPtr::<u8>::new(fstype).read_path()?;
    let (fstype, magic) = match ty.as_str() {
        "proc" | "sysfs" | "devtmpfs" => return Ok(0),
        "devpts" => return mount_devpts(&r, source, flags, data),
        "tmpfs" => ("tmpfs", TMPFS_MAGIC),
        "ramfs" => ("ramfs", RAMFS_MAGIC),
        _ => return Err(Errno::ENODEV),
    };
    // At most a page of options, as Linux copies.
    let data = match data {
        0 => String::new(),
        va => match UserPtr::<u8>::new(va).read_cstring(4095) {
            Ok(b) => String::from_utf8(b).map_err(|_| Errno::EINVAL)?,
            Err(Errno::EFAULT) => return Err(Errno::EFAULT),
            Err(_) => return Err(Errno::EINVAL),
        },
    };
    let source = match source {
        0 => String::from("none"),
        va => UserPtr::<u8>::new(va).read_path()?,
    };
    let total = crate::mm::frame::total() as u64;
    let new = if fstype == "tmpfs" {
        let opts = m::parse_tmpfs(&data, total)?;
        let limit = match opts.blocks {
            None => Limit::HalfOfRam,
            Some(0) => Limit::None,
            Some(n) => Limit::Pages(usize::try_from(n).unwrap_or(usize::MAX)),
        };
        let inode_limit = match opts.nr_inodes {
            None => Limit::HalfOfRam,
            Some(0) => Limit::None,
            Some(n) => Limit::Pages(usize::try_from(n).unwrap_or(usize::MAX)),
        };
        let mode = opts.mode.unwrap_or(0o1777);
        fs::NewMount {
            source,
            fstype,
            flags,
            opts,
            limit,
            inode_limit,
            magic,
            mode,
        }
    } else {
        // ramfs takes mode= and ignores every other option.
        let mut mode = 0o755;
        for w in data.split(',').filter(|w| w.starts_with("mode=")) {
            mode = m::parse_tmpfs(w, total)?.mode.unwrap_or(mode);
        }
        fs::NewMount {
            source,
            fstype,
            flags,
            opts: m::TmpfsOptions::default(),
            limit: Limit::None,
            inode_limit: Limit::None,
            magic,
            mode,
        }
    };
    fs::mount_fresh(&r, new)?;
    Ok(0)
}

/// umount2(2): tmpfs and ramfs mounts go away (busy or not); anything else is EINVAL.
pub fn umount2(cur: &CurrentTask, target: usize, flags: u32) -> SysResult<usize> {
    use svelt_abi::uapi::mount as m;
    let known = m::MNT_FORCE | m::MNT_DETACH | m::MNT_EXPIRE | m::UMOUNT_NOFOLLOW;
    let expire_with_force =
        flags & m::MNT_EXPIRE != 0 && flags & (m::MNT_FORCE | m::MNT_DETACH) != 0;
    if flags & !known != 0 || expire_with_force {
        return Err(Errno::EINVAL);
    }
    let t = UserPtr::<u8>::new(target).read_path()?;
    let r = fs::resolve(cur, AT_FDCWD, &t, flags & m::UMOUNT_NOFOLLOW == 0)?;
    fs::umount(&r)?;
    Ok(0)
}

pub fn umask(cur: &CurrentTask, mask: u32) -> SysResult<usize> {
    let fs = cur.fs();
    let mut g = fs.lock();
    let old = g.umask;
    g.umask = mask & 0o777;
    Ok(old as usize)
}
