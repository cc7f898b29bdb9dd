//! The file layer's core: what a node in the tree is (`Inode`, its `Kind`), what an open file
//! does (`FileOps`), and the open file description itself (`File`).

#![forbid(unsafe_code)]

use super::{flock, pagecache, Attrs, Caller};
use crate::mm::aspace::MappedFile;
use crate::mm::frame::Page;
use crate::mm::uaccess::UserSlice;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{
    O_ACCMODE, O_APPEND, O_NONBLOCK, O_PATH, O_RDONLY, O_WRONLY, POLLIN, POLLOUT, S_IFCHR, S_IFDIR,
    S_IFLNK, S_IFREG,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    CharDev,
    /// A bound AF_UNIX socket's name (net::unix::SockNode).
    Socket,
    /// A named pipe (pipe::FifoNode).
    Fifo,
}

impl Kind {
    pub fn mode_bits(self) -> u32 {
        match self {
            Kind::Dir => S_IFDIR,
            Kind::File => S_IFREG,
            Kind::Symlink => S_IFLNK,
            Kind::CharDev => S_IFCHR,
            Kind::Socket => svelt_abi::uapi::fs::S_IFSOCK,
            Kind::Fifo => svelt_abi::uapi::fs::S_IFIFO,
        }
    }
    pub fn dirent_type(self) -> u8 {
        match self {
            Kind::Dir => 4,
            Kind::File => 8,
            Kind::Symlink => 10,
            Kind::CharDev => 2,
            Kind::Socket => 12,
            Kind::Fifo => 1,
        }
    }
}

static NEXT_INO: AtomicU64 = AtomicU64::new(2);

pub fn new_ino() -> u64 {
    NEXT_INO.fetch_add(1, Ordering::Relaxed)
}

/// A node in the file tree. Every node is a [`MappedFile`] (see the impl below), so an
/// `Arc<dyn Inode>` becomes a mapping's `Arc<dyn MappedFile>` as it is.
pub trait Inode: MappedFile + Send + Sync + Any {
    fn ino(&self) -> u64;
    fn kind(&self) -> Kind;
    /// The node's changeable attributes, if it keeps them (chmod, chown and utimensat answer
    /// EPERM for nodes that do not).
    fn attrs(&self) -> Option<&Attrs> {
        None
    }
    /// Permission bits (the file-type bits come from `kind`).
    fn perm(&self) -> u32 {
        if let Some(a) = self.attrs() {
            return a.perm();
        }
        match self.kind() {
            Kind::Dir => 0o755,
            _ => 0o644,
        }
    }
    fn size(&self) -> u64 {
        0
    }
    fn rdev(&self) -> (u32, u32) {
        (0, 0)
    }
    fn lookup(&self, _name: &str) -> SysResult<Arc<dyn Inode>> {
        Err(Errno::ENOTDIR)
    }
    /// Directory entries other than "." and "..".
    fn entries(&self) -> SysResult<Vec<(String, u64, Kind)>> {
        Err(Errno::ENOTDIR)
    }
    /// How many of the entries are directories (a directory's link count is 2 plus this).
    fn subdirs(&self) -> usize {
        self.entries()
            .map_or(0, |e| e.iter().filter(|(_, _, k)| *k == Kind::Dir).count())
    }
    /// A new file or directory `name`, owned by `uid`.
    fn create(&self, _name: &str, _kind: Kind, _perm: u32, _uid: u32) -> SysResult<Arc<dyn Inode>> {
        Err(if self.kind() == Kind::Dir {
            Errno::EACCES
        } else {
            Errno::ENOTDIR
        })
    }
    fn link(&self, _name: &str, _node: Arc<dyn Inode>) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    fn unlink(&self, _name: &str, _dir: bool) -> SysResult<()> {
        Err(if self.kind() == Kind::Dir {
            Errno::EACCES
        } else {
            Errno::ENOTDIR
        })
    }
    /// Removes the entry `name` whatever it is (rename's half: a non-empty directory moves
    /// with its contents).
    fn detach(&self, _name: &str) -> SysResult<()> {
        Err(Errno::EPERM)
    }
    fn read_at(&self, _off: u64, _buf: &mut [u8]) -> SysResult<usize> {
        Err(if self.kind() == Kind::Dir {
            Errno::EISDIR
        } else {
            Errno::EINVAL
        })
    }
    fn write_at(&self, _off: u64, _buf: &[u8]) -> SysResult<usize> {
        Err(if self.kind() == Kind::Dir {
            Errno::EISDIR
        } else {
            Errno::EINVAL
        })
    }
    fn truncate(&self, _len: u64) -> SysResult<()> {
        Err(Errno::EINVAL)
    }
    /// The target, as `cur` reads it (/proc/self names the reader).
    fn readlink(&self, _cur: &dyn Caller) -> SysResult<String> {
        Err(Errno::EINVAL)
    }
    /// The frame holding page `index` of the file's data, for a mapping of it: the same frame
    /// `read_at`/`write_at` use, so a shared mapping and the file stay one. EFAULT at or past
    /// the end of the file (the fault becomes SIGBUS), ENOMEM when no page can be had, ENODEV
    /// for nodes that cannot be mapped.
    fn mmap_page(&self, _index: u64) -> SysResult<Page> {
        Err(Errno::ENODEV)
    }
    /// The tmpfs/ramfs instance the node belongs to (for statfs); `None` for generated nodes.
    fn superblock(&self) -> Option<Arc<pagecache::TmpfsSb>> {
        None
    }
    /// File operations for `cur`'s open of this node, when it is not a plain ramfs file.
    fn open(&self, _cur: &dyn Caller, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Ok(None)
    }
    fn as_any(&self) -> &dyn Any;
}

