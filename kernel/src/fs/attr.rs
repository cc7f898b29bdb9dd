//! A node's attributes: what chmod, chown, utimensat and writes change (`Attrs`), and the
//! `struct stat` made from them.

#![forbid(unsafe_code)]

use super::{pagecache, Inode, Kind};
use alloc::sync::Arc;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use spin::Once;
use svelt_abi::uapi::errno::SysResult;
use svelt_abi::uapi::fs::Stat;

/// What chmod, chown and utimensat change, and write updates: a node's owner, permission bits
/// and times (nanoseconds since the epoch). Nodes that keep none (generated ones) report root,
/// their fixed permissions and time 0.
pub struct Attrs {
    /// Directory entries naming the node (st_nlink of a non-directory; 0 once unlinked).
    nlink: AtomicU32,
    perm: AtomicU32,
    uid: AtomicU32,
    gid: AtomicU32,
    atime: AtomicU64,
    mtime: AtomicU64,
    ctime: AtomicU64,
    /// The tmpfs instance the node's inode is charged to, once it has been linked into one
    /// (given back when the node goes).
    charged: Once<Arc<pagecache::TmpfsSb>>,
}

impl Attrs {
    /// A new node's: owned by root (a node a task makes is given its maker's effective uid
    /// with `created_by` before anything can see it), all three times now.
    pub fn new(perm: u32) -> Attrs {
        let now = crate::time::realtime_ns();
        // Svelt keeps no group ids: the group is root's.
        let (uid, gid) = (0, 0);
        Attrs {
            nlink: AtomicU32::new(0),
            perm: AtomicU32::new(perm & 0o7777),
            uid: AtomicU32::new(uid),
            gid: AtomicU32::new(gid),
            atime: AtomicU64::new(now),
            mtime: AtomicU64::new(now),
            ctime: AtomicU64::new(now),
            charged: Once::new(),
        }
    }

    /// The node is made in, or first linked into, a directory of `sb`: it takes one of the
    /// instance's inodes (ENOSPC when none is left). Nothing for a node charged already.
    pub fn charge_inode(&self, sb: &Arc<pagecache::TmpfsSb>) -> SysResult<()> {
        if self.charged.is_completed() {
            return Ok(());
        }
        sb.reserve_inode()?;
        let mut ours = false;
        self.charged.call_once(|| {
            ours = true;
            sb.clone()
        });
        if !ours {
            // A racing link charged it first.
            sb.release_inode();
        }
        Ok(())
    }

    /// A second (third...) name for a linked node takes an inode of its own, as Linux's
    /// shmem_link: Ok(true) when one was taken, ENOSPC when none is left.
    pub fn charge_link(&self) -> SysResult<bool> {
        match self.charged.get() {
            Some(sb) if self.nlink() > 0 => sb.reserve_inode().map(|()| true),
            _ => Ok(false),
        }
    }

    /// One of several names of a non-directory goes (unlink, a rename's replaced target):
    /// the inode its link took comes back. The last name keeps the node's own.
    pub fn release_link(&self, kind: Kind) {
        if kind != Kind::Dir && self.nlink() > 1 {
            if let Some(sb) = self.charged.get() {
                sb.release_inode();
            }
        }
    }

