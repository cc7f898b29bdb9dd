//! User address spaces: a TTBR0 page table with an ASID, the list of mappings (VMAs), demand
//! paging, and the only way the kernel touches user memory — copies that walk the tables in
//! software and go through the linear map, so a bad user pointer is an `EFAULT`, never a kernel
//! fault.
//!
//! Every present user PTE holds one reference on its frame (`frame::get`/`put`). Private pages
//! are copy-on-write: fork maps them read-only in both address spaces, and a write fault copies
//! a frame that someone else still references (or reuses it when it is the last reference).
//! Reads of untouched private anonymous memory map one shared zero page. `MAP_SHARED`
//! anonymous pages belong to a [`SharedMem`] object that forked address spaces share; file
//! mappings map the file's page-cache frames (shared) or copy them on the first write (private).
//! A file is reached only through [`MappedFile`], which the file system implements: this layer
//! names no file-system type.

use super::frame::{self, Page};
use crate::arch::aarch64::mmu::{self, phys_to_virt, PAGE_SIZE};
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::errno::{Errno, SysResult};

/// One past the highest user address (48-bit VAs, TTBR0).
pub const USER_END: usize = 1 << 48;
/// Top of the main thread's stack and the size reserved for it.
pub const STACK_TOP: usize = 0x0000_ffff_ffff_0000;
pub const STACK_SIZE: usize = 8 << 20;
/// Where top-down mmap placement starts (below the stack, leaving a gap).
pub const MMAP_TOP: usize = STACK_TOP - STACK_SIZE - (256 << 20);
/// Lowest address mmap hands out without MAP_FIXED (mmap_min_addr).
pub const MMAP_MIN: usize = 0x10000;

const PAGE: usize = PAGE_SIZE;
const PTE_ADDR: u64 = mmu::ADDR_MASK;

/// Access rights of a mapping (PROT_READ/WRITE/EXEC bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot(pub u32);

impl Prot {
    pub const READ: u32 = 1;
    pub const WRITE: u32 = 2;
    pub const EXEC: u32 = 4;
    pub fn r(self) -> bool {
        self.0 & Self::READ != 0
    }
    pub fn w(self) -> bool {
        self.0 & Self::WRITE != 0
    }
    pub fn x(self) -> bool {
        self.0 & Self::EXEC != 0
    }
}

/// Kinds of access, for faults and copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Exec,
    /// The kernel filling a mapping it made (exec), whatever its protection.
    Kernel,
}

/// vm.max_map_count: the most VMAs one address space may have (/proc/sys/vm/max_map_count).
pub static MAX_MAP_COUNT: AtomicUsize = AtomicUsize::new(65530);

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
}

#[derive(Clone)]
pub struct Vma {
    pub start: usize,
    pub end: usize,
    pub prot: Prot,
    pub backing: Backing,
    /// mlock'ed (VM_LOCKED): counted against RLIMIT_MEMLOCK.
    pub locked: bool,
}

/// Why a user access failed (for si_code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// No mapping there (SEGV_MAPERR).
    NoMapping,
    /// A mapping without the needed permission (SEGV_ACCERR).
    Permission,
    /// Out of memory.
    NoMemory,
    /// A file mapping beyond the end of its file (SIGBUS, BUS_ADRERR).
    Bus,
}

/// Which address spaces map each file (by [`file_key`]), so that truncating a file can take
/// its vanished pages out of every mapping. Entries of dead address spaces are pruned as they
/// are met.
type MmRef = alloc::sync::Weak<Mutex<AddrSpace>>;
static FILE_MAPS: Mutex<BTreeMap<usize, Vec<MmRef>>> = Mutex::new(BTreeMap::new());

/// Records that `mm` maps the files of its file-backed VMAs (after mmap or fork).
pub fn register_file_maps(mm: &Arc<Mutex<AddrSpace>>) {
    let mut keys: Vec<usize> = mm
        .lock()
        .vmas
        .values()
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
    let first = size.div_ceil(PAGE as u64) * PAGE as u64;
    for mm in mms {
        let mut g = mm.lock();
        let ranges: Vec<(usize, usize)> = g
            .vmas
            .values()
            .filter_map(|v| match &v.backing {
                Backing::File { node, off, .. } if file_key(&**node) == key => {
                    let skip = first.saturating_sub(*off) as usize;
                    let start = v.start.saturating_add(skip);
                    (start < v.end).then_some((start, v.end))
                }
                _ => None,
            })
            .collect();
        for (s, e) in ranges {
            g.zap(s, e);
        }
    }
}

