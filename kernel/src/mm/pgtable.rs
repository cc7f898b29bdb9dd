//! A user address space's TTBR0 translation tables, tagged with an ASID: the page-table side
//! that `svelt_mm::Mm` drives (unmap, protect, remap, fork), and the fault path that fills
//! entries, with copy-on-write.
//!
//! Every present leaf entry holds one reference on its frame (`frame::get`/`put`). Private
//! pages a fork shared are read-only until a write copies them (or finds itself holding the
//! last reference). Reads of untouched private anonymous memory map one shared zero page.

use super::frame;
use crate::arch::cpu::barrier_after_table_write;
use crate::arch::mmu::{self, phys_to_virt, PAGE_SIZE};
use alloc::vec::Vec;
use core::ptr;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_mm::{FaultError, PageTable, Prot};

const PAGE: usize = PAGE_SIZE;
const PTE_ADDR: u64 = mmu::ADDR_MASK;

/// The zero page: mapped read-only wherever private anonymous memory is read before it is
/// written. Holds a permanent reference, so it is never freed.
static ZERO_PAGE: spin::Once<u64> = spin::Once::new();

pub fn zero_page() -> u64 {
    *ZERO_PAGE.call_once(|| frame::alloc_zeroed(1).expect("a frame for the zero page at boot"))
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

/// The next address a missing last-level table could cover (the next 2 MiB boundary).
fn skip_missing_table(va: usize) -> usize {
    (va | 0x1f_ffff) + 1
}

/// Entry bits for a page of a mapping with `prot`; `exclusive` is false where a private
/// mapping's frame is shared (copy-on-write): such entries stay read-only.
fn pte_bits_for(prot: Prot, exclusive: bool) -> u64 {
    let p = if exclusive {
        prot
    } else {
        Prot(prot.0 & !Prot::WRITE)
    };
    let mut bits = pte_bits(p);
    if prot.rwx() != 0 && !p.r() && !p.x() && prot.w() {
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
        | mmu::NG;
    if prot.rwx() == 0 {
        // PROT_NONE: keep the frame but make every access fault (no EL0 access bit, EL1
        // read-only; the kernel never uses user VAs).
        return bits | mmu::PXN | mmu::AP_RO | mmu::UXN;
    }
    bits |= mmu::AP_EL0;
    if prot.w() {
        bits |= mmu::WRITABLE;
    } else {
        bits |= mmu::AP_RO;
    }
    if prot.shadow() {
        // A guarded control stack: its own permission index (no PXN; arch::gcs), never
        // executable.
        return bits | mmu::UXN;
    }
    bits |= mmu::PXN;
    if !prot.x() {
        bits |= mmu::UXN;
    }
    bits
}

pub struct UserTable {
    root: u64,
    asid: u16,
    /// Leaf entries present (frames mapped), for /proc.
    pages: usize,
}

impl UserTable {
    /// An empty table with an ASID of its own.
    pub fn new() -> SysResult<UserTable> {
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
        Ok(UserTable {
            root,
            asid,
            pages: 0,
        })
    }

    /// Makes this table TTBR0's on this CPU.
    pub fn activate(&self) {
        mmu::set_user_table(self.root, self.asid);
    }

    /// The TTBR0 value that makes this table current (root and ASID), fixed for its life.
    pub fn ttbr0(&self) -> u64 {
        mmu::user_ttbr0(self.root, self.asid)
    }

    pub fn pages(&self) -> usize {
        self.pages
    }

    /// The leaf entry slot for `va`, creating tables on the way if `create`.
    fn slot(&mut self, va: usize, create: bool) -> Option<*mut u64> {
        let t = self.leaf_table(va, create)?;
        // SAFETY: t is a level-3 table frame of this address space; the index is < 512.
        Some(unsafe { table(t).add((va >> 12) & 511) })
    }

    /// Calls `f(self, va, slot)` for each page `va` in [start, end) (page-aligned) whose
    /// last-level table exists, looking each table up once per 2 MiB instead of once per page
    /// (a fork or an exit crosses whole mappings, most of their pages never touched).
    fn for_each_slot(
        &mut self,
        start: usize,
        end: usize,
        mut f: impl FnMut(&mut Self, usize, *mut u64),
    ) {
        let mut va = start;
        while va < end {
            let next = skip_missing_table(va).min(end);
            if let Some(t) = self.leaf_table(va, false) {
                let base = table(t);
                while va < next {
                    // SAFETY: a live last-level table of this address space; index < 512.
                    f(self, va, unsafe { base.add((va >> 12) & 511) });
                    va += PAGE;
                }
            }
            va = next;
        }
    }

    /// The last-level table covering `va`, creating the tables on the way if `create`.
    fn leaf_table(&mut self, va: usize, create: bool) -> Option<u64> {
        let mut t = self.root;
        for level in 0..3 {
            let idx = (va >> (39 - 9 * level)) & 511;
            // SAFETY: t is a table frame of this address space (linear-mapped); idx < 512.
            let slot = unsafe { table(t).add(idx) };
            // SAFETY: `slot` points into the same table frame, inside its 512 entries.
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
        Some(t)
    }

    /// Resolves an access to `va`, in a mapping with rights `prot` (`shared`: no
    /// copy-on-write), to a physical address. A missing entry is filled with the frame `fill`
    /// supplies (with the reference the entry keeps, and whether it may be writable); a
    /// `write` to a read-only private entry copies its frame unless this is the last
    /// reference. The caller checked that the mapping allows the access.
    pub fn fault(
        &mut self,
        va: usize,
        prot: Prot,
        shared: bool,
        write: bool,
        fill: impl FnOnce() -> Result<(u64, bool), FaultError>,
    ) -> Result<u64, FaultError> {
        let page_va = va & !(PAGE - 1);
        let slot = self.slot(page_va, true).ok_or(FaultError::NoMemory)?;
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
                // SAFETY: `slot` is this address space's leaf entry for the page (from `slot`); only
                // the permission bits change, so no break-before-make is needed.
                unsafe { ptr::write_volatile(slot, pa | pte_bits_for(prot, true)) };
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
            // SAFETY: `slot` is this address space's leaf entry for the page, in a live table frame.
            unsafe { ptr::write_volatile(slot, 0) };
            mmu::flush_tlb_user_page(self.asid, page_va);
            // SAFETY: the same entry, now invalid and flushed; the new frame was just filled.
            unsafe { ptr::write_volatile(slot, new | pte_bits_for(prot, true)) };
            barrier_after_table_write();
            frame::put(pa);
            return Ok(new + off);
        }
        let (pa, exclusive) = fill()?;
        self.pages += 1;
        // SAFETY: `slot` is this address space's leaf entry for the page, in a live table frame;
        // it was invalid, so no TLB entry exists for it.
        unsafe { ptr::write_volatile(slot, pa | pte_bits_for(prot, exclusive)) };
        barrier_after_table_write();
        Ok(pa + off)
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
        let slot = self.slot(va & !(PAGE - 1), false)?;
        // SAFETY: slot is a leaf entry of this address space's tables.
        let e = unsafe { ptr::read_volatile(slot) };
        if e & mmu::DESC_VALID == 0 {
            return None;
        }
        let pa = e & PTE_ADDR;
        (pa != zero_page()).then_some((pa, e & mmu::AP_RO == 0))
    }
}

impl PageTable for UserTable {
    fn unmap(&mut self, start: usize, end: usize) {
        self.for_each_slot(start, end, |t, va, slot| {
            // SAFETY: a leaf entry of this address space.
            let e = unsafe { ptr::read_volatile(slot) };
            if e & mmu::DESC_VALID != 0 {
                // SAFETY: the leaf entry just read, in a live table frame of this address space.
                unsafe { ptr::write_volatile(slot, 0) };
                mmu::flush_tlb_user_page(t.asid, va);
                frame::put(e & PTE_ADDR);
                t.pages -= 1;
            }
        });
    }

    fn protect(&mut self, start: usize, end: usize, prot: Prot, shared: bool) {
        self.for_each_slot(start, end, |t, va, slot| {
            // SAFETY: a leaf entry of this address space.
            let pte = unsafe { ptr::read_volatile(slot) };
            if pte & mmu::DESC_VALID != 0 {
                // Break before make: invalidate, flush, then write the new entry.
                // SAFETY: the leaf entry just read, in a live table frame of this address space.
                unsafe { ptr::write_volatile(slot, 0) };
                mmu::flush_tlb_user_page(t.asid, va);
                // A private frame stays read-only while it is shared (copy-on-write).
                let pa = pte & PTE_ADDR;
                let exclusive = shared || (pa != zero_page() && frame::refs(pa) == 1);
                // SAFETY: the same entry, now invalid and flushed.
                unsafe { ptr::write_volatile(slot, pa | pte_bits_for(prot, exclusive)) };
            }
        });
        barrier_after_table_write();
    }

    fn remap(&mut self, old: usize, new: usize, len: usize) -> SysResult<()> {
        let mut off = 0;
        while off < len {
            let Some(slot) = self.slot(old + off, false) else {
                off = skip_missing_table(old + off) - old;
                continue;
            };
            // SAFETY: a leaf entry of this address space.
            let e = unsafe { ptr::read_volatile(slot) };
            if e & mmu::DESC_VALID != 0 {
                let nslot = self.slot(new + off, true).ok_or(Errno::ENOMEM)?;
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
        barrier_after_table_write();
        Ok(())
    }

    fn fork_into(
        &mut self,
        child: &mut Self,
        ranges: impl Iterator<Item = (usize, usize, bool)>,
    ) -> SysResult<()> {
        let mut write_protected = false;
        let mut out_of_memory = false;
        for (start, end, shared) in ranges {
            // The child's last-level table for the 2 MiB block being copied: (block, table).
            let mut child_leaf: Option<(usize, u64)> = None;
            self.for_each_slot(start, end, |_, va, slot| {
                if out_of_memory {
                    return;
                }
                // SAFETY: a leaf entry of the parent's tables.
                let mut e = unsafe { ptr::read_volatile(slot) };
                if e & mmu::DESC_VALID == 0 {
                    return;
                }
                if !shared && e & mmu::AP_RO == 0 {
                    e = (e | mmu::AP_RO) & !mmu::WRITABLE;
                    // Only the permission changes, so no break-before-make; the parent's
                    // ASID is flushed once at the end.
                    // SAFETY: the leaf entry just read, in a live table frame of this address space.
                    unsafe { ptr::write_volatile(slot, e) };
                    write_protected = true;
                }
                let block = va & !0x1f_ffff;
                let leaf = match child_leaf {
                    Some((b, t)) if b == block => t,
                    _ => match child.leaf_table(va, true) {
                        Some(t) => {
                            child_leaf = Some((block, t));
                            t
                        }
                        None => {
                            out_of_memory = true;
                            return;
                        }
                    },
                };
                frame::get(e & PTE_ADDR);
                child.pages += 1;
                // SAFETY: a fresh leaf slot of the child's last-level table; index < 512.
                unsafe { ptr::write_volatile(table(leaf).add((va >> 12) & 511), e) };
            });
            if out_of_memory {
                break;
            }
        }
        if write_protected {
            mmu::flush_tlb_asid(self.asid);
        }
        if out_of_memory {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    }
}

impl Drop for UserTable {
    fn drop(&mut self) {
        // No CPU uses the table any more; the whole ASID is flushed as it is freed.
        free_tables(self.root, 0);
        free_asid(self.asid);
    }
}

/// Frees a table, the tables below it and the references its leaf entries hold.
fn free_tables(pa: u64, level: usize) {
    // SAFETY: pa is a table frame of a dying address space: no CPU walks it any more and nothing
    // else writes it, so plain reads of its 512 entries are sound.
    let entries = unsafe { &*(table(pa) as *const [u64; 512]) };
    // Most of a table is empty: eight entries are tested at once (one OR each) and skipped.
    for group in entries.chunks_exact(8) {
        if group.iter().fold(0, |a, e| a | e) & mmu::DESC_VALID == 0 {
            continue;
        }
        for &e in group {
            if e & mmu::DESC_VALID != 0 {
                if level < 3 {
                    free_tables(e & PTE_ADDR, level + 1);
                } else {
                    frame::put(e & PTE_ADDR);
                }
            }
        }
    }
    frame::TABLE_PAGES.fetch_sub(1, Ordering::Relaxed);
    frame::free(pa, 1);
}
