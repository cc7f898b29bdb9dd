//! Physical page frames: a buddy allocator whose free lists live in the free frames themselves,
//! and a descriptor per frame (`PageInfo`, like Linux's `struct page`) holding its reference
//! count, its state in the buddy system, and the slab bookkeeping of `heap`.
//!
//! The allocator never allocates from the heap (the heap grows from it), so the two can nest:
//! heap lock → frame lock, never the other way.
//!
//! Frames a user program causes to be allocated (its pages, its page tables, page-cache pages,
//! kernel stacks for its threads) come from `alloc_user`, which refuses to dip below a reserve
//! kept for the kernel's own small allocations: user demand ends in ENOMEM, EAGAIN or an
//! out-of-memory kill, while the heap can still find the few pages it needs to finish the
//! work it is doing (an exit, a wait).

use super::frame_io::{FrameReader, FrameWriter};
use crate::arch::mmu::{phys_to_virt, PAGE_SIZE};
use crate::sync::IrqLock;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use svelt_abi::boot::memrange::Range;

const PAGE: u64 = PAGE_SIZE as u64;
/// Largest block: 2^MAX_ORDER frames (1 GiB).
pub const MAX_ORDER: usize = 18;

/// One frame's descriptor. Plain atomics: the buddy fields are only touched under the frame
/// lock, the slab fields under the heap lock, `refs` by anyone holding a reference.
#[repr(C)]
pub struct PageInfo {
    /// References to an allocated frame (page-table entries, page-cache slots, `Page`s).
    pub refs: AtomicU32,
    /// `FREE | order` at the head of a free buddy block, `SLAB | class` for a heap slab
    /// page, 0 otherwise.
    pub kind: AtomicU32,
    /// Slab: objects in use (low 16 bits) and the offset of the first free object + 1 (high).
    pub slab: AtomicU32,
    /// Links of a free block (buddy) or a partially used slab page: PFN + 1, 0 for none.
    pub next: AtomicU32,
    pub prev: AtomicU32,
    _pad: u32,
}

const _: () = assert!(core::mem::size_of::<PageInfo>() == 24);

pub const KIND_FREE: u32 = 1 << 31;
pub const KIND_SLAB: u32 = 1 << 30;
/// A private anonymous page of some process (counted as AnonPages).
pub const KIND_ANON: u32 = 1 << 29;

/// The descriptors, one per frame from `BASE_PFN`, in a region carved from RAM at boot.
static MAP: AtomicUsize = AtomicUsize::new(0);
static BASE_PFN: AtomicU64 = AtomicU64::new(0);
static NPAGES: AtomicUsize = AtomicUsize::new(0);

struct Buddy {
    /// Heads of the free lists, PFN + 1 (0: empty).
    heads: [u32; MAX_ORDER + 1],
}

static BUDDY: IrqLock<Buddy> = IrqLock::new(Buddy {
    heads: [0; MAX_ORDER + 1],
});
static TOTAL: AtomicUsize = AtomicUsize::new(0);
static FREE: AtomicUsize = AtomicUsize::new(0);
/// Frames kept back from `alloc_user` for the kernel's own allocations.
static RESERVE: AtomicUsize = AtomicUsize::new(0);

/// Counters for /proc/meminfo.
pub static SLAB_PAGES: AtomicUsize = AtomicUsize::new(0);
pub static HEAP_LARGE_PAGES: AtomicUsize = AtomicUsize::new(0);
pub static CACHE_PAGES: AtomicUsize = AtomicUsize::new(0);
pub static ANON_PAGES: AtomicUsize = AtomicUsize::new(0);
pub static TABLE_PAGES: AtomicUsize = AtomicUsize::new(0);
pub static KSTACK_PAGES: AtomicUsize = AtomicUsize::new(0);

/// Sets up the descriptor array for every frame in `[lo, hi)` (the span of all RAM), taking
/// its memory from the start of the first free range big enough; returns what is left of the
/// free ranges' first piece used (the caller passes the ranges on to `add`).
///
/// # Safety
/// `store` is free, linear-mapped RAM that nothing else uses, at least `descriptors_size`
/// bytes long; called once, on the boot CPU, before any other function here.
pub unsafe fn init(lo: u64, hi: u64, store: u64) {
    let base = lo / PAGE;
    let n = (hi.div_ceil(PAGE) - base) as usize;
    let va = phys_to_virt(store);
    // SAFETY: `init`'s contract: the store is unused RAM of at least `descriptors_size`
    // bytes, linear-mapped; all-zero is a valid PageInfo (no references, not free, not slab).
    unsafe { core::ptr::write_bytes(va as *mut u8, 0, n * core::mem::size_of::<PageInfo>()) };
    BASE_PFN.store(base, Ordering::Relaxed);
    NPAGES.store(n, Ordering::Relaxed);
    MAP.store(va, Ordering::Release);
}