/// The zero page: mapped read-only wherever private anonymous memory is read before it is
/// written. Holds a permanent reference, so it is never freed.
static ZERO_PAGE: spin::Once<u64> = spin::Once::new();

fn zero_page() -> u64 {
    *ZERO_PAGE.call_once(|| frame::alloc_zeroed(1).expect("a frame for the zero page at boot"))
}

/// Sets the zero page aside at boot (so no user fault is ever the first to need it).
pub fn init() {
    zero_page();
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub struct AddrSpace {
    pub id: u64,
    root: u64,
    asid: u16,
    vmas: BTreeMap<usize, Vma>,
    pub brk_start: usize,
    pub brk: usize,
    /// Private frames mapped, for /proc.
    pages: usize,
    /// `[packed_below, MMAP_TOP)` is known to be mapped without a gap, so the top-down search
    /// for free space starts here (without it, a program that maps page after page makes
    /// every mmap walk every mapping).
    packed_below: core::cell::Cell<usize>,
    /// Bytes mapped, and bytes of private writable mappings other than the main stack (what
    /// RLIMIT_AS and RLIMIT_DATA limit), kept as VMAs come and go.
    total_vm: usize,
    data_vm: usize,
    /// Bytes of mlock'ed mappings, and whether new mappings are locked (mlockall MCL_FUTURE).
    locked_vm: usize,
    lock_future: bool,
    /// The auxv exec gave the program (its pairs up to and with AT_NULL), for NT_AUXV.
    pub saved_auxv: Vec<u8>,
    /// Where the argument strings lie on the initial stack, for a core's pr_psargs.
    pub arg_start: usize,
    pub arg_end: usize,
}

/// A VMA's share of RLIMIT_DATA's count.
fn data_bytes(v: &Vma) -> usize {
    if v.prot.w() && !v.backing.is_shared() && v.end != STACK_TOP {
        v.end - v.start
    } else {
        0
    }
}

/// ASIDs in use (bit set); ASID 0 is the empty table's.
static ASIDS: Mutex<Option<Vec<u64>>> = Mutex::new(None);

fn alloc_asid() -> SysResult<u16> {
    let mut g = ASIDS.lock();
    let map = g.get_or_insert_with(|| {
        let mut v = alloc::vec![0u64; mmu::asid_count() / 64];
        v[0] = 1;
        v
    });
    for (i, word) in map.iter_mut().enumerate() {
        if *word != u64::MAX {
            let bit = word.trailing_ones() as usize;
            *word |= 1 << bit;
            return Ok((i * 64 + bit) as u16);
        }
    }
    Err(Errno::EAGAIN)
}

fn free_asid(asid: u16) {
    mmu::flush_tlb_asid(asid);
    if let Some(map) = ASIDS.lock().as_mut() {
        map[asid as usize / 64] &= !(1 << (asid % 64));
    }
}

fn table(pa: u64) -> *mut u64 {
    phys_to_virt(pa) as *mut u64
}

impl AddrSpace {
    pub fn new() -> SysResult<AddrSpace> {
        let root = frame::alloc_user(1).ok_or(Errno::ENOMEM)?;
        frame::TABLE_PAGES.fetch_add(1, Ordering::Relaxed);
        let asid = match alloc_asid() {
            Ok(a) => a,
            Err(e) => {
                frame::TABLE_PAGES.fetch_sub(1, Ordering::Relaxed);
                frame::free(root, 1);
                return Err(e);
            }
        };
        Ok(AddrSpace {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            root,
            asid,
            vmas: BTreeMap::new(),
            brk_start: 0,
            brk: 0,
            pages: 0,
            packed_below: core::cell::Cell::new(MMAP_TOP),
            total_vm: 0,
            data_vm: 0,
            locked_vm: 0,
            lock_future: false,
            saved_auxv: Vec::new(),
            arg_start: 0,
            arg_end: 0,
        })
    }

    /// Makes this address space current on this CPU.
    pub fn activate(&self) {
        mmu::set_user_table(self.root, self.asid);
    }

    pub fn resident_pages(&self) -> usize {
        self.pages
    }

    /// The leaf PTE slot for `va`, creating tables on the way if `create`.
    fn pte_slot(&mut self, va: usize, create: bool) -> Option<*mut u64> {
        let mut t = self.root;
        for level in 0..3 {
            let idx = (va >> (39 - 9 * level)) & 511;
            // SAFETY: t is a table frame of this address space (linear-mapped); idx < 512.
            let slot = unsafe { table(t).add(idx) };
            // SAFETY: as above.
            let e = unsafe { ptr::read_volatile(slot) };
            t = if e & mmu::DESC_VALID != 0 {
                e & PTE_ADDR
            } else if create {
                let new = frame::alloc_user(1)?;
                frame::TABLE_PAGES.fetch_add(1, Ordering::Relaxed);
                // SAFETY: linking a zeroed table into an invalid slot of our own table.
                unsafe {
                    ptr::write_volatile(slot, new | mmu::DESC_TABLE_OR_PAGE | mmu::DESC_VALID)
                };
                new
            } else {
                return None;
            };
        }
        // SAFETY: t is a level-3 table frame of this address space.
        Some(unsafe { table(t).add((va >> 12) & 511) })
    }

    /// Entry bits for a page of a mapping with `prot`; `exclusive` is false where a private
    /// mapping's frame is shared (copy-on-write): such entries stay read-only.
    fn pte_bits_for(prot: Prot, exclusive: bool) -> u64 {
        let p = if exclusive {
            prot
        } else {
            Prot(prot.0 & !Prot::WRITE)
        };
        let mut bits = Self::pte_bits(p);
        if prot.0 != 0 && !p.r() && !p.x() && prot.w() {
            // PROT_WRITE alone implies read on arm64; kept readable while copy-on-write.
            bits |= mmu::AP_EL0;
        }
        bits
    }

    fn pte_bits(prot: Prot) -> u64 {
        let mut bits = mmu::DESC_VALID
            | mmu::DESC_TABLE_OR_PAGE
            | mmu::attr_index(mmu::MAIR_NORMAL)
            | mmu::SH_INNER
            | mmu::AF
            | mmu::NG
            | mmu::PXN;
        if prot.0 == 0 {
            // PROT_NONE: keep the frame but make every access fault (no EL0 access bit, EL1
            // read-only; the kernel never uses user VAs).
            return bits | mmu::AP_RO | mmu::UXN;
        }
        bits |= mmu::AP_EL0;
        if !prot.w() {
            bits |= mmu::AP_RO;
        }
        if !prot.x() {
            bits |= mmu::UXN;
        }
        bits
    }

    /// The VMA containing `va`.
    pub fn find_vma(&self, va: usize) -> Option<&Vma> {
        self.vmas
            .range(..=va)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| va < v.end)
    }

    fn allows(prot: Prot, access: Access) -> bool {
        match access {
            Access::Read => prot.r() || prot.w() || prot.x(),
            Access::Write => prot.w(),
            Access::Exec => prot.x(),
            Access::Kernel => true,
        }
    }

    /// Resolves a user access to `va` to a physical address, faulting the page in if the
    /// mapping allows `access` (and breaking copy-on-write sharing for writes).
    pub fn translate(&mut self, va: usize, access: Access) -> Result<u64, FaultError> {
        if va >= USER_END {
            return Err(FaultError::NoMapping);
        }
        let vma = self.find_vma(va).ok_or(FaultError::NoMapping)?;
        if !Self::allows(vma.prot, access) {
            return Err(FaultError::Permission);
        }
        let (prot, shared, vstart) = (vma.prot, vma.backing.is_shared(), vma.start);
        let write = matches!(access, Access::Write | Access::Kernel);
        let page_va = va & !(PAGE - 1);
        let slot = self.pte_slot(page_va, true).ok_or(FaultError::NoMemory)?;
        // SAFETY: slot is a leaf entry of this address space's tables.
        let e = unsafe { ptr::read_volatile(slot) };
        let off = (va & (PAGE - 1)) as u64;
        if e & mmu::DESC_VALID != 0 {
            let pa = e & PTE_ADDR;
            if !write || e & mmu::AP_RO == 0 || shared {
                return Ok(pa + off);
            }
            // A write to a read-only entry of a private mapping: copy-on-write.
            if pa != zero_page() && frame::refs(pa) == 1 {
                // The last reference: the frame is ours alone, make it writable in place.
                // SAFETY: as above; only the permission bits change.
                unsafe { ptr::write_volatile(slot, pa | Self::pte_bits_for(prot, true)) };
                mmu::flush_tlb_user_page(self.asid, page_va);
                return Ok(pa + off);
            }
            let new = frame::alloc_anon().ok_or(FaultError::NoMemory)?;
            if pa != zero_page() {
                // SAFETY: both frames are linear-mapped and page-sized; `new` is ours alone.
                unsafe {
                    ptr::copy_nonoverlapping(
                        phys_to_virt(pa) as *const u8,
                        phys_to_virt(new) as *mut u8,
                        PAGE,
                    )
                };
            }
            // Break before make: the old entry goes (and its TLB entries) before the new one.
            // SAFETY: as above.
            unsafe { ptr::write_volatile(slot, 0) };
            mmu::flush_tlb_user_page(self.asid, page_va);
            // SAFETY: as above.
            unsafe { ptr::write_volatile(slot, new | Self::pte_bits_for(prot, true)) };
            crate::arch::aarch64::cpu::barrier_after_table_write();
            frame::put(pa);
            return Ok(new + off);
        }
        let vma = self.find_vma(va).ok_or(FaultError::NoMapping)?;
        let (pa, exclusive) = match &vma.backing {
            Backing::Anon if write => (frame::alloc_anon().ok_or(FaultError::NoMemory)?, true),
            Backing::Anon => {
                let z = zero_page();
                frame::get(z);
                (z, false)
            }
            Backing::Shared(obj, o) => {
                let index = (page_va - vstart + o) / PAGE;
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
                node,
                off: foff,
                shared,
                ..
            } => {
                let index = (foff + (page_va - vstart) as u64) / PAGE as u64;
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
        };
        self.pages += 1;
        // SAFETY: as above; the slot was invalid, so no TLB entry exists for it.
        unsafe { ptr::write_volatile(slot, pa | Self::pte_bits_for(prot, exclusive)) };
        crate::arch::aarch64::cpu::barrier_after_table_write();
        Ok(pa + off)
    }

    /// Handles a user page fault at `va`.
    pub fn handle_fault(&mut self, va: usize, access: Access) -> Result<(), FaultError> {
        self.translate(va, access).map(|_| ())
    }

    /// Adds a mapping over `[start, end)` (page-aligned), replacing whatever was there; ENOMEM
    /// when the address space would have more than vm.max_map_count mappings.
    pub fn map(&mut self, start: usize, end: usize, prot: Prot, backing: Backing) -> SysResult<()> {
        // As Linux: a new mapping is refused once the count is past the limit (so a process
        // can reach max_map_count + 1); splits are checked where they happen (unmap).
        if self.vmas.len() > MAX_MAP_COUNT.load(Ordering::Relaxed) || !frame::user_can_alloc(1) {
            return Err(Errno::ENOMEM);
        }
        self.unmap(start, end)?;
        let v = Vma {
            start,
            end,
            prot,
            backing,
            locked: self.lock_future,
        };
        self.locked_vm += if v.locked { end - start } else { 0 };
        self.total_vm += end - start;
        self.data_vm += data_bytes(&v);
        self.vmas.insert(start, v);
        self.try_merge(end);
        self.try_merge(start);
        Ok(())
    }

    /// Joins the VMA ending at `at` with the one starting there when both are private
    /// anonymous memory with the same rights (as Linux merges neighbours).
    fn try_merge(&mut self, at: usize) {
        let Some(hi) = self.vmas.get(&at) else {
            return;
        };
        let Some(lo) = self.vmas.range(..at).next_back().map(|(_, v)| v) else {
            return;
        };
        if lo.end == at
            && lo.prot == hi.prot
            && lo.locked == hi.locked
            && matches!((&lo.backing, &hi.backing), (Backing::Anon, Backing::Anon))
        {
            let (lo_start, hi_end) = (lo.start, hi.end);
            self.vmas.remove(&at);
            if let Some(lo) = self.vmas.get_mut(&lo_start) {
                lo.end = hi_end;
            }
        }
    }

    /// Removes mappings (and drops their frames) in `[start, end)`; ENOMEM when splitting a
    /// mapping would exceed vm.max_map_count.
    pub fn unmap(&mut self, start: usize, end: usize) -> SysResult<()> {
        if self
            .find_vma(start)
            .is_some_and(|v| v.start < start && v.end > end)
            && self.vmas.len() >= MAX_MAP_COUNT.load(Ordering::Relaxed)
        {
            return Err(Errno::ENOMEM);
        }
        if end > self.packed_below.get() {
            self.packed_below
                .set(end.clamp(self.packed_below.get(), MMAP_TOP));
        }
        self.split_at(start);
        self.split_at(end);
        let doomed: Vec<usize> = self.vmas.range(start..end).map(|(&s, _)| s).collect();
        for s in doomed {
            let vma = self.vmas.remove(&s).unwrap();
            self.total_vm -= vma.end - vma.start;
            if vma.locked {
                self.locked_vm -= vma.end - vma.start;
            }
            self.data_vm -= data_bytes(&vma);
            self.clear_ptes(vma.start, vma.end, true);
        }
        Ok(())
    }

    /// Drops the frames mapped in `[start, end)` but keeps the mappings: they read back as
    /// zero (private anonymous) or as the file/shared object again (MADV_DONTNEED).
    pub fn zap(&mut self, start: usize, end: usize) {
        self.clear_ptes(start, end, true);
    }

    /// Moves the entries of `len` bytes at `old` to `new` (mremap; the mapping at `new`
    /// exists and has no entries).
    pub fn move_ptes(&mut self, old: usize, new: usize, len: usize) -> SysResult<()> {
        let mut off = 0;
        while off < len {
            let Some(slot) = self.pte_slot(old + off, false) else {
                off = skip_missing_table(old + off) - old;
                continue;
            };
            // SAFETY: a leaf entry of this address space.
            let e = unsafe { ptr::read_volatile(slot) };
            if e & mmu::DESC_VALID != 0 {
                let nslot = self.pte_slot(new + off, true).ok_or(Errno::ENOMEM)?;
                // SAFETY: leaf entries of this address space; the old one is invalidated and
                // flushed before the new one is written (the frame keeps its reference).
                unsafe {
                    ptr::write_volatile(slot, 0);
                    mmu::flush_tlb_user_page(self.asid, old + off);
                    ptr::write_volatile(nslot, e);
                }
            }
            off += PAGE;
        }
        crate::arch::aarch64::cpu::barrier_after_table_write();
        Ok(())
    }

    /// Bytes mapped, in total.
    pub fn total_vm(&self) -> usize {
        self.total_vm
    }

    /// Bytes of mlock'ed memory (RLIMIT_MEMLOCK's count, VmLck).
    pub fn locked_vm(&self) -> usize {
        self.locked_vm
    }

    /// Bytes of `[start, end)` not locked yet (what an mlock of it would add).
    pub fn unlocked_in(&self, start: usize, end: usize) -> usize {
        self.vmas
            .range(..end)
            .rev()
            .take_while(|(_, v)| v.end > start)
            .filter(|(_, v)| !v.locked)
            .map(|(_, v)| v.end.min(end) - v.start.max(start))
            .sum()
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
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<usize> = self.vmas.range(start..end).map(|(&s, _)| s).collect();
        for k in &keys {
            let v = self.vmas.get_mut(k).unwrap();
            if v.locked != lock {
                v.locked = lock;
                if lock {
                    self.locked_vm += v.end - v.start;
                } else {
                    self.locked_vm -= v.end - v.start;
                }
            }
        }
        for k in keys {
            self.try_merge(k);
        }
        self.try_merge(end);
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
        self.lock_future = on;
    }

    /// Bytes of private writable memory other than the main stack (RLIMIT_DATA's count).
    pub fn data_vm(&self) -> usize {
        self.data_vm
    }

    /// Splits the VMA containing `at` (if any) so that a VMA boundary falls at `at`.
    fn split_at(&mut self, at: usize) {
        let Some(v) = self.find_vma(at).cloned() else {
            return;
        };
        if v.start == at {
            return;
        }
        let mut lo = v.clone();
        lo.end = at;
        let mut hi = v;
        hi.backing = hi.backing.advanced_by(at - hi.start);
        hi.start = at;
        self.vmas.insert(lo.start, lo);
        self.vmas.insert(hi.start, hi);
    }

    /// Clears the entries of `[start, end)` and drops their frame references (`flush`: also
    /// their TLB entries; a dying address space flushes its whole ASID instead).
    fn clear_ptes(&mut self, start: usize, end: usize, flush: bool) {
        let mut va = start;
        while va < end {
            let Some(slot) = self.pte_slot(va, false) else {
                va = skip_missing_table(va);
                continue;
            };
            // SAFETY: a leaf entry of this address space.
            let e = unsafe { ptr::read_volatile(slot) };
            if e & mmu::DESC_VALID != 0 {
                // SAFETY: as above.
                unsafe { ptr::write_volatile(slot, 0) };
                if flush {
                    mmu::flush_tlb_user_page(self.asid, va);
                }
                frame::put(e & PTE_ADDR);
                self.pages -= 1;
            }
            va += PAGE;
        }
    }

    /// Changes the protection of `[start, end)`; ENOMEM if part of it is unmapped.
    pub fn protect(&mut self, start: usize, end: usize, prot: Prot) -> SysResult<()> {
        let mut va = start;
        while va < end {
            let v = self.find_vma(va).ok_or(Errno::ENOMEM)?;
            va = v.end;
        }
        let splits = self.find_vma(start).is_some_and(|v| v.start < start) as usize
            + self
                .find_vma(end)
                .is_some_and(|v| v.start < end && v.end > end) as usize;
        if splits > 0 && self.vmas.len() + splits > MAX_MAP_COUNT.load(Ordering::Relaxed) {
            return Err(Errno::ENOMEM);
        }
        self.split_at(start);
        self.split_at(end);
        let keys: Vec<usize> = self.vmas.range(start..end).map(|(&s, _)| s).collect();
        for k in keys {
            let v = self.vmas.get_mut(&k).unwrap();
            self.data_vm -= data_bytes(v);
            v.prot = prot;
            self.data_vm += data_bytes(v);
            let shared = v.backing.is_shared();
            let (s, e) = (v.start, v.end);
            let mut va = s;
            while va < e {
                let Some(slot) = self.pte_slot(va, false) else {
                    va = skip_missing_table(va);
                    continue;
                };
                {
                    // SAFETY: a leaf entry of this address space.
                    let pte = unsafe { ptr::read_volatile(slot) };
                    if pte & mmu::DESC_VALID != 0 {
                        // Break before make: invalidate, flush, then write the new entry.
                        // SAFETY: as above.
                        unsafe { ptr::write_volatile(slot, 0) };
                        mmu::flush_tlb_user_page(self.asid, va);
                        // A private frame stays read-only while it is shared (copy-on-write).
                        let pa = pte & PTE_ADDR;
                        let exclusive = shared || (pa != zero_page() && frame::refs(pa) == 1);
                        // SAFETY: as above.
                        unsafe {
                            ptr::write_volatile(slot, pa | Self::pte_bits_for(prot, exclusive))
                        };
                    }
                }
                va += PAGE;
            }
        }
        crate::arch::aarch64::cpu::barrier_after_table_write();
        self.try_merge(end);
        self.try_merge(start);
        Ok(())
    }

    /// Whether `[start, end)` overlaps no mapping.
    pub fn is_free(&self, start: usize, end: usize) -> bool {
        self.vmas
            .range(..end)
            .next_back()
            .is_none_or(|(_, v)| v.end <= start)
    }

    /// A free range of `len` bytes, searching down from `MMAP_TOP` (and `hint` first).
    pub fn find_free(&self, len: usize, hint: usize) -> Option<usize> {
        if hint >= MMAP_MIN && hint.checked_add(len)? <= MMAP_TOP && self.is_free(hint, hint + len)
        {
            return Some(hint);
        }
        let mut top = self.packed_below.get();
        let mut packed = true;
        for (_, v) in self.vmas.range(..top).rev() {
            if v.end < top {
                packed = false;
            }
            if v.end <= top && top - v.end >= len {
                return Some(top - len);
            }
            top = top.min(v.start);
            if packed {
                self.packed_below.set(top);
            }
        }
        (top >= MMAP_MIN + len).then(|| top - len)
    }

    /// A copy for fork: every frame is shared; private ones become copy-on-write in both.
    pub fn fork(&mut self) -> SysResult<AddrSpace> {
        let mut child = AddrSpace::new()?;
        child.brk_start = self.brk_start;
        child.brk = self.brk;
        child
            .saved_auxv
            .try_reserve_exact(self.saved_auxv.len())
            .map_err(|_| Errno::ENOMEM)?;
        child.saved_auxv.extend_from_slice(&self.saved_auxv);
        child.arg_start = self.arg_start;
        child.arg_end = self.arg_end;
        let vmas: Vec<(usize, usize, bool)> = self
            .vmas
            .values()
            .map(|v| (v.start, v.end, v.backing.is_shared()))
            .collect();
        child.vmas = self.vmas.clone();
        child.total_vm = self.total_vm;
        child.data_vm = self.data_vm;
        // Locks are not inherited across fork (as Linux: the child's mappings are unlocked).
        for v in child.vmas.values_mut() {
            v.locked = false;
        }
        let mut write_protected = false;
        for (start, end, shared) in vmas {
            let mut va = start;
            while va < end {
                let Some(slot) = self.pte_slot(va, false) else {
                    va = skip_missing_table(va);
                    continue;
                };
                // SAFETY: a leaf entry of the parent's tables.
                let mut e = unsafe { ptr::read_volatile(slot) };
                if e & mmu::DESC_VALID != 0 {
                    if !shared && e & mmu::AP_RO == 0 {
                        e |= mmu::AP_RO;
                        // Only the permission changes, so no break-before-make; the parent's
                        // ASID is flushed once at the end.
                        // SAFETY: as above.
                        unsafe { ptr::write_volatile(slot, e) };
                        write_protected = true;
                    }
                    let Some(cslot) = child.pte_slot(va, true) else {
                        if write_protected {
                            mmu::flush_tlb_asid(self.asid);
                        }
                        return Err(Errno::ENOMEM);
                    };
                    frame::get(e & PTE_ADDR);
                    child.pages += 1;
                    // SAFETY: a fresh leaf slot of the child's tables.
                    unsafe { ptr::write_volatile(cslot, e) };
                }
                va += PAGE;
            }
        }
        if write_protected {
            mmu::flush_tlb_asid(self.asid);
        }
        Ok(child)
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
        let Some(end) = va.checked_add(len) else {
            return false;
        };
        if end > USER_END {
            return false;
        }
        let mut cur = va;
        while cur < end {
            match self.find_vma(cur) {
                Some(v) if Self::allows(v.prot, access) => cur = v.end,
                _ => return false,
            }
        }
        true
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
        self.vmas.values()
    }

    /// The first page at or after `va` and below `end` with a valid leaf entry; whole missing
    /// tables are stepped over, so sparse giant mappings cost little. For core dumps.
    pub fn next_mapped(&self, va: usize, end: usize) -> Option<usize> {
        let mut va = va & !(PAGE - 1);
        'outer: while va < end {
            let mut t = self.root;
            for level in 0..4 {
                let shift = 39 - 9 * level;
                let idx = (va >> shift) & 511;
                // SAFETY: t is a table frame of this address space (linear-mapped); idx < 512.
                let e = unsafe { ptr::read_volatile(table(t).add(idx)) };
                if e & mmu::DESC_VALID == 0 {
                    // Nothing mapped in this entry's span: go to the next one.
                    va = ((va >> shift) + 1) << shift;
                    continue 'outer;
                }
                if level == 3 {
                    return Some(va);
                }
                t = e & PTE_ADDR;
            }
        }
        None
    }

    /// The frame mapped at `va` if the process has a page of its own there (not the shared
    /// zero page), and whether its entry is writable; nothing is faulted in. For core dumps,
    /// where a page never touched reads as zero.
    pub fn dump_frame(&mut self, va: usize) -> Option<(u64, bool)> {
        let slot = self.pte_slot(va & !(PAGE - 1), false)?;
        // SAFETY: slot is a leaf entry of this address space's tables.
        let e = unsafe { ptr::read_volatile(slot) };
        if e & mmu::DESC_VALID == 0 {
            return None;
        }
        let pa = e & PTE_ADDR;
        (pa != zero_page()).then_some((pa, e & mmu::AP_RO == 0))
    }
}

