//! User address spaces: the mappings (VMAs, kept by `svelt_mm`), their TTBR0 page table
//! (`pgtable`), demand paging, and the only way the kernel touches another process's memory —
//! copies that walk the tables in software and go through the linear map, so a bad user
//! pointer is an `EFAULT`, never a kernel fault.
//!
//! Private anonymous memory is zero-filled on demand (reads map the shared zero page);
//! `MAP_SHARED` anonymous pages belong to a [`SharedMem`] object that forked address spaces
//! share; file mappings map the file's page-cache frames (shared) or copy them on the first
//! write (private). A file is reached only through [`MappedFile`], which the file system
//! implements: this layer names no file-system type.

use super::frame::{self, Page};
use super::frame_io::FrameReader;
use super::pgtable::{zero_page, UserTable};
use crate::arch::mmu::{self, phys_to_virt};
use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::ptr;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_mm::layout::PAGE_SIZE as PAGE;
use svelt_mm::{Mm, VmBacking};

pub use svelt_mm::layout::{MMAP_MIN, MMAP_TOP, STACK_SIZE, STACK_TOP, USER_END};
pub use svelt_mm::{Access, FaultError, Prot};

const _: () = assert!(PAGE == mmu::PAGE_SIZE);

/// vm.max_map_count: the most VMAs one address space may have (/proc/sys/vm/max_map_count).
pub static MAX_MAP_COUNT: AtomicUsize = AtomicUsize::new(65530);

fn max_map_count() -> usize {
    MAX_MAP_COUNT.load(Ordering::Relaxed)
}

/// A file as a mapping sees it. The file system implements it for its nodes; a mapping keeps
/// the file alive and finds it by the object's address (see [`file_key`]).
pub trait MappedFile: Send + Sync {
    /// The page-cache frame holding page `index` of the file, with a reference for the caller:
    /// the frame read()/write() use, so a shared mapping and the file stay one. EFAULT at or
    /// past the end of the file (the fault becomes SIGBUS), ENOMEM or ENOSPC when no page can be
    /// had.
    fn cache_page(&self, index: u64) -> SysResult<Page>;
    /// The inode number (/proc/<pid>/maps).
    fn file_ino(&self) -> u64;
    /// The permission bits (a core dump notes mappings of executable files).
    fn file_perm(&self) -> u32;
}

/// Someone who maps an address space's pages elsewhere (a VM's stage-2 tables) and must drop
/// those mappings before the pages behind a range change or go (Linux's mmu_notifier). Called
/// with the address space locked: an implementation takes only locks ordered after it.
pub trait MmNotifier: Send + Sync {
    fn invalidate(&self, start: usize, end: usize);
}

/// The key a file's mappings are registered under: the address of the file object.
pub fn file_key(file: &dyn MappedFile) -> usize {
    file as *const dyn MappedFile as *const u8 as usize
}

/// Frames of a `MAP_SHARED | MAP_ANONYMOUS` mapping, shared across fork.
pub struct SharedMem {
    pages: Mutex<BTreeMap<usize, Page>>,
}

#[derive(Clone)]
pub enum Backing {
    /// Private zero-fill-on-demand memory.
    Anon,
    /// Shared anonymous memory; the offset of the VMA's start within the object.
    Shared(Arc<SharedMem>, usize),
    /// A file's pages; the file offset of the VMA's start (page-aligned). Shared mappings map
    /// the page-cache frames themselves, private ones copy them on the first write.
    File {
        node: Arc<dyn MappedFile>,
        off: u64,
        shared: bool,
        /// Whether the file was open for writing (a shared mapping may become writable).
        maywrite: bool,
    },
}

impl Backing {
    /// Whether writes go to memory others see (no copy-on-write).
    pub fn is_shared(&self) -> bool {
        match self {
            Backing::Anon => false,
            Backing::Shared(..) => true,
            Backing::File { shared, .. } => *shared,
        }
    }

    /// The backing of the part of a VMA starting `delta` bytes further on.
    pub fn advanced_by(&self, delta: usize) -> Backing {
        match self {
            Backing::Anon => Backing::Anon,
            Backing::Shared(obj, off) => Backing::Shared(obj.clone(), off + delta),
            Backing::File {
                node,
                off,
                shared,
                maywrite,
            } => Backing::File {
                node: node.clone(),
                off: off + delta as u64,
                shared: *shared,
                maywrite: *maywrite,
            },
        }
    }

