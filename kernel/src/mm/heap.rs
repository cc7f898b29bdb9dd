//! The kernel heap (`alloc`), carved from the frame allocator at boot.
//!
//! Interrupt handlers allocate too (the timer's list of tasks to wake, a signal's thread list),
//! so the heap's lock is only ever taken with IRQs masked: an interrupt arriving while its own
//! CPU held the lock would otherwise spin on it forever.

use crate::arch::aarch64::cpu;
use crate::arch::aarch64::mmu::phys_to_virt;
use core::alloc::{GlobalAlloc, Layout};
use linked_list_allocator::LockedHeap;

struct IrqSafeHeap(LockedHeap);

// SAFETY: forwards to LockedHeap (a correct allocator) with IRQs masked around each call.
unsafe impl GlobalAlloc for IrqSafeHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let daif = cpu::irq_save();
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc(layout) };
        cpu::irq_restore(daif);
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let daif = cpu::irq_save();
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(ptr, layout) };
        cpu::irq_restore(daif);
    }
}

#[global_allocator]
static HEAP: IrqSafeHeap = IrqSafeHeap(LockedHeap::empty());

/// Gives the heap the free RAM `[pa, pa + bytes)`. The frame allocator itself allocates from
/// the heap, so the heap comes first, straight from a free range.
///
/// # Safety
/// The range is free, linear-mapped RAM that nothing else will use.
pub unsafe fn init(pa: u64, bytes: usize) {
    // SAFETY: the caller's contract.
    unsafe { HEAP.0.lock().init(phys_to_virt(pa) as *mut u8, bytes) };
}
