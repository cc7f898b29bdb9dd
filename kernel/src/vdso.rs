//! The vDSO (linux-vdso.so.1), mapped into every process as Linux maps arm64's: `[vvar]`, a
//! read-only data page the kernel updates, and just above it `[vdso]`, the shared object
//! kernel/build.rs builds from kernel/vdso/ (clock_gettime, gettimeofday and clock_getres from
//! the counter, and `__kernel_rt_sigreturn`, the return address of handlers installed without
//! SA_RESTORER). AT_SYSINFO_EHDR points at the image.
//!
//! Both are private mappings of page sets every process shares: a write (mprotect then store,
//! or a debugger's breakpoint) copies the page for that process alone.

use crate::mm::aspace::{AddrSpace, Backing, MappedFile, Prot, Vma};
use crate::mm::frame::Page;
use crate::time;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_mm::layout::PAGE_SIZE as PAGE;

#[allow(dead_code)]
mod layout {
    include!("../vdso/layout.rs");
}
mod syms {
    include!(concat!(env!("OUT_DIR"), "/vdso_syms.rs"));
}
use layout::*;

static IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vdso.so"));

const VVAR_SIZE: usize = VVAR_PAGES * PAGE;
const VDSO_SIZE: usize = IMAGE.len().next_multiple_of(PAGE);
// kernel/vdso/vdso.lds places `_vvar` four pages below the image.
const _: () = assert!(VVAR_PAGES == 4);
const _: () = assert!(VVAR_TZ + 8 <= VVAR_SIZE && VVAR_SHIFT.is_multiple_of(4));
const _: () =
    assert!(VVAR_MULT.is_multiple_of(8) && VVAR_RES.is_multiple_of(8) && VVAR_TZ.is_multiple_of(8));

/// The frames of [vvar] or [vdso], mapped as a file is.
struct Pages(Vec<Page>);

impl MappedFile for Pages {
    fn cache_page(&self, index: u64) -> SysResult<Page> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.0.get(i))
            .cloned()
            .ok_or(Errno::EFAULT)
    }
    fn file_ino(&self) -> u64 {
        0
    }
    fn file_perm(&self) -> u32 {
        0
    }
}

struct Vdso {
    vvar: Arc<Pages>,
    text: Arc<Pages>,
}

static VDSO: spin::Once<Vdso> = spin::Once::new();
/// Serialises the writers of [vvar].
static WRITER: spin::Mutex<()> = spin::Mutex::new(());

fn pages(n: usize) -> SysResult<Vec<Page>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Errno::ENOMEM)?;
    for _ in 0..n {
        v.push(Page::new_user().ok_or(Errno::ENOMEM)?);
    }
    Ok(v)
}

fn get() -> SysResult<&'static Vdso> {
    if let Some(v) = VDSO.get() {
        return Ok(v);
    }
    let vvar = pages(VVAR_PAGES)?;
    let text = pages(VDSO_SIZE / PAGE)?;
    for (page, chunk) in text.iter().zip(IMAGE.chunks(PAGE)) {
        // SAFETY: a fresh, linear-mapped frame of PAGE bytes, not yet mapped anywhere.
        unsafe { core::ptr::copy_nonoverlapping(chunk.as_ptr(), page.ptr(), chunk.len()) };
    }
    let v = VDSO.call_once(|| Vdso {
        vvar: Arc::new(Pages(vvar)),
        text: Arc::new(Pages(text)),
    });
    update();
    Ok(v)
}