    /// The frame a fault puts at `delta` bytes into a VMA with this backing (page-aligned),
    /// with the reference its entry keeps, and whether the entry may be writable.
    fn fault_page(&self, delta: usize, write: bool) -> Result<(u64, bool), FaultError> {
        Ok(match self {
            Backing::Anon if write => (frame::alloc_anon().ok_or(FaultError::NoMemory)?, true),
            Backing::Anon => {
                let z = zero_page();
                frame::get(z);
                (z, false)
            }
            Backing::Shared(obj, o) => {
                let index = (delta + o) / PAGE;
                let mut pages = obj.pages.lock();
                let page = match pages.get(&index) {
                    Some(p) => p.clone(),
                    None => {
                        let p = Page::new_user().ok_or(FaultError::NoMemory)?;
                        pages.insert(index, p.clone());
                        p
                    }
                };
                (page.into_raw(), true)
            }
            Backing::File {
                node, off, shared, ..
            } => {
                let index = (off + delta as u64) / PAGE as u64;
                let page = node.cache_page(index).map_err(|e| match e {
                    Errno::ENOMEM | Errno::ENOSPC => FaultError::NoMemory,
                    _ => FaultError::Bus,
                })?;
                if *shared || !write {
                    (page.into_raw(), *shared)
                } else {
                    let new = frame::alloc_anon().ok_or(FaultError::NoMemory)?;
                    // SAFETY: the cache page and the new frame are linear-mapped page-sized
                    // frames; `new` is ours alone.
                    unsafe {
                        ptr::copy_nonoverlapping(page.ptr(), phys_to_virt(new) as *mut u8, PAGE)
                    };
                    (new, true)
                }
            }
        })
    }
}

impl VmBacking for Backing {
    fn is_shared(&self) -> bool {
        Backing::is_shared(self)
    }
    fn advanced_by(&self, delta: usize) -> Self {
        Backing::advanced_by(self, delta)
    }
    fn merges_with(&self, next: &Self) -> bool {
        // As Linux merges neighbours; only private anonymous memory here.
        matches!((self, next), (Backing::Anon, Backing::Anon))
    }
}

pub type Vma = svelt_mm::Vma<Backing>;

/// Which address spaces map each file (by [`file_key`]), so that truncating a file can take
/// its vanished pages out of every mapping. Entries of dead address spaces are pruned as they
/// are met.
type MmRef = alloc::sync::Weak<Mutex<AddrSpace>>;
static FILE_MAPS: Mutex<BTreeMap<usize, Vec<MmRef>>> = Mutex::new(BTreeMap::new());

