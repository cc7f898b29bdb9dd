//! Memory: the kernel map (built from the DTB), the physical frame allocator, the kernel heap
//! and user address spaces.

pub mod aspace;
pub mod frame;
pub mod frame_io;
pub mod heap;
mod pgtable;
pub mod place;
pub mod uaccess;

/// `n` zero bytes on the heap, or ENOMEM: for buffers whose size a user program chooses.
pub fn try_zeroed_vec(n: usize) -> SysResult<Vec<u8>> {
    try_vec(n, 0)
}

/// `n` copies of `v` on the heap, or ENOMEM (`vec![v; n]` would stop the kernel instead):
/// for every buffer a syscall allocates.
pub fn try_vec<T: Clone>(n: usize, v: T) -> SysResult<Vec<T>> {
    let mut out = Vec::new();
    try_reserve(&mut out, n)?;
    out.resize(n, v);
    Ok(out)
}

/// The items of `it` in a vector, or ENOMEM (`collect` would stop the kernel instead).
pub fn try_collect<T>(it: impl IntoIterator<Item = T>) -> SysResult<Vec<T>> {
    let it = it.into_iter();
    let mut v = Vec::new();
    try_reserve(&mut v, it.size_hint().0)?;
    for x in it {
        try_reserve(&mut v, 1)?;
        v.push(x);
    }
    Ok(v)
}

/// Room for `n` more elements in `v`, or ENOMEM: what makes a following `push` or `extend`
/// of at most `n` elements unable to fail.
pub fn try_reserve<T>(v: &mut Vec<T>, n: usize) -> SysResult<()> {
    v.try_reserve(n).map_err(|_| Errno::ENOMEM)
}

use crate::arch::mmu::{self, Prot, KIMAGE_VADDR, LINEAR_BASE};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use svelt_abi::boot::memrange::Range;
use svelt_abi::uapi::errno::{Errno, SysResult};

unsafe extern "C" {
    static __image_start: u8;
    static __text_end: u8;
    static __rodata_end: u8;
    static __image_end: u8;
}

/// The kernel image's link-time sections.
pub struct ImageLayout {
    pub start: usize,
    pub text_end: usize,
    pub rodata_end: usize,
    pub end: usize,
}

pub fn image_layout() -> ImageLayout {
    ImageLayout {
        start: &raw const __image_start as usize,
        text_end: &raw const __text_end as usize,
        rodata_end: &raw const __rodata_end as usize,
        end: &raw const __image_end as usize,
    }
}

static IMAGE_PA: AtomicU64 = AtomicU64::new(0);

/// Where the loader put the kernel image.
pub fn image_pa() -> u64 {
    IMAGE_PA.load(Ordering::Relaxed)
}

/// Physical range the image occupies, rounded out to 2 MiB (the early map's block size; the
/// frame allocator never hands this out).
pub fn image_phys_range(image_pa: u64) -> Range {
    let l = image_layout();
    Range::new(
        image_pa,
        image_pa + ((l.end - l.start) as u64).next_multiple_of(2 << 20),
    )
}

/// Builds the kernel map: the image W^X at KIMAGE_VADDR and every RAM region in the linear map
/// (the image's own alias read-only).
pub fn build_kernel_map(image_pa: u64, ram: &[Range]) -> Result<(), mmu::MapError> {
    IMAGE_PA.store(image_pa, Ordering::Relaxed);
    mmu::init(image_pa);
    let l = image_layout();
    let pa = |va: usize| (va - KIMAGE_VADDR) as u64 + image_pa;
    mmu::map(l.start, pa(l.start), l.text_end - l.start, Prot::KernelText)?;
    mmu::map(
        l.text_end,
        pa(l.text_end),
        l.rodata_end - l.text_end,
        Prot::KernelRo,
    )?;
    mmu::map(
        l.rodata_end,
        pa(l.rodata_end),
        l.end - l.rodata_end,
        Prot::KernelRw,
    )?;
    let image = Range::new(image_pa, pa(l.end));
    for r in ram {
        let r = Range::new(r.start & !0xfff, r.end.next_multiple_of(0x1000));
        let linear = |p: u64| LINEAR_BASE + p as usize;
        // RAM below and above the image read-write; the image's alias read-only.
        let below = Range::new(r.start, image.start.min(r.end));
        let above = Range::new(image.end.max(r.start), r.end);
        let inside = Range::new(image.start.max(r.start), image.end.min(r.end));
        for (part, prot) in [
            (below, Prot::KernelRw),
            (inside, Prot::KernelRo),
            (above, Prot::KernelRw),
        ] {
            if !part.is_empty() {
                mmu::map(
                    linear(part.start),
                    part.start,
                    (part.end - part.start) as usize,
                    prot,
                )?;
            }
        }
    }
    Ok(())
}