/// Rewrites [vvar] from the clocks' current values (after boot, clock_settime,
/// settimeofday). Readers retry while the sequence count is odd or has changed.
pub fn update() {
    let Some(v) = VDSO.get() else {
        return;
    };
    let Some(page) = v.vvar.0.first() else {
        return;
    };
    let base = page.ptr();
    let _g = WRITER.lock();
    // SAFETY: the offsets are inside the page and aligned (asserted above); the page lives as
    // long as VDSO; user space only reads it; writers hold WRITER.
    let (seq, shift, mono, real, mult, res, tz) = unsafe {
        (
            AtomicU32::from_ptr(base.add(VVAR_SEQ).cast()),
            AtomicU32::from_ptr(base.add(VVAR_SHIFT).cast()),
            AtomicU64::from_ptr(base.add(VVAR_OFFSET + 8 * KIND_MONO).cast()),
            AtomicU64::from_ptr(base.add(VVAR_OFFSET + 8 * KIND_REAL).cast()),
            AtomicU64::from_ptr(base.add(VVAR_MULT).cast()),
            AtomicU64::from_ptr(base.add(VVAR_RES).cast()),
            AtomicU64::from_ptr(base.add(VVAR_TZ).cast()),
        )
    };
    let s = seq.load(Ordering::Relaxed);
    seq.store(s.wrapping_add(1), Ordering::Relaxed);
    // The odd count is seen before any new field.
    fence(Ordering::Release);
    let (m, sh) = time::conversion();
    shift.store(sh, Ordering::Relaxed);
    mult.store(m, Ordering::Relaxed);
    mono.store(0, Ordering::Relaxed);
    real.store(time::realtime_offset(), Ordering::Relaxed);
    res.store(time::counter_to_ns(1).max(1), Ordering::Relaxed);
    tz.store(time::timezone_word(), Ordering::Relaxed);
    seq.store(s.wrapping_add(2), Ordering::Release);
}

/// Maps [vvar] and [vdso] into a new address space, in the mmap area lowered by a random number
/// of pages (none under ADDR_NO_RANDOMIZE), as exec places the interpreter; returns the
/// image's address (AT_SYSINFO_EHDR).
pub fn map(mm: &mut AddrSpace, persona: u32) -> SysResult<usize> {
    let v = get()?;
    let mut r = [0u8; 2];
    if persona & svelt_abi::uapi::sys::ADDR_NO_RANDOMIZE == 0 {
        crate::fs::dev::fill_random(&mut r);
    }
    let shift = usize::from(u16::from_le_bytes(r)) * PAGE;
    // The free area is taken from the top down: the random gap lies above the mappings. A
    // space too full for the gap goes without it.
    let vvar = mm
        .find_free(VVAR_SIZE + VDSO_SIZE + shift, 0)
        .or_else(|| mm.find_free(VVAR_SIZE + VDSO_SIZE, 0))
        .ok_or(Errno::ENOMEM)?;
    let base = vvar + VVAR_SIZE;
    let file = |p: &Arc<Pages>, maywrite| Backing::File {
        node: p.clone(),
        off: 0,
        shared: false,
        maywrite,
    };
    mm.map(vvar, base, Prot(Prot::READ), file(&v.vvar, false))?;
    mm.map(
        base,
        base + VDSO_SIZE,
        Prot(Prot::READ | Prot::EXEC),
        file(&v.text, true),
    )?;
    mm.exec.vdso = base;
    Ok(base)
}

/// The name /proc/PID/maps gives a mapping of [vvar] or [vdso] (wherever it has moved).
pub fn vma_name(v: &Vma) -> Option<&'static [u8]> {
    let Backing::File { node, .. } = &v.backing else {
        return None;
    };
    let d = VDSO.get()?;
    let key = crate::mm::aspace::file_key(&**node);
    if key == crate::mm::aspace::file_key(&*d.vvar) {
        Some(b"[vvar]")
    } else if key == crate::mm::aspace::file_key(&*d.text) {
        Some(b"[vdso]")
    } else {
        None
    }
}

/// The return address of a handler installed without SA_RESTORER: the current process's
/// `__kernel_rt_sigreturn` (Linux: VDSO_SYMBOL(mm->context.vdso, sigtramp)): where the image's
/// first page is now (mremap may have moved it, as checkpoint/restore tools do), else where
/// exec put it.
pub fn sigtramp(mm: Option<&Mutex<AddrSpace>>) -> u64 {
    let base = mm.map_or(0, |mm| {
        let g = mm.lock();
        let text = VDSO.get().map(|d| crate::mm::aspace::file_key(&*d.text));
        let moved = g
            .vmas()
            .find(|v| match &v.backing {
                Backing::File { node, off: 0, .. } => {
                    Some(crate::mm::aspace::file_key(&**node)) == text
                }
                _ => false,
            })
            .map(|v| v.start);
        moved.unwrap_or(g.exec.vdso)
    });
    (base + syms::RT_SIGRETURN) as u64
}
