//! The kernel heap (`alloc`): grows from the frame allocator and gives memory back to it.
//!
//! Objects up to 2 KiB come from slabs: single frames cut into equal power-of-two slots, one
//! list of partly used slabs per size, the free slots of a slab chained through the slots
//! themselves and its bookkeeping in the frame's `PageInfo`. A slab whose last object is freed
//! goes back to the frame allocator (one empty slab per size is kept to avoid ping-pong).
//! Anything larger is a block of whole frames from the buddy allocator.
//!
//! Interrupt handlers allocate too (the timer's list of tasks to wake, a signal's thread list),
//! so the heap's lock is only ever taken with IRQs masked. Lock order: heap → frames.

use super::frame::{self, PageInfo, KIND_SLAB};
use crate::arch::mmu::{phys_to_virt, virt_to_phys, PAGE_SIZE};
use crate::sync::IrqLock;
use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

/// Slot sizes 16, 32, ..., 2048.
const CLASSES: usize = 8;
const MIN_SHIFT: usize = 4;

struct Slabs {
    /// Per class: the first partly used slab (PFN + 1; 0 for none), linked through PageInfo.
    partial: [u32; CLASSES],
    /// Per class: how many slabs on the partial list have no object in use (at most one).
    empty: [u32; CLASSES],
}

static SLABS: IrqLock<Slabs> = IrqLock::new(Slabs {
    partial: [0; CLASSES],
    empty: [0; CLASSES],
});

/// Blocks from this order up (128 KiB) keep out of the frame reserve.
const LARGE_ORDER: usize = 5;

/// Bytes handed out (requested sizes), for /proc/meminfo.
pub static IN_USE: AtomicUsize = AtomicUsize::new(0);

fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(1 << MIN_SHIFT);
    let shift = size.next_power_of_two().trailing_zeros() as usize;
    (shift - MIN_SHIFT < CLASSES).then_some(shift - MIN_SHIFT)
}

fn slot_size(class: usize) -> usize {
    1 << (class + MIN_SHIFT)
}

fn pfn_link(pa: u64) -> u32 {
    (pa / PAGE_SIZE as u64) as u32 + 1
}

fn link_pa(link: u32) -> u64 {
    (link as u64 - 1) * PAGE_SIZE as u64
}

// The slab word of PageInfo: objects in use (low 16 bits), first free slot offset + 1 (high).
fn slab_get(pi: &PageInfo) -> (u32, u32) {
    let v = pi.slab.load(Ordering::Relaxed);
    (v & 0xffff, v >> 16)
}

fn slab_set(pi: &PageInfo, inuse: u32, free: u32) {
    pi.slab.store(inuse | (free << 16), Ordering::Relaxed);
}

impl Slabs {
    fn push_partial(&mut self, class: usize, pa: u64) {
        let pi = frame::info(pa);
        let head = self.partial[class];
        pi.next.store(head, Ordering::Relaxed);
        pi.prev.store(0, Ordering::Relaxed);
        if head != 0 {
            frame::info(link_pa(head))
                .prev
                .store(pfn_link(pa), Ordering::Relaxed);
        }
        self.partial[class] = pfn_link(pa);
    }

    fn unlink_partial(&mut self, class: usize, pa: u64) {
        let pi = frame::info(pa);
        let (next, prev) = (
            pi.next.load(Ordering::Relaxed),
            pi.prev.load(Ordering::Relaxed),
        );
        if prev == 0 {
            self.partial[class] = next;
        } else {
            frame::info(link_pa(prev))
                .next
                .store(next, Ordering::Relaxed);
        }
        if next != 0 {
            frame::info(link_pa(next))
                .prev
                .store(prev, Ordering::Relaxed);
        }
        pi.next.store(0, Ordering::Relaxed);
        pi.prev.store(0, Ordering::Relaxed);
    }