    /// Gives back what `charge_link` took (the link then failed).
    pub fn uncharge_link(&self) {
        if let Some(sb) = self.charged.get() {
            sb.release_inode();
        }
    }
    pub fn perm(&self) -> u32 {
        self.perm.load(Ordering::Relaxed)
    }
    pub fn nlink(&self) -> u32 {
        self.nlink.load(Ordering::Relaxed)
    }
    /// A directory entry now names the node (creation, link, rename's new name): ctime too.
    pub fn linked(&self) {
        self.nlink.fetch_add(1, Ordering::Relaxed);
        self.changed();
    }
    /// A directory entry naming the node went (unlink, rename's old name).
    pub fn unlinked(&self) {
        let _ = self
            .nlink
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.changed();
    }
    pub fn owner(&self) -> (u32, u32) {
        (
            self.uid.load(Ordering::Relaxed),
            self.gid.load(Ordering::Relaxed),
        )
    }
    /// (atime, mtime, ctime).
    pub fn times(&self) -> [u64; 3] {
        [&self.atime, &self.mtime, &self.ctime].map(|t| t.load(Ordering::Relaxed))
    }
    pub fn set_perm(&self, perm: u32) {
        self.perm.store(perm & 0o7777, Ordering::Relaxed);
        self.changed();
    }
    /// A node a task made, before it is linked anywhere: its owner is `euid`, the maker's
    /// effective uid (part of its making: no ctime change).
    pub fn created_by(&self, euid: u32) {
        self.uid.store(euid, Ordering::Relaxed);
    }
    pub fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) {
        if let Some(u) = uid {
            self.uid.store(u, Ordering::Relaxed);
        }
        if let Some(g) = gid {
            self.gid.store(g, Ordering::Relaxed);
        }
        self.changed();
    }
    /// utimensat: `None` leaves a time as it is.
    pub fn set_times(&self, atime: Option<u64>, mtime: Option<u64>) {
        if let Some(a) = atime {
            self.atime.store(a, Ordering::Relaxed);
        }
        if let Some(m) = mtime {
            self.mtime.store(m, Ordering::Relaxed);
        }
        self.changed();
    }
    /// The contents changed (write, truncate, a directory's entries): mtime and ctime.
    pub fn modified(&self) {
        let now = crate::time::realtime_ns();
        self.mtime.store(now, Ordering::Relaxed);
        self.ctime.store(now, Ordering::Relaxed);
    }
    /// The attributes changed: ctime.
    pub fn changed(&self) {
        self.ctime
            .store(crate::time::realtime_ns(), Ordering::Relaxed);
    }
}

/// The node is gone: its inode goes back to its tmpfs.
impl Drop for Attrs {
    fn drop(&mut self) {
        if let Some(sb) = self.charged.get() {
            sb.release_inode();
        }
    }
}

/// `node`, made for `cur` and not linked anywhere yet, owned by its effective uid.
pub fn made_by<T: Inode + ?Sized>(cur: &dyn super::Caller, node: Arc<T>) -> Arc<T> {
    if let Some(a) = node.attrs() {
        a.created_by(cur.euid());
    }
    node
}

/// A directory's link count is 2 plus its subdirectories (their ".."); another node's is the
/// entries naming it (nodes that keep no count: 1).
fn nlink_of(node: &dyn Inode) -> u32 {
    if node.kind() == Kind::Dir {
        return 2 + node.subdirs() as u32;
    }
    node.attrs().map_or(1, Attrs::nlink)
}

/// Fills a `struct stat` for a node.
pub fn stat_of(node: &dyn Inode) -> Stat {
    let (maj, min) = node.rdev();
    let size = node.size();
    let (uid, gid) = node.attrs().map_or((0, 0), Attrs::owner);
    let [a, m, c] = node.attrs().map_or([0; 3], Attrs::times);
    let secs = |t: u64| (t / 1_000_000_000) as i64;
    let nsec = |t: u64| t % 1_000_000_000;
    Stat {
        st_uid: uid,
        st_gid: gid,
        st_atime: secs(a),
        st_atime_nsec: nsec(a),
        st_mtime: secs(m),
        st_mtime_nsec: nsec(m),
        st_ctime: secs(c),
        st_ctime_nsec: nsec(c),
        st_dev: node
            .superblock()
            .map_or(pagecache::GENERATED_DEV, |sb| sb.dev),
        st_ino: node.ino(),
        st_mode: node.kind().mode_bits() | node.perm(),
        st_nlink: nlink_of(node),
        st_rdev: ((maj as u64) << 8) | (min as u64 & 0xff) | ((min as u64 & !0xff) << 12),
        st_size: size as i64,
        st_blksize: 4096,
        st_blocks: size.div_ceil(512) as i64,
        ..Default::default()
    }
}