/// Records that `mm` maps the files of its file-backed VMAs (after mmap or fork).
pub fn register_file_maps(mm: &Arc<Mutex<AddrSpace>>) {
    let mut keys: Vec<usize> = mm
        .lock()
        .vmas()
        .filter_map(|v| match &v.backing {
            Backing::File { node, .. } => Some(file_key(&**node)),
            _ => None,
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        register(k, mm);
    }
}

/// Records that `mm` maps `node` (after an mmap of it).
pub fn register_file_map(mm: &Arc<Mutex<AddrSpace>>, node: &Arc<dyn MappedFile>) {
    register(file_key(&**node), mm);
}

fn register(key: usize, mm: &Arc<Mutex<AddrSpace>>) {
    let mut maps = FILE_MAPS.lock();
    let list = maps.entry(key).or_default();
    list.retain(|w| w.strong_count() > 0);
    if !list
        .iter()
        .any(|w| core::ptr::eq(w.as_ptr(), Arc::as_ptr(mm)))
    {
        list.push(Arc::downgrade(mm));
    }
}

/// The file at `key` (see [`file_key`]) shrank to `size` bytes: every page of it past the end
/// leaves every mapping, private copies included, so later accesses there fault (SIGBUS).
pub fn file_truncated(key: usize, size: u64) {
    file_range_gone(key, size.div_ceil(PAGE as u64) * PAGE as u64, u64::MAX);
}

/// The pages of the file at `key` between file offsets `first` and `end` (page-aligned) are
/// gone (truncated away, or a hole punched): they leave every mapping, private copies
/// included, so the next access faults them in again, or gets SIGBUS past the end.
pub fn file_range_gone(key: usize, first: u64, end: u64) {
    let mms: Vec<Arc<Mutex<AddrSpace>>> = {
        let mut maps = FILE_MAPS.lock();
        let Some(list) = maps.get_mut(&key) else {
            return;
        };
        list.retain(|w| w.strong_count() > 0);
        let live = list.iter().filter_map(|w| w.upgrade()).collect();
        if list.is_empty() {
            maps.remove(&key);
        }
        live
    };
    for mm in mms {
        let mut g = mm.lock();
        let ranges: Vec<(usize, usize)> = g
            .vmas()
            .filter_map(|v| match &v.backing {
                Backing::File { node, off, .. } if file_key(&**node) == key => {
                    let skip = first.saturating_sub(*off) as usize;
                    let start = v.start.saturating_add(skip);
                    let keep = end.saturating_sub(*off).min(usize::MAX as u64) as usize;
                    let stop = v.end.min(v.start.saturating_add(keep));
                    (start < stop).then_some((start, stop))
                }
                _ => None,
            })
            .collect();
        for (s, e) in ranges {
            g.zap(s, e);
        }
    }
}

/// Sets the zero page aside at boot (so no user fault is ever the first to need it).
pub fn init() {
    zero_page();
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub struct AddrSpace {
    pub id: u64,
    mm: Mm<Backing, UserTable>,
    /// Who maps this space's pages elsewhere and must hear when they may change.
    notifiers: Vec<Weak<dyn MmNotifier>>,
    pub brk_start: usize,
    pub brk: usize,
    /// The auxv exec gave the program (its pairs up to and with AT_NULL), for NT_AUXV.
    pub saved_auxv: Vec<u8>,
    /// Where the argument strings lie on the initial stack, for a core's pr_psargs.
    pub arg_start: usize,
    pub arg_end: usize,
    /// The rest of what exec laid out, for /proc.
    pub exec: ExecInfo,
}

/// Where exec put the program's pieces (Linux's mm->start_code and friends), for /proc.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecInfo {
    pub env_start: usize,
    pub env_end: usize,
    pub start_stack: usize,
    pub start_code: usize,
    pub end_code: usize,
    pub start_data: usize,
    pub end_data: usize,
    /// The executable's inode and the ranges its pages fill: /proc/PID/maps names them with
    /// the file (the rest of a segment, its bss, is anonymous memory).
    pub exe_ino: u64,
    pub image: [ImageRange; ExecInfo::MAX_IMAGE],
    pub nimage: usize,
    /// Where exec mapped the vDSO image (AT_SYSINFO_EHDR); 0 before.
    pub vdso: usize,
}

/// `[start, end)` holds the executable's bytes from file offset `offset` on.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageRange {
    pub start: usize,
    pub end: usize,
    pub offset: u64,
}

impl ExecInfo {
    pub const MAX_IMAGE: usize = 8;

    pub fn image(&self) -> &[ImageRange] {
        &self.image[..self.nimage]
    }
}

impl AddrSpace {
    pub fn new() -> SysResult<AddrSpace> {
        let table = UserTable::new()?;
        Ok(AddrSpace {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            mm: Mm::new(table),
            notifiers: Vec::new(),
            brk_start: 0,
            brk: 0,
            saved_auxv: Vec::new(),
            arg_start: 0,
            arg_end: 0,
            exec: ExecInfo::default(),
        })
    }

    /// Registers `n` to hear of every change to the pages behind this space's mappings (until
    /// it is dropped).
    pub fn add_notifier(&mut self, n: Weak<dyn MmNotifier>) -> SysResult<()> {
        self.notifiers.retain(|w| w.strong_count() > 0);
        self.notifiers.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.notifiers.push(n);
        Ok(())
    }

    /// Tells the notifiers that the pages behind `[start, end)` may change or go.
    fn notify(&mut self, start: usize, end: usize) {
        if self.notifiers.is_empty() {
            return;
        }
        self.notifiers.retain(|w| w.strong_count() > 0);
        for n in self.notifiers.iter().filter_map(Weak::upgrade) {
            n.invalidate(start, end);
        }
    }

    /// Makes this address space current on this CPU.
    pub fn activate(&self) {
        self.mm.table().activate();
    }

    /// The TTBR0 value that makes this address space current (never 0).
    pub fn ttbr0(&self) -> u64 {
        self.mm.table().ttbr0()
    }

