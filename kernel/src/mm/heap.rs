//! The kernel heap (`alloc`), carved from the frame allocator at boot.

use crate::arch::aarch64::mmu::phys_to_virt;
use linked_list_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap = LockedHeap::empty();

/// Gives the heap the free RAM `[pa, pa + bytes)`. The frame allocator itself allocates from
/// the heap, so the heap comes first, straight from a free range.
///
/// # Safety
/// The range is free, linear-mapped RAM that nothing else will use.
pub unsafe fn init(pa: u64, bytes: usize) {
    // SAFETY: the caller's contract.
    unsafe { HEAP.lock().init(phys_to_virt(pa) as *mut u8, bytes) };
}
