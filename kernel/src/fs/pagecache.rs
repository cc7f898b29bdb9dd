//! A file's data as page frames, and the size limit of the tmpfs it is on.
//!
//! A `PageCache` holds the pages of one file by page index plus the file's size; a missing page
//! is a hole (reads as zeros, costs nothing). The bytes of the last page beyond the size are
//! always zero, so extending a file (truncate up, a write past the end) never shows old data.
//!
//! Every page counts against the limit of its file system instance (`TmpfsSb`): half of RAM
//! for the root, as Linux's rootfs/tmpfs has it, or a mount's `size=`; a page that would exceed
//! it, or that the frame allocator cannot give, is ENOSPC. The same frames back `mmap` of the
//! file (`Inode::mmap_page`), so a shared mapping and read()/write() see each other's bytes.
//! The frames' bytes are reached only through `Page`'s checked copies (`mm::frame_io`).

#![forbid(unsafe_code)]

use crate::mm::frame::{self, Page, CACHE_PAGES};
use alloc::collections::btree_map::{BTreeMap, Entry};
use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Once;
use svelt_abi::uapi::errno::{Errno, SysResult};

pub const PAGE: u64 = 4096;
/// Largest file size (Linux's MAX_LFS_FILESIZE on 64-bit).
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// How big a file system instance may grow (in pages, or in inodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Half of RAM's pages as it is now (the root, and a tmpfs mounted without `size=` or
    /// `nr_inodes=`).
    HalfOfRam,
    Pages(usize),
    /// ramfs, or tmpfs with `size=0` or `nr_inodes=0`.
    None,
}

impl Limit {
    fn get(self) -> Option<usize> {
        match self {
            // Computed each time: frames handed back after boot (the archive's) count too.
            Limit::HalfOfRam => Some(frame::total() / 2),
            Limit::Pages(n) => Some(n),
            Limit::None => None,
        }
    }
}

/// One tmpfs (or ramfs) instance: every page of its files' data is charged here, and every
/// inode (`Attrs::charge_inode`) against its `nr_inodes`.
pub struct TmpfsSb {
    limit: Limit,
    used: AtomicUsize,
    /// The inode limit (`nr_inodes=`; half of RAM's pages by default, as Linux's
    /// shmem_default_max_inodes; none for ramfs).
    inode_limit: Limit,
    inodes: AtomicUsize,
    /// statfs's f_type.
    pub magic: u64,
    /// st_dev of its nodes: an anonymous device (major 0) of its own, as Linux gives each
    /// tmpfs and ramfs instance.
    pub dev: u64,
}

/// The next anonymous device minor (1: the root file system; generated /proc and /sys nodes
/// report [`GENERATED_DEV`]).
static NEXT_DEV: AtomicUsize = AtomicUsize::new(1);
/// st_dev of the nodes /proc and /sys generate.
pub const GENERATED_DEV: u64 = 0x400;

pub const TMPFS_MAGIC: u64 = 0x0102_1994;
pub const RAMFS_MAGIC: u64 = 0x8584_58f6;

static ROOT_SB: Once<Arc<TmpfsSb>> = Once::new();

impl TmpfsSb {
    pub fn new(limit: Limit, inode_limit: Limit, magic: u64) -> Arc<TmpfsSb> {
        Arc::new(TmpfsSb {
            limit,
            used: AtomicUsize::new(0),
            inode_limit,
            inodes: AtomicUsize::new(0),
            magic,
            dev: NEXT_DEV.fetch_add(1, Ordering::Relaxed) as u64,
        })
    }

    /// The root file system's: a tmpfs of half of RAM, as Linux's rootfs.
    pub fn root() -> Arc<TmpfsSb> {
        ROOT_SB
            .call_once(|| TmpfsSb::new(Limit::HalfOfRam, Limit::HalfOfRam, TMPFS_MAGIC))
            .clone()
    }

    /// The size limit in pages; `None` without one.
    pub fn limit(&self) -> Option<usize> {
        self.limit.get()
    }

    /// The inode limit (statfs's f_files); `None` without one.
    pub fn inode_limit(&self) -> Option<usize> {
        self.inode_limit.get()
    }

    /// Live inodes charged here, each extra hard link counted as one (Linux's shmem_link).
    pub fn inodes(&self) -> usize {
        self.inodes.load(Ordering::Relaxed)
    }