    /// Frames mapped, for /proc.
    pub fn resident_pages(&self) -> usize {
        self.mm.table().pages()
    }

    /// Pages mapped in `[start, end)` (the shared zero page included), for /proc.
    pub fn resident_in(&self, start: usize, end: usize) -> usize {
        let mut n = 0;
        let mut va = start;
        while let Some(at) = self.next_mapped(va, end) {
            n += 1;
            va = at + PAGE;
        }
        n
    }

    /// The VMA containing `va`.
    pub fn find_vma(&self, va: usize) -> Option<&Vma> {
        self.mm.vmas().find(va)
    }

    /// How far from `start` (up to `end`) mappings follow each other without a hole.
    pub fn mapped_until(&self, start: usize, end: usize) -> usize {
        self.mm.vmas().mapped_until(start, end)
    }

    /// Resolves a user access to `va` to a physical address, faulting the page in if the
    /// mapping allows `access` (and breaking copy-on-write sharing for writes).
    pub fn translate(&mut self, va: usize, access: Access) -> Result<u64, FaultError> {
        if va >= USER_END {
            return Err(FaultError::NoMapping);
        }
        let (vmas, table) = self.mm.parts_mut();
        let vma = vmas.find(va).ok_or(FaultError::NoMapping)?;
        if !vma.prot.allows(access) {
            return Err(FaultError::Permission);
        }
        let write = matches!(access, Access::Write | Access::Gcs | Access::Kernel);
        let delta = (va & !(PAGE - 1)) - vma.start;
        table.fault(va, vma.prot, vma.backing.is_shared(), write, || {
            vma.backing.fault_page(delta, write)
        })
    }

    /// Handles a user page fault at `va`.
    pub fn handle_fault(&mut self, va: usize, access: Access) -> Result<(), FaultError> {
        self.translate(va, access).map(|_| ())
    }

    /// Adds a mapping over `[start, end)` (page-aligned), replacing whatever was there; ENOMEM
    /// when the address space would have more than vm.max_map_count mappings.
    pub fn map(&mut self, start: usize, end: usize, prot: Prot, backing: Backing) -> SysResult<()> {
        if !frame::user_can_alloc(1) {
            return Err(Errno::ENOMEM);
        }
        self.mm.map(start, end, prot, backing, max_map_count())
    }

    /// Removes mappings (and drops their frames) in `[start, end)`; ENOMEM when splitting a
    /// mapping would exceed vm.max_map_count.
    pub fn unmap(&mut self, start: usize, end: usize) -> SysResult<()> {
        self.notify(start, end);
        self.mm.unmap(start, end, max_map_count())
    }

    /// Drops the frames mapped in `[start, end)` but keeps the mappings: they read back as
    /// zero (private anonymous) or as the file/shared object again (MADV_DONTNEED).
    pub fn zap(&mut self, start: usize, end: usize) {
        self.notify(start, end);
        self.mm.zap(start, end);
    }

    /// Moves the entries of `len` bytes at `old` to `new` (mremap; the mapping at `new`
    /// exists and has no entries).
    pub fn move_ptes(&mut self, old: usize, new: usize, len: usize) -> SysResult<()> {
        self.notify(old, old.saturating_add(len));
        self.notify(new, new.saturating_add(len));
        self.mm.move_entries(old, new, len)
    }

    /// Changes the protection of `[start, end)`; ENOMEM if part of it is unmapped.
    pub fn protect(&mut self, start: usize, end: usize, prot: Prot) -> SysResult<()> {
        self.notify(start, end);
        self.mm.protect(start, end, prot, max_map_count())
    }

    /// Bytes mapped, in total.
    pub fn total_vm(&self) -> usize {
        self.mm.vmas().total_vm()
    }

    /// Bytes of mlock'ed memory (RLIMIT_MEMLOCK's count, VmLck).
    pub fn locked_vm(&self) -> usize {
        self.mm.vmas().locked_vm()
    }

    /// Bytes of `[start, end)` not locked yet (what an mlock of it would add).
    pub fn unlocked_in(&self, start: usize, end: usize) -> usize {
        self.mm.vmas().unlocked_in(start, end)
    }

