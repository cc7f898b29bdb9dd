//! Files. The root is an in-memory tree (ramfs) unpacked from the initramfs, writable like
//! Linux's rootfs; /proc and /sys are generated, /dev holds character devices. Open files are
//! `File`s (an `Inode` plus `FileOps` plus offset and flags) in per-task, clone-shareable
//! `FdTable`s.

pub mod dev;
pub mod epoll;
pub mod eventfd;
pub mod flock;
pub mod initramfs;
pub mod pagecache;
pub mod pidfd;
pub mod pipe;
pub mod proc;
pub mod ramfs;
pub mod sys;
pub mod tty;

use crate::mm::aspace::MappedFile;
use crate::mm::frame::Page;
use crate::mm::uaccess::UserSlice;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use spin::{Mutex, Once};
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::fs::{
    Stat, AT_FDCWD, O_ACCMODE, O_APPEND, O_NONBLOCK, O_PATH, O_RDONLY, O_WRONLY, POLLIN, POLLOUT,
    S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    CharDev,
    /// A bound AF_UNIX socket's name (net::unix::SockNode).
    Socket,
}

impl Kind {
    pub fn mode_bits(self) -> u32 {
        match self {
            Kind::Dir => S_IFDIR,
            Kind::File => S_IFREG,
            Kind::Symlink => S_IFLNK,
            Kind::CharDev => S_IFCHR,
            Kind::Socket => svelt_abi::fs::S_IFSOCK,
        }
    }
    pub fn dirent_type(self) -> u8 {
        match self {
            Kind::Dir => 4,
            Kind::File => 8,
            Kind::Symlink => 10,
            Kind::CharDev => 2,
            Kind::Socket => 12,
        }
    }
}

static NEXT_INO: AtomicU64 = AtomicU64::new(2);

pub fn new_ino() -> u64 {
    NEXT_INO.fetch_add(1, Ordering::Relaxed)
}

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
}

