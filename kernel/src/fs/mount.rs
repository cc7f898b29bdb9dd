//! tmpfs and ramfs mounts (Linux's fs/namespace.c, reduced): a fresh file system grafted over
//! a directory of the ramfs tree, and the list /proc/mounts and mountinfo show.

#![forbid(unsafe_code)]

use super::namei::path_stack;
use super::{pagecache, ramfs, Inode, Kind, Resolved};
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};

/// A file system grafted over a directory of a ramfs tree; `hidden` goes back at umount.
struct Mount {
    /// Canonical path of the mount point.
    path: String,
    source: String,
    fstype: &'static str,
    flags: u64,
    opts: svelt_abi::uapi::mount::TmpfsOptions,
    /// The ramfs directory holding the mount point, and its name there.
    parent: Arc<dyn Inode>,
    name: String,
    root: Arc<dyn Inode>,
    hidden: Arc<dyn Inode>,
}

impl Mount {
    /// The options /proc/mounts shows: tmpfs's own (its size against the default, half of
    /// memory), or the mount flags.
    fn write_opts(&self, out: &mut String) {
        let _ = if self.fstype == "tmpfs" {
            let default = (crate::mm::frame::total() / 2) as u64;
            svelt_abi::uapi::mount::write_tmpfs_opts(out, self.flags, &self.opts, default)
        } else {
            svelt_abi::uapi::mount::write_mount_flags(out, self.flags)
        };
    }
}

/// In mount order, as /proc/mounts lists them.
static MOUNTS: Mutex<Vec<Mount>> = Mutex::new(Vec::new());

/// What mount(2) grafts: a fresh tmpfs or ramfs.
pub struct NewMount {
    pub source: String,
    pub fstype: &'static str,
    pub flags: u64,
    pub opts: svelt_abi::uapi::mount::TmpfsOptions,
    pub limit: pagecache::Limit,
    pub inode_limit: pagecache::Limit,
    pub magic: u64,
    /// Permission bits of its root directory.
    pub mode: u32,
}

fn as_ramdir(node: &Arc<dyn Inode>) -> SysResult<&ramfs::RamDir> {
    node.as_any()
        .downcast_ref::<ramfs::RamDir>()
        .ok_or(Errno::EINVAL)
}

/// Puts a new, empty file system in place of the directory `target` in its parent.
/// EBUSY for "/", EINVAL when the parent is not a ramfs directory (inside /proc or /sys).
pub fn mount_fresh(target: &Resolved, m: NewMount) -> SysResult<()> {
    let sb = pagecache::TmpfsSb::new(m.limit, m.inode_limit, m.magic);
    let dir = ramfs::RamDir::with_sb(m.mode, sb.clone());
    // Its root directory is its first inode.
    dir.attrs().map(|a| a.charge_inode(&sb)).transpose()?;
    let root: Arc<dyn Inode> = dir;
    graft(target, root, m.source, m.fstype, m.flags, m.opts)
}

/// Shows the existing directory `root` (a generated file system's, such as devpts) in place of
/// the directory `target`, with the same rules as `mount_fresh`.
pub fn mount_existing(
    target: &Resolved,
    root: Arc<dyn Inode>,
    source: String,
    fstype: &'static str,
    flags: u64,
) -> SysResult<()> {
    let opts = svelt_abi::uapi::mount::TmpfsOptions::default();
    graft(target, root, source, fstype, flags, opts)
}

fn graft(
    target: &Resolved,
    root: Arc<dyn Inode>,
    source: String,
    fstype: &'static str,
    flags: u64,
    opts: svelt_abi::uapi::mount::TmpfsOptions,
) -> SysResult<()> {
    if target.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let (parent_path, name) = match target.path.rsplit_once('/') {
        Some((_, "")) | None => return Err(Errno::EBUSY),
        Some(("", n)) => ("/", n),
        Some((p, n)) => (p, n),
    };
    let (_, parent) = path_stack(parent_path)?.pop().ok_or(Errno::ENOENT)?;
    let mut mounts = MOUNTS.lock();
    // The target may have gone since the walk.
    if !as_ramdir(&parent)?.replace_if(name, &target.node, root.clone()) {
        return Err(Errno::ENOENT);
    }
    mounts.push(Mount {
        path: target.path.clone(),
        source,
        fstype,
        flags,
        opts,
        parent: parent.clone(),
        name: name.to_string(),
        root,
        hidden: target.node.clone(),
    });
    Ok(())
}

/// Takes the mount whose root is `target` away and puts back the directory it hid; mounts made
/// inside it later go with it. EINVAL when `target` is not the root of a mount.
pub fn umount(target: &Resolved) -> SysResult<()> {
    let mut mounts = MOUNTS.lock();
    let i = mounts
        .iter()
        .rposition(|m| Arc::ptr_eq(&m.root, &target.node))
        .ok_or(Errno::EINVAL)?;
    let m = mounts.remove(i);
    // Unless the mount point was removed or replaced meanwhile.
    if let Ok(dir) = as_ramdir(&m.parent) {
        dir.replace_if(&m.name, &m.root, m.hidden.clone());
    }
    let inside = alloc::format!("{}/", m.path);
    let mut k = i;
    while k < mounts.len() {
        if mounts[k].path.starts_with(&inside) {
            mounts.remove(k);
        } else {
            k += 1;
        }
    }
    Ok(())
}

/// /proc/mounts lines for the tmpfs and ramfs mounts, in mount order.
pub fn mounts_text() -> String {
    use core::fmt::Write;
    let mut s = String::new();
    for m in MOUNTS.lock().iter() {
        let _ = write!(s, "{} {} {} ", escape(&m.source), escape(&m.path), m.fstype);
        m.write_opts(&mut s);
        s.push_str(" 0 0\n");
    }
    s
}

/// Each tmpfs and ramfs mount in mount order: (mount point, source, type, flags, the
/// /proc/mounts option text).
pub fn for_each_mount(mut f: impl FnMut(&str, &str, &str, u64, &str)) {
    for m in MOUNTS.lock().iter() {
        let mut opts = String::new();
        m.write_opts(&mut opts);
        f(&m.path, &m.source, m.fstype, m.flags, &opts);
    }
}

/// White space and backslashes as octal escapes, as /proc/mounts fields have them.
fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            ' ' | '\t' | '\n' | '\\' => out.push_str(&alloc::format!("\\{:03o}", c as u32)),
            _ => out.push(c),
        }
    }
    out
}
