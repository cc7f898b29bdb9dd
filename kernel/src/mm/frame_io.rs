//! Copies between byte slices and physical frames, checked against the frame's bounds: code
//! outside `mm` reads and writes a frame's bytes through these, never through a pointer of its
//! own (the idea of Asterinas OSTD's VmReader/VmWriter, reduced to single frames).
//!
//! A reader or writer borrows whatever keeps its frame allocated — a `Page` (a reference held)
//! or a locked address space whose page table maps the frame — so it cannot outlive the frame.
//! The bytes are only ever copied, never lent out as a Rust reference: another CPU may write
//! the same frame meanwhile through a shared mapping, as on any kernel.

use crate::arch::mmu::{phys_to_virt, PAGE_SIZE};
use core::marker::PhantomData;

/// Panics unless `[off, off + len)` lies within one frame: a caller computing offsets wrongly
/// is a kernel bug.
#[inline(always)]
fn check(off: usize, len: usize) {
    assert!(
        off <= PAGE_SIZE && len <= PAGE_SIZE - off,
        "frame access at {off:#x}+{len:#x} past the frame"
    );
}

/// Read access to one frame's bytes for the lifetime `'a`.
pub struct FrameReader<'a> {
    base: *const u8,
    _frame: PhantomData<&'a ()>,
}

impl FrameReader<'_> {
    /// # Safety
    /// The frame at `pa` is linear-mapped RAM and stays allocated for the reader's lifetime.
    pub(super) unsafe fn new(pa: u64) -> Self {
        FrameReader {
            base: phys_to_virt(pa) as *const u8,
            _frame: PhantomData,
        }
    }

    /// Copies `dst.len()` bytes from offset `off` of the frame.
    #[inline]
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        check(off, dst.len());
        // SAFETY: `new`'s contract keeps the frame mapped and allocated; `check` keeps the
        // source within it; `dst` is a kernel buffer, so the two cannot overlap.
        unsafe { core::ptr::copy_nonoverlapping(self.base.add(off), dst.as_mut_ptr(), dst.len()) }
    }
}

/// Write access to one frame's bytes for the lifetime `'a`.
pub struct FrameWriter<'a> {
    base: *mut u8,
    _frame: PhantomData<&'a ()>,
}

impl FrameWriter<'_> {
    /// # Safety
    /// As `FrameReader::new`, and the frame's owner lets its bytes be written.
    pub(super) unsafe fn new(pa: u64) -> Self {
        FrameWriter {
            base: phys_to_virt(pa) as *mut u8,
            _frame: PhantomData,
        }
    }

    /// Copies `src` to offset `off` of the frame.
    #[inline]
    pub fn write(&self, off: usize, src: &[u8]) {
        check(off, src.len());
        // SAFETY: as in `FrameReader::read`, the other way round.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.base.add(off), src.len()) }
    }

    /// Zeroes the frame from offset `off` to its end.
    #[inline]
    pub fn zero_from(&self, off: usize) {
        check(off, 0);
        // SAFETY: `new`'s contract; `check` keeps `off` within the frame.
        unsafe { core::ptr::write_bytes(self.base.add(off), 0, PAGE_SIZE - off) }
    }
}