impl Attrs {
    /// A new node's: owned by the caller's effective uid (root for the kernel's own), all
    /// three times now.
    pub fn new(perm: u32) -> Attrs {
        let now = crate::time::realtime_ns();
        // Svelt keeps no group ids: the group is root's.
        let (uid, gid) = crate::task::sched::try_current()
            .map(|t| (t.process().euid.load(Ordering::Relaxed), 0))
            .unwrap_or((0, 0));
        Attrs {
            nlink: AtomicU32::new(0),
            perm: AtomicU32::new(perm & 0o7777),
            uid: AtomicU32::new(uid),
            gid: AtomicU32::new(gid),
            atime: AtomicU64::new(now),
            mtime: AtomicU64::new(now),
            ctime: AtomicU64::new(now),
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
    fn create(&self, _name: &str, _kind: Kind, _perm: u32) -> SysResult<Arc<dyn Inode>> {
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
    fn readlink(&self) -> SysResult<String> {
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
    /// File operations for an open of this node, when it is not a plain ramfs file.
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
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

/// What an open file does.
pub trait FileOps: Send + Sync + Any {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize>;
    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize>;
    fn pread(&self, _file: &File, _buf: &mut [u8], _off: u64) -> SysResult<usize> {
        Err(Errno::ESPIPE)
    }
    fn pwrite(&self, _file: &File, _buf: &[u8], _off: u64) -> SysResult<usize> {
        Err(Errno::ESPIPE)
    }
    fn seekable(&self) -> bool {
        false
    }
    /// read(2) straight into the user buffer `dst`, for files that must not lose bytes when the
    /// copy faults (pipes); `None`: read into a kernel buffer, then copy.
    fn read_to_user(&self, _file: &File, _dst: UserSlice) -> Option<SysResult<usize>> {
        None
    }
    /// Whether write(2) hands over each chunk whole or not at all when the user buffer faults
    /// part-way (pipes: EFAULT, nothing written), instead of the bytes before the fault.
    fn whole_chunks(&self) -> bool {
        false
    }
    /// POLLIN/POLLOUT/POLLHUP/POLLERR readiness now.
    fn poll(&self) -> u32 {
        (POLLIN | POLLOUT) as u32
    }
    fn ioctl(&self, _file: &File, _cmd: u32, _arg: usize) -> SysResult<usize> {
        Err(Errno::ENOTTY)
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
}

/// Reads and writes a ramfs-like node at the file offset.
pub struct NodeOps(pub Arc<dyn Inode>);

impl FileOps for NodeOps {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        let n = self.0.read_at(*pos, buf)?;
        *pos += n as u64;
        Ok(n)
    }
    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
        let mut pos = file.pos.lock();
        if file.flags() & O_APPEND != 0 {
            *pos = self.0.size();
        }
        let n = self.0.write_at(*pos, buf)?;
        *pos += n as u64;
        Ok(n)
    }
    fn pread(&self, _file: &File, buf: &mut [u8], off: u64) -> SysResult<usize> {
        self.0.read_at(off, buf)
    }
    fn pwrite(&self, _file: &File, buf: &[u8], off: u64) -> SysResult<usize> {
        self.0.write_at(off, buf)
    }
    fn seekable(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---- file descriptor tables -----------------------------------------------------------------

/// fs.nr_open: no descriptor table grows beyond this (RLIMIT_NOFILE's ceiling).
pub const NR_OPEN: usize = 1 << 20;

/// RLIMIT_NOFILE of the current process: descriptors it may have are below this.
pub fn nofile_limit() -> usize {
    let l = crate::task::current()
        .process()
        .rlimit(svelt_abi::sys::RLIMIT_NOFILE);
    (l.min(NR_OPEN as u64)) as usize
}

#[derive(Clone)]
pub struct FdEntry {
    pub file: Arc<File>,
    pub cloexec: bool,
}

#[derive(Clone, Default)]
pub struct FdTable {
    fds: Vec<Option<FdEntry>>,
}

impl FdTable {
    pub fn new() -> FdTable {
        FdTable { fds: Vec::new() }
    }

    pub fn get(&self, fd: i32) -> SysResult<Arc<File>> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get(i))
            .and_then(|e| e.as_ref())
            .map(|e| e.file.clone())
            .ok_or(Errno::EBADF)
    }

    pub fn entry_mut(&mut self, fd: i32) -> SysResult<&mut FdEntry> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get_mut(i))
            .and_then(|e| e.as_mut())
            .ok_or(Errno::EBADF)
    }

    /// Installs at the lowest free descriptor >= `min`.
    pub fn install_from(&mut self, min: usize, file: Arc<File>, cloexec: bool) -> SysResult<i32> {
        let idx = (min..nofile_limit())
            .find(|&i| self.fds.get(i).is_none_or(Option::is_none))
            .ok_or(Errno::EMFILE)?;
        if idx >= self.fds.len() {
            self.fds
                .try_reserve(idx + 1 - self.fds.len())
                .map_err(|_| Errno::ENOMEM)?;
            self.fds.resize(idx + 1, None);
        }
        self.fds[idx] = Some(FdEntry { file, cloexec });
        Ok(idx as i32)
    }

    /// The open descriptors in order (/proc/PID/fd).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &FdEntry)> {
        self.fds
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    /// The size Linux's table would have for these descriptors (FDSize): 64 slots, doubled
    /// as needed.
    pub fn capacity(&self) -> usize {
        let used = self
            .fds
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1);
        used.max(64).next_power_of_two()
    }

    pub fn install(&mut self, file: Arc<File>, cloexec: bool) -> SysResult<i32> {
        self.install_from(0, file, cloexec)
    }

    /// Puts `file` at `fd`, returning what was there.
    pub fn install_at(
        &mut self,
        fd: usize,
        file: Arc<File>,
        cloexec: bool,
    ) -> SysResult<Option<FdEntry>> {
        if fd >= nofile_limit() {
            return Err(Errno::EBADF);
        }
        if fd >= self.fds.len() {
            self.fds
                .try_reserve(fd + 1 - self.fds.len())
                .map_err(|_| Errno::ENOMEM)?;
            self.fds.resize(fd + 1, None);
        }
        Ok(self.fds[fd].replace(FdEntry { file, cloexec }))
    }

    pub fn close(&mut self, fd: i32) -> SysResult<FdEntry> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get_mut(i))
            .and_then(Option::take)
            .ok_or(Errno::EBADF)
    }

    pub fn close_on_exec(&mut self) {
        for e in self.fds.iter_mut() {
            if e.as_ref().is_some_and(|e| e.cloexec) {
                *e = None;
            }
        }
    }
}

// ---- cwd and path resolution ----------------------------------------------------------------

#[derive(Clone)]
pub struct FsContext {
    /// Canonical absolute path of the cwd.
    pub cwd: String,
    pub cwd_node: Arc<dyn Inode>,
    pub umask: u32,
}

static ROOT: Once<Arc<dyn Inode>> = Once::new();

pub fn root() -> Arc<dyn Inode> {
    ROOT.get().expect("root file system").clone()
}