    /// A fresh slab for `class`: every slot chained free, on the partial list.
    fn grow(&mut self, class: usize) -> Option<u64> {
        let pa = {
            let pa = frame::alloc_order(0)?;
            frame::SLAB_PAGES.fetch_add(1, Ordering::Relaxed);
            let size = slot_size(class);
            let base = phys_to_virt(pa);
            for off in (0..PAGE_SIZE).step_by(size) {
                let next = if off + size < PAGE_SIZE {
                    (off + size + 1) as u64
                } else {
                    0
                };
                // SAFETY: the frame is ours (just allocated), linear-mapped; off is a slot
                // start inside it, 8-aligned.
                unsafe { ((base + off) as *mut u64).write(next) };
            }
            let pi = frame::info(pa);
            pi.kind.store(KIND_SLAB | class as u32, Ordering::Relaxed);
            slab_set(pi, 0, 1);
            pa
        };
        self.push_partial(class, pa);
        self.empty[class] += 1;
        Some(pa)
    }

    fn alloc(&mut self, class: usize) -> *mut u8 {
        let pa = match self.partial[class] {
            0 => match self.grow(class) {
                Some(pa) => pa,
                None => return core::ptr::null_mut(),
            },
            link => link_pa(link),
        };
        let pi = frame::info(pa);
        let (inuse, free) = slab_get(pi);
        if inuse == 0 {
            self.empty[class] -= 1;
        }
        let slot = phys_to_virt(pa) + free as usize - 1;
        // SAFETY: `free` names a free slot of this slab, whose first word links the next one.
        let next = unsafe { (slot as *const u64).read() } as u32;
        slab_set(pi, inuse + 1, next);
        if next == 0 {
            self.unlink_partial(class, pa);
        }
        slot as *mut u8
    }

    fn free(&mut self, class: usize, p: *mut u8) {
        let va = p as usize;
        let pa = virt_to_phys(va & !(PAGE_SIZE - 1));
        let pi = frame::info(pa);
        let (inuse, free) = slab_get(pi);
        // SAFETY: p is a slot of this slab being returned; its first word becomes the link.
        unsafe { (p as *mut u64).write(free as u64) };
        let was_full = free == 0;
        slab_set(pi, inuse - 1, (va & (PAGE_SIZE - 1)) as u32 + 1);
        if was_full {
            self.push_partial(class, pa);
        }
        if inuse == 1 {
            // Now empty: keep one per class (it stays on the partial list), release others.
            if self.empty[class] == 0 {
                self.empty[class] = 1;
            } else {
                self.unlink_partial(class, pa);
                self.release(pa);
            }
        }
    }

    fn release(&mut self, pa: u64) {
        frame::SLAB_PAGES.fetch_sub(1, Ordering::Relaxed);
        frame::free_order(pa, 0);
    }
}

struct Heap;

// SAFETY: slots are handed out once until freed (the free chain is only changed under the
// heap lock), each at least as large and as aligned as the layout (power-of-two slots inside
// a page-aligned frame); large blocks are whole buddy blocks, aligned to their size.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = match class_of(layout) {
            Some(class) => SLABS.lock().alloc(class),
            None => {
                let pages = layout.size().div_ceil(PAGE_SIZE);
                let order = frame::order_for(pages)
                    .max(frame::order_for(layout.align().div_ceil(PAGE_SIZE)));
                // Blocks this large are buffers sized by what a program asked for (executable
                // images, pipe contents, descriptor tables): they do not touch the reserve
                // kept for the kernel's small objects, and failing is ENOMEM to the caller.
                let got = if order >= LARGE_ORDER {
                    frame::alloc_order_user(order)
                } else {
                    frame::alloc_order(order)
                };
                match got {
                    Some(pa) => {
                        frame::HEAP_LARGE_PAGES.fetch_add(1 << order, Ordering::Relaxed);
                        phys_to_virt(pa) as *mut u8
                    }
                    None => core::ptr::null_mut(),
                }
            }
        };
        if !p.is_null() {
            IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        match class_of(layout) {
            Some(class) => SLABS.lock().free(class, ptr),
            None => {
                let pages = layout.size().div_ceil(PAGE_SIZE);
                let order = frame::order_for(pages)
                    .max(frame::order_for(layout.align().div_ceil(PAGE_SIZE)));
                frame::HEAP_LARGE_PAGES.fetch_sub(1 << order, Ordering::Relaxed);
                frame::free_order(virt_to_phys(ptr as usize), order);
            }
        }
    }
}

#[global_allocator]
static HEAP: Heap = Heap;
