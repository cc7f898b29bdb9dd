//! Physical page frames: a buddy allocator over every free RAM range.

use crate::arch::aarch64::mmu::{phys_to_virt, PAGE_SIZE};
use crate::sync::IrqLock;
use buddy_system_allocator::FrameAllocator;
use core::sync::atomic::{AtomicUsize, Ordering};
use svelt_abi::memrange::Range;

const PAGE: u64 = PAGE_SIZE as u64;

static FRAMES: IrqLock<FrameAllocator<32>> = IrqLock::new(FrameAllocator::new());
static TOTAL: IrqLock<usize> = IrqLock::new(0);
/// Frames handed out (counting the buddy allocator's power-of-two rounding).
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

/// Gives a free physical range to the allocator.
pub fn add(r: Range) {
    let (first, end) = (r.start.div_ceil(PAGE), r.end / PAGE);
    if first < end {
        FRAMES.lock().add_frame(first as usize, end as usize);
        *TOTAL.lock() += (end - first) as usize;
    }
}

/// `count` contiguous zeroed frames, aligned to `count` rounded up to a power of two.
/// Returns the physical address.
pub fn alloc_zeroed(count: usize) -> Option<u64> {
    let pfn = FRAMES.lock().alloc(count)?;
    ALLOCATED.fetch_add(count.next_power_of_two(), Ordering::Relaxed);
    let pa = pfn as u64 * PAGE;
    // SAFETY: the frames were free RAM, linear-mapped read-write, and now belong to the caller.
    unsafe { core::ptr::write_bytes(phys_to_virt(pa) as *mut u8, 0, count * PAGE_SIZE) };
    Some(pa)
}

/// Returns frames obtained from `alloc_zeroed`.
pub fn free(pa: u64, count: usize) {
    FRAMES.lock().dealloc((pa / PAGE) as usize, count);
    ALLOCATED.fetch_sub(count.next_power_of_two(), Ordering::Relaxed);
}

/// Frames managed, in total.
pub fn total() -> usize {
    *TOTAL.lock()
}

/// Frames free now.
pub fn free_count() -> usize {
    total().saturating_sub(ALLOCATED.load(Ordering::Relaxed))
}
