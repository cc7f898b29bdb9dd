//! Files. The root is an in-memory tree (ramfs) unpacked from the initramfs, writable like
//! Linux's rootfs; /proc and /sys are generated, /dev holds character devices. Open files are
//! `File`s (an `Inode` plus `FileOps` plus offset and flags) in per-task, clone-shareable
//! `FdTable`s.
//!
//! The layer itself: `vfs` (nodes, open files), `attr` (owner, mode, times, stat), `fdtable`,
//! `namei` (the root, the cwd, path walks) and `mount` (tmpfs and ramfs mounts); its items are
//! re-exported here, as `crate::fs::X`.

#![forbid(unsafe_code)]

pub mod dev;
pub mod devpts;
pub mod epoll;
pub mod eventfd;
pub mod flock;
pub mod generic;
pub mod initramfs;
pub mod pagecache;
pub mod pipe;
pub mod ramfs;
pub mod sys;
pub mod timerfd;

mod attr;
mod caller;
mod fdtable;
mod mount;
mod namei;
mod vfs;

pub use attr::{made_by, stat_of, Attrs};
pub use caller::Caller;
pub use fdtable::{nofile_limit, FdTable, NR_OPEN};
pub use mount::{for_each_mount, mount_existing, mount_fresh, mounts_text, umount, NewMount};
pub use namei::{
    may_search, relative_to_root, resolve, resolve_parent, FsContext, Resolved, ResolvedParent,
};
pub use vfs::{new_ino, open_node, File, FileOps, Inode, Kind, NodeOps};

/// Sets up the root: the initramfs (if any) unpacked into a ramfs, with /proc, /sys and /dev.
pub fn init(initrd: Option<&[u8]>, proc_root: alloc::sync::Arc<dyn Inode>) {
    let root = ramfs::RamDir::new(0o755);
    if let Some(a) = root.attrs() {
        let _ = a.charge_inode(&pagecache::TmpfsSb::root());
    }
    if let Some(archive) = initrd {
        let t0 = crate::time::now_ns();
        let mut st = initramfs::Stats::default();
        if let Err(e) = initramfs::unpack(archive, &root, &mut st) {
            log::error!("initramfs: {e}; keeping what was unpacked before it");
        }
        if let Some((path, e)) = &st.write_error {
            log::error!("initramfs: {path} and later files cut short: {e:?}");
        }
        log::info!(
            "initramfs: {} entries, {} KiB of file data from {} KiB of cpio ({} KiB archive) in {} ms",
            st.entries,
            st.file_bytes >> 10,
            st.cpio_bytes >> 10,
            archive.len() >> 10,
            (crate::time::now_ns() - t0) / 1_000_000
        );
    }
    for d in ["proc", "sys", "dev", "tmp"] {
        if root.lookup(d).is_err() {
            let _ = root.create(d, Kind::Dir, 0o755, 0);
        }
    }
    let _ = root.replace("proc", proc_root);
    let _ = root.replace("sys", sys::sys_root());
    if let Ok(devdir) = root.lookup("dev") {
        dev::populate(&*devdir);
    }
    namei::ROOT.call_once(|| root);
}