impl SharedMem {
    pub fn new() -> Arc<SharedMem> {
        Arc::new(SharedMem {
            pages: Mutex::new(BTreeMap::new()),
        })
    }
}

/// Where every process finds the signal-return trampoline (Linux puts it in the vDSO; Svelt
/// has a one-page "sigpage" just above the main stack).
pub const SIGPAGE: usize = STACK_TOP;
/// The handler return address for actions without SA_RESTORER: `mov x8, #139; svc #0`.
pub const SIGTRAMP: usize = SIGPAGE + 4;

static SIGPAGE_OBJ: spin::Once<Arc<SharedMem>> = spin::Once::new();

fn sigpage_obj() -> SysResult<Arc<SharedMem>> {
    if let Some(o) = SIGPAGE_OBJ.get() {
        return Ok(o.clone());
    }
    let page = Page::new_user().ok_or(Errno::ENOMEM)?;
    let pa = page.pa();
    // nop (so unwinders looking one instruction back stay inside); mov x8, #__NR_rt_sigreturn;
    // svc #0.
    let code: [u32; 3] = [0xd503_201f, 0xd280_1168, 0xd400_0001];
    // SAFETY: a fresh, linear-mapped frame owned here.
    unsafe { ptr::copy_nonoverlapping(code.as_ptr(), phys_to_virt(pa) as *mut u32, code.len()) };
    let obj = Arc::new(SharedMem {
        pages: Mutex::new(BTreeMap::from([(0, page)])),
    });
    Ok(SIGPAGE_OBJ.call_once(|| obj).clone())
}