/// What a mapping needs of a file, from the node's own operations (nodes that cannot be mapped
/// answer `cache_page` with ENODEV).
impl<T: Inode> MappedFile for T {
    fn cache_page(&self, index: u64) -> SysResult<Page> {
        self.mmap_page(index)
    }
    fn file_ino(&self) -> u64 {
        self.ino()
    }
    fn file_perm(&self) -> u32 {
        self.perm()
    }
}

/// What an open file does. The operations a task asks for are given the task (`cur`: its
/// signals, its terminal, its credentials).
pub trait FileOps: Send + Sync + Any {
    fn read(&self, cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize>;
    fn write(&self, cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize>;
    fn pread(
        &self,
        _cur: &dyn Caller,
        _file: &File,
        _buf: &mut [u8],
        _off: u64,
    ) -> SysResult<usize> {
        Err(Errno::ESPIPE)
    }
    fn pwrite(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8], _off: u64) -> SysResult<usize> {
        Err(Errno::ESPIPE)
    }
    fn seekable(&self) -> bool {
        false
    }
    /// read(2) straight into the user buffer `dst`, for files that must not lose bytes when the
    /// copy faults (pipes); `None`: read into a kernel buffer, then copy.
    fn read_to_user(
        &self,
        _cur: &dyn Caller,
        _file: &File,
        _dst: UserSlice,
    ) -> Option<SysResult<usize>> {
        None
    }
    /// Whether write(2) hands over each chunk whole or not at all when the user buffer faults
    /// part-way (pipes: EFAULT, nothing written), instead of the bytes before the fault.
    fn whole_chunks(&self) -> bool {
        false
    }
    /// POLLIN/POLLOUT/POLLHUP/POLLERR readiness now, for `cur`.
    fn poll(&self, _cur: &dyn Caller) -> u32 {
        (POLLIN | POLLOUT) as u32
    }
    fn ioctl(&self, _cur: &dyn Caller, _file: &File, _cmd: u32, _arg: usize) -> SysResult<usize> {
        Err(Errno::ENOTTY)
    }
    /// An ioctl that needs its open file as an `Arc` (KVM_RUN runs a guest on the calling
    /// task); the rest take `ioctl`, which this calls by default.
    fn ioctl_as(
        &self,
        file: &Arc<File>,
        cur: &dyn Caller,
        cmd: u32,
        arg: usize,
    ) -> SysResult<usize> {
        self.ioctl(cur, file, cmd, arg)
    }
    /// Lines of its own that /proc/PID/fdinfo/N shows after the common ones (Linux's
    /// show_fdinfo).
    fn fdinfo(&self, _out: &mut dyn core::fmt::Write) {}
    /// What mmap(2) maps for a file with no inode (a vCPU's `kvm_run` page); None: ENODEV.
    fn mmap_file(&self) -> Option<Arc<dyn MappedFile>> {
        None
    }
    /// Whether `mmap_file`'s pages may only be mapped MAP_SHARED (EINVAL otherwise: a
    /// guest_memfd, whose pages are never copied).
    fn mmap_shared_only(&self) -> bool {
        false
    }
    /// Whether mmap of `pages` pages from page `pgoff` with these rights may go on (a vCPU's
    /// file refuses executable mappings, and private ones of its dirty ring).
    fn mmap_check(&self, _pgoff: u64, _pages: u64, _exec: bool, _shared: bool) -> SysResult<()> {
        Ok(())
    }
    /// fstat of a file with no inode that has a size of its own (a guest_memfd); None: the
    /// common answer.
    fn stat(&self) -> Option<svelt_abi::uapi::fs::Stat> {
        None
    }
    /// fallocate(2) on a file with no inode, after vfs_fallocate's generic checks.
    fn fallocate(&self, _mode: i32, _offset: u64, _len: u64) -> SysResult<usize> {
        Err(Errno::ENODEV)
    }
    fn as_any(&self) -> &dyn Any;
}

/// The last reference to an open file description is gone: its flock lock goes with it.
impl Drop for File {
    fn drop(&mut self) {
        flock::release(self);
    }
}

/// An open file description.
pub struct File {
    pub node: Option<Arc<dyn Inode>>,
    pub ops: Arc<dyn FileOps>,
    pub flags: AtomicU32,
    pub pos: Mutex<u64>,
    pub path: String,
}

impl File {
    pub fn new(
        node: Option<Arc<dyn Inode>>,
        ops: Arc<dyn FileOps>,
        flags: u32,
        path: String,
    ) -> Arc<File> {
        Arc::new(File {
            node,
            ops,
            flags: AtomicU32::new(flags),
            pos: Mutex::new(0),
            path,
        })
    }
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }
    pub fn nonblocking(&self) -> bool {
        self.flags() & O_NONBLOCK != 0
    }
    pub fn readable(&self) -> bool {
        self.flags() & O_ACCMODE != O_WRONLY && self.flags() & O_PATH == 0
    }
    pub fn writable(&self) -> bool {
        self.flags() & O_ACCMODE != O_RDONLY && self.flags() & O_PATH == 0
    }
    /// Runs a read or write (`f`) at the file position and moves the position past the bytes
    /// it did.
    pub fn at_pos(&self, f: impl FnOnce(u64) -> SysResult<usize>) -> SysResult<usize> {
        let mut pos = self.pos.lock();
        let n = f(*pos)?;
        *pos += n as u64;
        Ok(n)
    }
}

/// Reads and writes a ramfs-like node at the file offset.
pub struct NodeOps(pub Arc<dyn Inode>);

impl FileOps for NodeOps {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        file.at_pos(|pos| self.0.read_at(pos, buf))
    }
    fn write(&self, _cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        if file.flags() & O_APPEND != 0 {
            *pos = self.0.size();
        }
        let n = self.0.write_at(*pos, buf)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _cur: &dyn Caller, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.0.read_at(off, buf)
    }
    fn pwrite(&self, _cur: &dyn Caller, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        self.0.write_at(off, buf)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Opens a resolved node for `cur`.
pub fn open_node(
    cur: &dyn Caller,
    node: Arc<dyn Inode>,
    flags: u32,
    path: String,
) -> SysResult<Arc<File>> {
    let ops: Arc<dyn FileOps> = match node.open(cur, flags)? {
        Some(ops) => ops,
        None => Arc::new(NodeOps(node.clone())),
    };
    Ok(File::new(Some(node), ops, flags, path))
}
