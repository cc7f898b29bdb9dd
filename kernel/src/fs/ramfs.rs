//! In-memory files and directories: the root file system and tmpfs/ramfs mounts. Each node
//! belongs to one instance (`TmpfsSb`) that its files' pages are charged to; what a directory
//! creates belongs to the directory's instance.

#![forbid(unsafe_code)]

use super::pagecache::{PageCache, TmpfsSb};
use super::{new_ino, Attrs, Caller, Inode, Kind};
use crate::mm::frame::Page;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};

pub struct RamDir {
    ino: u64,
    attrs: Attrs,
    entries: Mutex<BTreeMap<String, Arc<dyn Inode>>>,
    sb: Arc<TmpfsSb>,
}

impl RamDir {
    /// An empty directory on the root file system.
    pub fn new(perm: u32) -> Arc<RamDir> {
        RamDir::with_sb(perm, TmpfsSb::root())
    }

    /// An empty directory of the file system `sb` (the root of a new mount, or a subdirectory).
    pub fn with_sb(perm: u32, sb: Arc<TmpfsSb>) -> Arc<RamDir> {
        Arc::new(RamDir {
            ino: new_ino(),
            attrs: Attrs::new(perm),
            entries: Mutex::new(BTreeMap::new()),
            sb,
        })
    }

    /// Puts `node` at `name`, replacing any entry (mount points).
    pub fn replace(&self, name: &str, node: Arc<dyn Inode>) -> Option<Arc<dyn Inode>> {
        self.entries.lock().insert(name.to_string(), node)
    }

    /// Puts `node` at `name` as a link (the initramfs unpacker): replaces any entry there,
    /// counting links as link and unlink do.
    pub fn put(&self, name: &str, node: Arc<dyn Inode>) {
        if let Some(a) = node.attrs() {
            // The archive is unpacked whole, inode limit or not (a tmpfs of half of RAM).
            if a.charge_inode(&self.sb).is_ok() {
                let _ = a.charge_link();
            }
            a.linked();
        }
        if let Some(old) = self.replace(name, node) {
            if let Some(a) = old.attrs() {
                a.release_link(old.kind());
                a.unlinked();
            }
        }
    }

    /// Puts `node` at `name` only if `name` holds `expected` now (mount and umount: the entry
    /// may have been removed or replaced since it was looked up).
    pub fn replace_if(&self, name: &str, expected: &Arc<dyn Inode>, node: Arc<dyn Inode>) -> bool {
        match self.entries.lock().get_mut(name) {
            Some(e) if Arc::ptr_eq(e, expected) => {
                *e = node;
                true
            }
            _ => false,
        }
    }
}