/// Bytes of descriptors needed for RAM spanning `[lo, hi)`.
pub fn descriptors_size(lo: u64, hi: u64) -> u64 {
    ((hi.div_ceil(PAGE) - lo / PAGE) * core::mem::size_of::<PageInfo>() as u64)
        .next_multiple_of(PAGE)
}

/// The descriptor of the frame at `pa`.
pub fn info(pa: u64) -> &'static PageInfo {
    let idx = (pa / PAGE - BASE_PFN.load(Ordering::Relaxed)) as usize;
    assert!(idx < NPAGES.load(Ordering::Relaxed), "no frame at {pa:#x}");
    // SAFETY: MAP points at NPAGES initialised descriptors that live for the kernel's lifetime
    // (set up once by `init`); idx is in bounds.
    unsafe { &*(MAP.load(Ordering::Acquire) as *const PageInfo).add(idx) }
}

fn info_pfn(pfn: u64) -> Option<&'static PageInfo> {
    let base = BASE_PFN.load(Ordering::Relaxed);
    let idx = pfn.checked_sub(base)? as usize;
    (idx < NPAGES.load(Ordering::Relaxed)).then(|| info(pfn * PAGE))
}

fn link_of(pfn: u64) -> u32 {
    pfn as u32 + 1
}

impl Buddy {
    fn push(&mut self, pfn: u64, order: usize) {
        let pi = info(pfn * PAGE);
        let head = self.heads[order];
        pi.kind.store(KIND_FREE | order as u32, Ordering::Relaxed);
        pi.next.store(head, Ordering::Relaxed);
        pi.prev.store(0, Ordering::Relaxed);
        if head != 0 {
            info((head as u64 - 1) * PAGE)
                .prev
                .store(link_of(pfn), Ordering::Relaxed);
        }
        self.heads[order] = link_of(pfn);
    }

    fn unlink(&mut self, pfn: u64, order: usize) {
        let pi = info(pfn * PAGE);
        let (next, prev) = (
            pi.next.load(Ordering::Relaxed),
            pi.prev.load(Ordering::Relaxed),
        );
        if prev == 0 {
            self.heads[order] = next;
        } else {
            info((prev as u64 - 1) * PAGE)
                .next
                .store(next, Ordering::Relaxed);
        }
        if next != 0 {
            info((next as u64 - 1) * PAGE)
                .prev
                .store(prev, Ordering::Relaxed);
        }
        pi.kind.store(0, Ordering::Relaxed);
    }

    fn alloc(&mut self, order: usize) -> Option<u64> {
        let k = (order..=MAX_ORDER).find(|&k| self.heads[k] != 0)?;
        let pfn = self.heads[k] as u64 - 1;
        self.unlink(pfn, k);
        // Split: the upper halves go back on the smaller lists.
        for o in (order..k).rev() {
            self.push(pfn + (1 << o), o);
        }
        Some(pfn)
    }

    fn free(&mut self, mut pfn: u64, mut order: usize) {
        while order < MAX_ORDER {
            let buddy = pfn ^ (1 << order);
            match info_pfn(buddy) {
                Some(b) if b.kind.load(Ordering::Relaxed) == KIND_FREE | order as u32 => {
                    self.unlink(buddy, order);
                    pfn &= !(1 << order);
                    order += 1;
                }
                _ => break,
            }
        }
        self.push(pfn, order);
    }
}

/// Gives a free physical range to the allocator.
pub fn add(r: Range) {
    let (mut pfn, end) = (r.start.div_ceil(PAGE), r.end / PAGE);
    let mut b = BUDDY.lock();
    while pfn < end {
        // The largest naturally aligned block that starts here and fits.
        let mut order = (pfn.trailing_zeros() as usize).min(MAX_ORDER);
        while pfn + (1 << order) > end {
            order -= 1;
        }
        b.free(pfn, order);
        TOTAL.fetch_add(1 << order, Ordering::Relaxed);
        FREE.fetch_add(1 << order, Ordering::Relaxed);
        pfn += 1 << order;
    }
    drop(b);
    // Keep back 1/64 of RAM, within 1..=32 MiB, for the kernel.
    let total = TOTAL.load(Ordering::Relaxed);
    RESERVE.store((total / 64).clamp(256, 8192), Ordering::Relaxed);
}

/// The buddy order serving `count` frames.
pub fn order_for(count: usize) -> usize {
    count.next_power_of_two().trailing_zeros() as usize
}

/// `2^order` contiguous frames (not zeroed), aligned to their size; one reference.
pub fn alloc_order(order: usize) -> Option<u64> {
    if order > MAX_ORDER {
        return None;
    }
    let pfn = BUDDY.lock().alloc(order)?;
    FREE.fetch_sub(1 << order, Ordering::Relaxed);
    let pa = pfn * PAGE;
    info(pa).refs.store(1, Ordering::Relaxed);
    Some(pa)
}