impl FsContext {
    pub fn root() -> FsContext {
        FsContext {
            cwd: "/".to_string(),
            cwd_node: root_or_empty(),
            umask: 0o022,
        }
    }
}

fn root_or_empty() -> Arc<dyn Inode> {
    ROOT.get()
        .cloned()
        .unwrap_or_else(|| ramfs::RamDir::new(0o755))
}

/// A resolved path: the node and its canonical absolute path.
pub struct Resolved {
    pub node: Arc<dyn Inode>,
    pub path: String,
}

/// The parent directory of a path's last component, and that component.
pub struct ResolvedParent {
    pub dir: Arc<dyn Inode>,
    pub dir_path: String,
    pub name: String,
    /// The path ended with '/'.
    pub trailing_slash: bool,
}

const MAX_SYMLINKS: usize = 40;

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        alloc::format!("/{name}")
    } else {
        alloc::format!("{dir}/{name}")
    }
}

/// Walks `path` from `start` (a directory stack of (path, node)), following symlinks in the
/// middle, and in the last component if `follow`.
fn walk(
    mut stack: Vec<(String, Arc<dyn Inode>)>,
    path: &str,
    follow: bool,
    depth: &mut usize,
) -> SysResult<Resolved> {
    if path.starts_with('/') {
        stack.truncate(1);
    }
    let comps = crate::mm::try_collect(path.split('/').filter(|c| !c.is_empty()))?;
    for (i, comp) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        let (cur_path, cur) = stack.last().unwrap().clone();
        if cur.kind() != Kind::Dir {
            return Err(Errno::ENOTDIR);
        }
        match *comp {
            "." => continue,
            ".." => {
                if stack.len() > 1 {
                    stack.pop();
                }
                continue;
            }
            _ => {}
        }
        if comp.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        let next = cur.lookup(comp)?;
        if next.kind() == Kind::Symlink && (!last || follow) {
            *depth += 1;
            if *depth > MAX_SYMLINKS {
                return Err(Errno::ELOOP);
            }
            let target = next.readlink()?;
            let r = walk(stack.clone(), &target, true, depth)?;
            stack = path_stack(&r.path)?;
            continue;
        }
        stack.push((join(&cur_path, comp), next));
    }
    let (path, node) = stack.pop().unwrap();
    if path.len() > 4095 {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(Resolved { node, path })
}

/// The directory stack for a canonical absolute path.
fn path_stack(path: &str) -> SysResult<Vec<(String, Arc<dyn Inode>)>> {
    let mut stack: Vec<(String, Arc<dyn Inode>)> = alloc::vec![("/".to_string(), root())];
    for comp in path.split('/').filter(|c| !c.is_empty()) {
        let (p, n) = stack.last().unwrap().clone();
        let next = n.lookup(comp)?;
        stack.push((join(&p, comp), next));
    }
    Ok(stack)
}

/// Where a relative path starts: the cwd or an open directory.
fn start_stack(dirfd: i32, path: &str) -> SysResult<Vec<(String, Arc<dyn Inode>)>> {
    if path.starts_with('/') {
        return Ok(alloc::vec![("/".to_string(), root())]);
    }
    let base = if dirfd == AT_FDCWD {
        crate::task::current().fs().lock().cwd.clone()
    } else {
        let file = crate::task::current().files().lock().get(dirfd)?;
        match &file.node {
            Some(n) if n.kind() == Kind::Dir => file.path.clone(),
            Some(_) => return Err(Errno::ENOTDIR),
            None => return Err(Errno::ENOTDIR),
        }
    };
    path_stack(&base)
}

/// Resolves `path` relative to `dirfd`.
pub fn resolve(dirfd: i32, path: &str, follow: bool) -> SysResult<Resolved> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let stack = start_stack(dirfd, path)?;
    let mut depth = 0;
    // A trailing slash asks for a directory, so a final symlink is followed even by the
    // no-follow calls (lstat("link/") stats the directory, as on Linux).
    let r = walk(stack, path, follow || path.ends_with('/'), &mut depth)?;
    if path.ends_with('/') && r.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    Ok(r)
}