    /// Takes one inode of the limit, or ENOSPC.
    pub fn reserve_inode(&self) -> SysResult<()> {
        let limit = self.inode_limit().unwrap_or(usize::MAX);
        self.inodes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                (u < limit).then_some(u + 1)
            })
            .map(|_| ())
            .map_err(|_| Errno::ENOSPC)
    }

    pub fn release_inode(&self) {
        self.inodes.fetch_sub(1, Ordering::Relaxed);
    }

    /// Pages in use against `limit`.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// A zeroed page charged to this file system, or ENOSPC.
    fn charge(&self) -> SysResult<Page> {
        let limit = self.limit().unwrap_or(usize::MAX);
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                (u < limit).then_some(u + 1)
            })
            .map_err(|_| Errno::ENOSPC)?;
        match Page::new_user() {
            Some(p) => {
                CACHE_PAGES.fetch_add(1, Ordering::Relaxed);
                Ok(p)
            }
            None => {
                self.used.fetch_sub(1, Ordering::Relaxed);
                Err(Errno::ENOSPC)
            }
        }
    }

    fn uncharge(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
        CACHE_PAGES.fetch_sub(n, Ordering::Relaxed);
    }
}

/// Where byte `pos` is: page index and offset in it.
fn split(pos: u64) -> (u64, usize) {
    (pos / PAGE, (pos % PAGE) as usize)
}

pub struct PageCache {
    pages: BTreeMap<u64, Page>,
    size: u64,
    sb: Arc<TmpfsSb>,
}

impl Default for PageCache {
    fn default() -> PageCache {
        PageCache::new()
    }
}

impl PageCache {
    /// An empty file on the root file system.
    pub fn new() -> PageCache {
        PageCache::with_sb(TmpfsSb::root())
    }

    /// An empty file charging its pages to `sb`.
    pub fn with_sb(sb: Arc<TmpfsSb>) -> PageCache {
        PageCache {
            pages: BTreeMap::new(),
            size: 0,
            sb,
        }
    }

    pub fn sb(&self) -> &Arc<TmpfsSb> {
        &self.sb
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn read(&self, off: u64, buf: &mut [u8]) -> usize {
        if off >= self.size {
            return 0;
        }
        let n = buf
            .len()
            .min(usize::try_from(self.size - off).unwrap_or(usize::MAX));
        let mut done = 0;
        while done < n {
            let (idx, at) = split(off + done as u64);
            let chunk = (PAGE as usize - at).min(n - done);
            let dst = &mut buf[done..done + chunk];
            match self.pages.get(&idx) {
                Some(p) => p.reader().read(at, dst),
                None => dst.fill(0),
            }
            done += chunk;
        }
        n
    }

    /// Writes `buf` at `off`, allocating pages for holes. Returns the bytes written: fewer than
    /// asked when the file system filled up part way (the error only when nothing went in).
    pub fn write(&mut self, off: u64, buf: &[u8]) -> SysResult<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if off >= MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let n = buf
            .len()
            .min(usize::try_from(MAX_FILE_SIZE - off).unwrap_or(usize::MAX));
        let mut done = 0;
        let mut err = None;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let (idx, at) = split(off + done as u64);
            let (piece, tail) = rest.split_at((PAGE as usize - at).min(rest.len()));
            let page = match self.pages.entry(idx) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(v) => match self.sb.charge() {
                    Ok(p) => v.insert(p),
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                },
            };
            page.writer().write(at, piece);
            done += piece.len();
            rest = tail;
        }
        if done == 0 {
            return Err(err.unwrap_or(Errno::ENOSPC));
        }
        self.size = self.size.max(off + done as u64);
        Ok(done)
    }

    /// Sets the size: pages past it are freed and the rest of a partial last page zeroed;
    /// growing leaves a hole (no pages, no charge), as on Linux's tmpfs.
    pub fn truncate(&mut self, len: u64) -> SysResult<()> {
        if len > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        // The invariant "zero beyond the size" makes the old tail of the last page zero already
        // when growing; shrinking cuts pages and zeroes the new tail.
        if len < self.size {
            let gone = self.pages.split_off(&len.div_ceil(PAGE));
            self.sb.uncharge(gone.len());
            drop(gone);
            let (idx, at) = split(len);
            if at != 0 {
                if let Some(p) = self.pages.get(&idx) {
                    p.writer().zero_from(at);
                }
            }
        }
        self.size = len;
        Ok(())
    }

    /// The page at `index` for a mapping of the file, allocated (charged) if it is a hole.
    /// EFAULT past the end of the file (the fault becomes SIGBUS), ENOMEM without a page.
    pub fn mmap_page(&mut self, index: u64) -> SysResult<Page> {
        if index >= self.size.div_ceil(PAGE) {
            return Err(Errno::EFAULT);
        }
        match self.pages.entry(index) {
            Entry::Occupied(e) => Ok(e.get().clone()),
            Entry::Vacant(v) => {
                let p = self.sb.charge().map_err(|_| Errno::ENOMEM)?;
                Ok(v.insert(p).clone())
            }
        }
    }
}

impl Drop for PageCache {
    fn drop(&mut self) {
        self.sb.uncharge(self.pages.len());
    }
}