impl Inode for RamDir {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Dir
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn lookup(&self, name: &str) -> SysResult<Arc<dyn Inode>> {
        self.entries.lock().get(name).cloned().ok_or(Errno::ENOENT)
    }
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        // As many as a user made: the list must not stop the kernel (ENOMEM instead).
        crate::mm::try_collect(
            self.entries
                .lock()
                .iter()
                .map(|(n, i)| (n.clone(), i.ino(), i.kind())),
        )
    }
    /// Counted in place: stat of a directory must not copy every name.
    fn subdirs(&self) -> usize {
        self.entries
            .lock()
            .values()
            .filter(|i| i.kind() == Kind::Dir)
            .count()
    }
    fn create(&self, name: &str, kind: Kind, perm: u32, uid: u32) -> SysResult<Arc<dyn Inode>> {
        // A new node is kernel memory a program asked for: not from the kernel's reserve.
        if !crate::mm::frame::user_can_alloc(1) {
            return Err(Errno::ENOSPC);
        }
        let mut e = self.entries.lock();
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let node: Arc<dyn Inode> = match kind {
            Kind::Dir => RamDir::with_sb(perm, self.sb.clone()),
            Kind::File => RamFile::with_sb(perm, self.sb.clone()),
            _ => return Err(Errno::EPERM),
        };
        if let Some(a) = node.attrs() {
            a.charge_inode(&self.sb)?;
            a.created_by(uid);
            a.linked();
        }
        e.insert(name.to_string(), node.clone());
        self.attrs.modified();
        Ok(node)
    }
    fn link(&self, name: &str, node: Arc<dyn Inode>) -> SysResult<()> {
        let mut e = self.entries.lock();
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        // A new node (symlink, device, FIFO, socket) takes its inode here; a further name
        // for a linked one is charged by linkat.
        if let Some(a) = node.attrs() {
            a.charge_inode(&self.sb)?;
            a.linked();
        }
        e.insert(name.to_string(), node);
        self.attrs.modified();
        Ok(())
    }
    fn unlink(&self, name: &str, dir: bool) -> SysResult<()> {
        let mut e = self.entries.lock();
        let node = e.get(name).ok_or(Errno::ENOENT)?;
        match (dir, node.kind() == Kind::Dir) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            (true, true) if !node.entries()?.is_empty() => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        if let Some(old) = e.remove(name) {
            if let Some(a) = old.attrs() {
                a.release_link(old.kind());
                a.unlinked();
            }
        }
        self.attrs.modified();
        Ok(())
    }
    fn detach(&self, name: &str) -> SysResult<()> {
        let old = self.entries.lock().remove(name).ok_or(Errno::ENOENT)?;
        if let Some(a) = old.attrs() {
            a.unlinked();
        }
        self.attrs.modified();
        Ok(())
    }
    fn superblock(&self) -> Option<Arc<TmpfsSb>> {
        Some(self.sb.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct RamFile {
    ino: u64,
    attrs: Attrs,
    data: Mutex<PageCache>,
}

impl RamFile {
    /// An empty file on the root file system.
    pub fn new(perm: u32) -> Arc<RamFile> {
        RamFile::with_sb(perm, TmpfsSb::root())
    }

    /// An empty file whose pages are charged to `sb`.
    pub fn with_sb(perm: u32, sb: Arc<TmpfsSb>) -> Arc<RamFile> {
        Arc::new(RamFile {
            ino: new_ino(),
            attrs: Attrs::new(perm),
            data: Mutex::new(PageCache::with_sb(sb)),
        })
    }
}

impl Inode for RamFile {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::File
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn size(&self) -> u64 {
        self.data.lock().size()
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> SysResult<usize> {
        Ok(self.data.lock().read(off, buf))
    }
    fn write_at(&self, off: u64, buf: &[u8]) -> SysResult<usize> {
        let n = self.data.lock().write(off, buf)?;
        self.attrs.modified();
        Ok(n)
    }
    fn truncate(&self, len: u64) -> SysResult<()> {
        self.attrs.modified();
        let shrank = {
            let mut d = self.data.lock();
            let old = d.size();
            d.truncate(len)?;
            len < old
        };
        if shrank {
            // Mappings lose the pages past the new end (the cache lock is not held here: the
            // fault path takes an address space's lock, then this file's).
            crate::mm::aspace::file_truncated(crate::mm::aspace::file_key(self), len);
        }
        Ok(())
    }
    fn mmap_page(&self, index: u64) -> SysResult<Page> {
        self.data.lock().mmap_page(index)
    }
    fn superblock(&self) -> Option<Arc<TmpfsSb>> {
        Some(self.data.lock().sb().clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct RamSymlink {
    ino: u64,
    attrs: Attrs,
    target: String,
}

impl RamSymlink {
    pub fn new(target: String) -> Arc<RamSymlink> {
        Arc::new(RamSymlink {
            ino: new_ino(),
            attrs: Attrs::new(0o777),
            target,
        })
    }
}

impl Inode for RamSymlink {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Symlink
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn size(&self) -> u64 {
        self.target.len() as u64
    }
    fn readlink(&self, _cur: &dyn Caller) -> SysResult<String> {
        Ok(self.target.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A character device node (mknod, or from the initramfs).
pub struct DevNode {
    ino: u64,
    attrs: Attrs,
    major: u32,
    minor: u32,
}

impl DevNode {
    pub fn new(perm: u32, major: u32, minor: u32) -> Arc<DevNode> {
        Arc::new(DevNode {
            ino: new_ino(),
            attrs: Attrs::new(perm),
            major,
            minor,
        })
    }
}

impl Inode for DevNode {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::CharDev
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn rdev(&self) -> (u32, u32) {
        (self.major, self.minor)
    }
    fn open(&self, cur: &dyn Caller, flags: u32) -> SysResult<Option<Arc<dyn super::FileOps>>> {
        super::dev::open(cur, self.major, self.minor, flags).map(Some)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