impl AddrSpace {
    /// Maps the signal-return trampoline page.
    pub fn map_sigpage(&mut self) -> SysResult<()> {
        let obj = sigpage_obj()?;
        self.map(
            SIGPAGE,
            SIGPAGE + PAGE,
            Prot(Prot::READ | Prot::EXEC),
            Backing::Shared(obj, 0),
        )
    }
}

impl Drop for AddrSpace {
    fn drop(&mut self) {
        let ranges: Vec<(usize, usize)> = self.vmas.values().map(|v| (v.start, v.end)).collect();
        for (s, e) in ranges {
            self.clear_ptes(s, e, false);
        }
        self.vmas.clear();
        free_tables(self.root, 0);
        free_asid(self.asid);
    }
}

/// The next address a missing last-level table could cover (the next 2 MiB boundary).
fn skip_missing_table(va: usize) -> usize {
    (va | 0x1f_ffff) + 1
}

/// Frees a table and the tables below it (leaf frames were freed with their VMAs).
fn free_tables(pa: u64, level: usize) {
    if level < 3 {
        for i in 0..512 {
            // SAFETY: pa is a table frame of a dying address space; i < 512.
            let e = unsafe { ptr::read_volatile(table(pa).add(i)) };
            if e & mmu::DESC_VALID != 0 {
                free_tables(e & PTE_ADDR, level + 1);
            }
        }
    }
    frame::TABLE_PAGES.fetch_sub(1, Ordering::Relaxed);
    frame::free(pa, 1);
}