    /// mlock/munlock of `[start, end)` (mapped without holes: the caller checked). Locking
    /// faults every page in (there is no swap: that is all locking means here); ENOMEM if that
    /// runs out of memory part-way (the range stays locked, as Linux leaves it).
    pub fn set_locked(
        &mut self,
        start: usize,
        end: usize,
        lock: bool,
        populate: bool,
    ) -> SysResult<()> {
        self.mm.set_locked(start, end, lock);
        if lock && populate {
            let mut va = start;
            while va < end {
                let Some(v) = self.find_vma(va) else { break };
                let (vend, access) = (
                    v.end.min(end),
                    if v.prot.w() && !v.backing.is_shared() {
                        Access::Write
                    } else {
                        Access::Read
                    },
                );
                if v.prot.0 == 0 {
                    va = vend;
                    continue;
                }
                while va < vend {
                    match self.translate(va, access) {
                        Ok(_) => {}
                        Err(FaultError::NoMemory) => return Err(Errno::ENOMEM),
                        // Beyond the end of a mapped file: nothing to bring in.
                        Err(_) => {}
                    }
                    va += PAGE;
                }
            }
        }
        Ok(())
    }

    /// mlockall(MCL_FUTURE) on or off.
    pub fn set_lock_future(&mut self, on: bool) {
        self.mm.set_lock_future(on);
    }

    /// Bytes of private writable memory other than the main stack (RLIMIT_DATA's count).
    pub fn data_vm(&self) -> usize {
        self.mm.vmas().data_vm()
    }

    /// Whether `[start, end)` overlaps no mapping.
    pub fn is_free(&self, start: usize, end: usize) -> bool {
        self.mm.vmas().is_free(start, end)
    }

    /// A free range of `len` bytes, searching down from `MMAP_TOP` (and `hint` first).
    pub fn find_free(&self, len: usize, hint: usize) -> Option<usize> {
        self.mm.vmas().find_free(len, hint)
    }

    /// A copy for fork: every frame is shared; private ones become copy-on-write in both.
    pub fn fork(&mut self) -> SysResult<AddrSpace> {
        let table = UserTable::new()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let mut saved_auxv = Vec::new();
        saved_auxv
            .try_reserve_exact(self.saved_auxv.len())
            .map_err(|_| Errno::ENOMEM)?;
        saved_auxv.extend_from_slice(&self.saved_auxv);
        // Fork makes private pages copy-on-write: the next write by either side moves the
        // writer to a new frame, which a mapping elsewhere would not follow.
        self.notify(0, USER_END);
        Ok(AddrSpace {
            id,
            mm: self.mm.fork(table)?,
            notifiers: Vec::new(),
            brk_start: self.brk_start,
            brk: self.brk,
            saved_auxv,
            arg_start: self.arg_start,
            arg_end: self.arg_end,
            exec: self.exec,
        })
    }

    // ---- user copies -------------------------------------------------------------------------

    /// Runs `f` over each page-sized piece of `[va, va + len)` as a kernel slice.
    fn for_each_chunk(
        &mut self,
        va: usize,
        len: usize,
        access: Access,
        mut f: impl FnMut(*mut u8, usize, usize),
    ) -> SysResult<()> {
        let end = va.checked_add(len).ok_or(Errno::EFAULT)?;
        if end > USER_END {
            return Err(Errno::EFAULT);
        }
        let mut cur = va;
        while cur < end {
            let n = (PAGE - (cur & (PAGE - 1))).min(end - cur);
            let pa = self.translate(cur, access).map_err(|_| Errno::EFAULT)?;
            f(phys_to_virt(pa) as *mut u8, cur - va, n);
            cur += n;
        }
        Ok(())
    }

    pub fn read(&mut self, va: usize, buf: &mut [u8]) -> SysResult<()> {
        let dst = buf.as_mut_ptr();
        self.for_each_chunk(va, buf.len(), Access::Read, |src, off, n| {
            // SAFETY: src is n readable bytes of a user frame via the linear map; dst+off..+n
            // lies within buf.
            unsafe { ptr::copy_nonoverlapping(src, dst.add(off), n) }
        })
    }

    pub fn write(&mut self, va: usize, buf: &[u8]) -> SysResult<()> {
        let src = buf.as_ptr();
        self.for_each_chunk(va, buf.len(), Access::Write, |dst, off, n| {
            // SAFETY: dst is n writable bytes of a user frame; src+off..+n lies within buf.
            unsafe { ptr::copy_nonoverlapping(src.add(off), dst, n) }
        })
    }