/// `count` contiguous zeroed frames for the kernel, aligned to `count` rounded up to a power
/// of two. Returns the physical address.
pub fn alloc_zeroed(count: usize) -> Option<u64> {
    let pa = alloc_order(order_for(count))?;
    zero(pa, count);
    Some(pa)
}

/// Like `alloc_zeroed`, for memory a user program asked for: fails while fewer than the
/// kernel's reserve of frames would be left.
pub fn alloc_user(count: usize) -> Option<u64> {
    let want = count.next_power_of_two();
    if FREE.load(Ordering::Relaxed) < want + RESERVE.load(Ordering::Relaxed) {
        return None;
    }
    alloc_zeroed(count)
}

/// A zeroed frame for a process's private anonymous memory (counted as AnonPages).
pub fn alloc_anon() -> Option<u64> {
    let pa = alloc_user(1)?;
    info(pa).kind.store(KIND_ANON, Ordering::Relaxed);
    ANON_PAGES.fetch_add(1, Ordering::Relaxed);
    Some(pa)
}

/// Whether a program may cause `count` more frames to be used now (kernel objects it creates:
/// mappings, files, pipe contents) without eating into the kernel's reserve.
pub fn user_can_alloc(count: usize) -> bool {
    FREE.load(Ordering::Relaxed) >= count + RESERVE.load(Ordering::Relaxed)
}

/// Like `alloc_order`, but failing while the reserve would be touched.
pub fn alloc_order_user(order: usize) -> Option<u64> {
    if !user_can_alloc(1 << order) {
        return None;
    }
    alloc_order(order)
}

fn zero(pa: u64, count: usize) {
    // SAFETY: the frames were just taken from the free lists and belong to the caller; they are
    // linear-mapped read-write.
    unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, count * PAGE_SIZE) };
}

/// Returns frames obtained from `alloc_zeroed`/`alloc_user` (same `count`).
pub fn free(pa: u64, count: usize) {
    free_order(pa, order_for(count));
}

pub fn free_order(pa: u64, order: usize) {
    let pi = info(pa);
    pi.refs.store(0, Ordering::Relaxed);
    if pi.kind.swap(0, Ordering::Relaxed) & KIND_ANON != 0 {
        ANON_PAGES.fetch_sub(1, Ordering::Relaxed);
    }
    BUDDY.lock().free(pa / PAGE, order);
    FREE.fetch_add(1 << order, Ordering::Relaxed);
}

/// Frames managed, in total.
pub fn total() -> usize {
    TOTAL.load(Ordering::Relaxed)
}

/// Frames free now.
pub fn free_count() -> usize {
    FREE.load(Ordering::Relaxed)
}

/// Takes another reference to a single allocated frame.
pub fn get(pa: u64) {
    info(pa).refs.fetch_add(1, Ordering::Relaxed);
}

/// Drops a reference to a single frame; the last one frees it. Returns whether it was freed.
pub fn put(pa: u64) -> bool {
    let prev = info(pa).refs.fetch_sub(1, Ordering::AcqRel);
    assert!(prev != 0, "frame {pa:#x} released more often than taken");
    if prev == 1 {
        free_order(pa, 0);
        true
    } else {
        false
    }
}

/// References to a single frame.
pub fn refs(pa: u64) -> u32 {
    info(pa).refs.load(Ordering::Acquire)
}

/// One reference-counted frame, owned: cloning takes a reference, dropping releases it.
pub struct Page(u64);

impl Page {
    /// A zeroed frame for user-caused data (page cache, anonymous memory).
    pub fn new_user() -> Option<Page> {
        let pa = alloc_user(1)?;
        Some(Page(pa))
    }

    /// Gives up the handle without releasing its reference.
    pub fn into_raw(self) -> u64 {
        let pa = self.0;
        core::mem::forget(self);
        pa
    }

    /// The frame's physical address (the handle keeps its reference).
    pub fn pa(&self) -> u64 {
        self.0
    }

    /// The frame through the linear map.
    pub fn ptr(&self) -> *mut u8 {
        phys_to_virt(self.0) as *mut u8
    }

    /// Checked copies out of the frame.
    pub fn reader(&self) -> FrameReader<'_> {
        // SAFETY: this handle holds a reference to the frame, so it stays allocated (and
        // linear-mapped, as all RAM is) while the reader borrows the handle.
        unsafe { FrameReader::new(self.0) }
    }

    /// Checked copies into the frame.
    pub fn writer(&self) -> FrameWriter<'_> {
        // SAFETY: as in `reader`; whoever holds a `Page` may write its bytes (the page cache
        // and the mappings sharing a frame see each other's writes by design).
        unsafe { FrameWriter::new(self.0) }
    }
}

impl Clone for Page {
    fn clone(&self) -> Page {
        get(self.0);
        Page(self.0)
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        put(self.0);
    }
}