/// Resolves all but the last component of `path`.
pub fn resolve_parent(dirfd: i32, path: &str) -> SysResult<ResolvedParent> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let trailing_slash = path.ends_with('/') && path.len() > 1;
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        // "/" itself.
        return Ok(ResolvedParent {
            dir: root(),
            dir_path: "/".to_string(),
            name: ".".to_string(),
            trailing_slash,
        });
    }
    let (dir_part, name) = match trimmed.rfind('/') {
        Some(i) => (&trimmed[..=i], &trimmed[i + 1..]),
        None => ("", trimmed),
    };
    if name.len() > 255 {
        return Err(Errno::ENAMETOOLONG);
    }
    let stack = start_stack(dirfd, path)?;
    let mut depth = 0;
    let dir = if dir_part.is_empty() {
        let (p, n) = stack.last().unwrap().clone();
        Resolved { node: n, path: p }
    } else {
        walk(stack, dir_part, true, &mut depth)?
    };
    if dir.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    Ok(ResolvedParent {
        dir: dir.node,
        dir_path: dir.path,
        name: name.to_string(),
        trailing_slash,
    })
}

/// Opens a resolved node.
pub fn open_node(node: Arc<dyn Inode>, flags: u32, path: String) -> SysResult<Arc<File>> {
    let ops: Arc<dyn FileOps> = match node.open(flags)? {
        Some(ops) => ops,
        None => Arc::new(NodeOps(node.clone())),
    };
    Ok(File::new(Some(node), ops, flags, path))
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

/// Sets up the root: the initramfs (if any) unpacked into a ramfs, with /proc, /sys and /dev.
pub fn init(initrd: Option<&[u8]>) {
    let root = ramfs::RamDir::new(0o755);
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
            let _ = root.create(d, Kind::Dir, 0o755);
        }
    }
    let _ = root.replace("proc", proc::ProcRoot::new());
    let _ = root.replace("sys", sys::sys_root());
    if let Ok(devdir) = root.lookup("dev") {
        dev::populate(&*devdir);
    }
    ROOT.call_once(|| root);
}

// ---- tmpfs and ramfs mounts -----------------------------------------------------------------

/// A file system grafted over a directory of a ramfs tree; `hidden` goes back at umount.
struct Mount {
    /// Canonical path of the mount point.
    path: String,
    source: String,
    fstype: &'static str,
    flags: u64,
    opts: svelt_abi::mount::TmpfsOptions,
    /// The ramfs directory holding the mount point, and its name there.
    parent: Arc<dyn Inode>,
    name: String,
    root: Arc<dyn Inode>,
    hidden: Arc<dyn Inode>,
}

/// In mount order, as /proc/mounts lists them.
static MOUNTS: Mutex<Vec<Mount>> = Mutex::new(Vec::new());

/// What mount(2) grafts: a fresh tmpfs or ramfs.
pub struct NewMount {
    pub source: String,
    pub fstype: &'static str,
    pub flags: u64,
    pub opts: svelt_abi::mount::TmpfsOptions,
    pub limit: pagecache::Limit,
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
    if target.node.kind() != Kind::Dir {
        return Err(Errno::ENOTDIR);
    }
    let (parent_path, name) = match target.path.rsplit_once('/') {
        Some((_, "")) | None => return Err(Errno::EBUSY),
        Some(("", n)) => ("/", n),
        Some((p, n)) => (p, n),
    };
    let (_, parent) = path_stack(parent_path)?.pop().ok_or(Errno::ENOENT)?;
    let root: Arc<dyn Inode> =
        ramfs::RamDir::with_sb(m.mode, pagecache::TmpfsSb::new(m.limit, m.magic));
    let mut mounts = MOUNTS.lock();
    // The target may have gone since the walk.
    if !as_ramdir(&parent)?.replace_if(name, &target.node, root.clone()) {
        return Err(Errno::ENOENT);
    }
    mounts.push(Mount {
        path: target.path.clone(),
        source: m.source,
        fstype: m.fstype,
        flags: m.flags,
        opts: m.opts,
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
        let _ = if m.fstype == "tmpfs" {
            let default = (crate::mm::frame::total() / 2) as u64;
            svelt_abi::mount::write_tmpfs_opts(&mut s, m.flags, &m.opts, default)
        } else {
            svelt_abi::mount::write_mount_flags(&mut s, m.flags)
        };
        s.push_str(" 0 0\n");
    }
    s
}

/// Each tmpfs and ramfs mount in mount order: (mount point, source, type, flags, the
/// /proc/mounts option text).
pub fn for_each_mount(mut f: impl FnMut(&str, &str, &str, u64, &str)) {
    for m in MOUNTS.lock().iter() {
        let mut opts = String::new();
        let _ = if m.fstype == "tmpfs" {
            let default = (crate::mm::frame::total() / 2) as u64;
            svelt_abi::mount::write_tmpfs_opts(&mut opts, m.flags, &m.opts, default)
        } else {
            svelt_abi::mount::write_mount_flags(&mut opts, m.flags)
        };
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