    /// Writes into a mapping regardless of its protection (exec loading text).
    pub fn write_kernel(&mut self, va: usize, buf: &[u8]) -> SysResult<()> {
        let src = buf.as_ptr();
        self.for_each_chunk(va, buf.len(), Access::Kernel, |dst, off, n| {
            // SAFETY: dst is n bytes of a user frame; src+off..+n lies within buf.
            unsafe { ptr::copy_nonoverlapping(src.add(off), dst, n) }
        })
    }

    /// Whether `[va, va + len)` is covered by mappings allowing `access` (no page is touched).
    #[expect(
        dead_code,
        reason = "for other address spaces: ptrace and process_vm_* (next)"
    )]
    pub fn range_ok(&self, va: usize, len: usize, access: Access) -> bool {
        self.mm.vmas().range_ok(va, len, access)
    }

    /// Reads a NUL-terminated string of at most `max` bytes (ENAMETOOLONG beyond).
    #[expect(
        dead_code,
        reason = "for other address spaces: ptrace and process_vm_* (next)"
    )]
    pub fn read_cstr(&mut self, va: usize, max: usize) -> SysResult<Vec<u8>> {
        let mut out = Vec::new();
        let mut cur = va;
        loop {
            let n = PAGE - (cur & (PAGE - 1));
            let pa = self
                .translate(cur, Access::Read)
                .map_err(|_| Errno::EFAULT)?;
            // SAFETY: n readable bytes of a user frame via the linear map.
            let chunk = unsafe { core::slice::from_raw_parts(phys_to_virt(pa) as *const u8, n) };
            if let Some(z) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..z]);
                if out.len() > max {
                    return Err(Errno::ENAMETOOLONG);
                }
                return Ok(out);
            }
            out.extend_from_slice(chunk);
            if out.len() > max {
                return Err(Errno::ENAMETOOLONG);
            }
            cur += n;
        }
    }

    #[expect(
        dead_code,
        reason = "for other address spaces: ptrace and process_vm_* (next)"
    )]
    pub fn read_u64(&mut self, va: usize) -> SysResult<u64> {
        let mut b = [0u8; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    #[expect(
        dead_code,
        reason = "for other address spaces: ptrace and process_vm_* (next)"
    )]
    pub fn read_u32(&mut self, va: usize) -> SysResult<u32> {
        let mut b = [0u8; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&mut self, va: usize, v: u32) -> SysResult<()> {
        self.write(va, &v.to_le_bytes())
    }

    #[expect(
        dead_code,
        reason = "for other address spaces: ptrace and process_vm_* (next)"
    )]
    pub fn write_u64(&mut self, va: usize, v: u64) -> SysResult<()> {
        self.write(va, &v.to_le_bytes())
    }

    /// The shared-memory object and offset behind `va`, for shared futex keys.
    pub fn shared_key(&self, va: usize) -> Option<(usize, usize)> {
        let v = self.find_vma(va)?;
        match &v.backing {
            Backing::Shared(obj, off) => Some((Arc::as_ptr(obj) as usize, va - v.start + off)),
            Backing::File {
                node,
                off,
                shared: true,
                ..
            } => Some((file_key(&**node), va - v.start + *off as usize)),
            _ => None,
        }
    }

    pub fn vmas(&self) -> impl Iterator<Item = &Vma> {
        self.mm.vmas().iter()
    }

    /// The first page at or after `va` and below `end` with a valid leaf entry; whole missing
    /// tables are stepped over, so sparse giant mappings cost little. For core dumps.
    pub fn next_mapped(&self, va: usize, end: usize) -> Option<usize> {
        self.mm.table().next_mapped(va, end)
    }

    /// The frame mapped at `va` if the process has a page of its own there (not the shared
    /// zero page), to copy from while the address space stays borrowed, and whether its entry
    /// is writable; nothing is faulted in. For core dumps, where a page never touched reads as
    /// zero.
    pub fn dump_frame(&mut self, va: usize) -> Option<(FrameReader<'_>, bool)> {
        let (pa, writable) = self.mm.table_mut().dump_frame(va)?;
        // SAFETY: the page table maps the frame and holds a reference to it; nothing can unmap
        // it while the reader borrows the address space.
        Some((unsafe { FrameReader::new(pa) }, writable))
    }
}

impl SharedMem {
    pub fn new() -> Arc<SharedMem> {
        Arc::new(SharedMem {
            pages: Mutex::new(BTreeMap::new()),
        })
    }
}
