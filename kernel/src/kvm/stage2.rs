//! A VM's stage-2 translation tables (4 KiB granule): guest physical (IPA) pages to host frames.
//!
//! Every leaf holds one reference on its frame (`frame::get`), so a frame the VMM unmaps stays
//! the guest's until the mm notifier (vm.rs) removes the leaf: a guest never reaches a frame
//! that went back to the allocator. Tables are freed with the VM.

use crate::arch::guest;
use crate::arch::mmu::phys_to_virt;
use crate::mm::frame;
use core::sync::atomic::{AtomicUsize, Ordering};
use svelt_abi::uapi::errno::{Errno, SysResult};

/// Leaves mapped and table pages held, over every VM (/proc/svelt/kvm): both 0 once every VM
/// is gone.
pub static LEAVES: AtomicUsize = AtomicUsize::new(0);
pub static TABLE_PAGES: AtomicUsize = AtomicUsize::new(0);

const PAGE: u64 = 4096;
const ENTRIES: u64 = 512;
const VALID: u64 = 1;
const TABLE: u64 = 2;
const ADDR: u64 = 0x0000_ffff_ffff_f000;
/// Leaf attributes: Normal memory, Write-Back cacheable (MemAttr 0b1111), Inner Shareable,
/// access flag set; S2AP bit 6 read, bit 7 write.
const LEAF: u64 = VALID | TABLE | (0b1111 << 2) | (3 << 8) | (1 << 10);
const S2AP_R: u64 = 1 << 6;
const S2AP_W: u64 = 1 << 7;

pub struct Stage2 {
    root: u64,
    /// Pages of the (concatenated) root table.
    root_pages: usize,
    start_level: u32,
    ipa_bits: u32,
}

fn slot(table: u64, index: u64) -> *mut u64 {
    (phys_to_virt(table) + 8 * index as usize) as *mut u64
}

fn read(table: u64, index: u64) -> u64 {
    // SAFETY: `table` is a table frame of this Stage2 (allocated by it, linear-mapped), and
    // index < 512 (or within the concatenated root); the VM's lock serializes writers.
    unsafe { slot(table, index).read_volatile() }
}

fn write(table: u64, index: u64, v: u64) {
    // SAFETY: as in `read`.
    unsafe { slot(table, index).write_volatile(v) };
}

/// Bits of the IPA that select an entry at `level` (4 KiB granule).
fn shift(level: u32) -> u32 {
    12 + 9 * (3 - level)
}

impl Stage2 {
    /// Empty tables for an IPA space of `ipa_bits` (32..=48): start at level 1 with up to 8
    /// concatenated tables below 43 bits, at level 0 from there.
    pub fn new(ipa_bits: u32) -> SysResult<Stage2> {
        let start_level = if ipa_bits <= 42 { 1 } else { 0 };
        let entries = 1u64 << (ipa_bits - shift(start_level));
        let root_pages = entries.div_ceil(ENTRIES) as usize;
        let root = frame::alloc_zeroed(root_pages).ok_or(Errno::ENOMEM)?;
        TABLE_PAGES.fetch_add(root_pages, Ordering::Relaxed);
        Ok(Stage2 {
            root,
            root_pages,
            start_level,
            ipa_bits,
        })
    }

    /// VTCR_EL2 for these tables: T0SZ, SL0, Inner/Outer Write-Back, Inner Shareable, 4 KiB
    /// granule, PS as the CPU offers (at most 48 bits), VS for 16-bit VMIDs.
    pub fn vtcr(&self) -> u64 {
        let t0sz = 64 - self.ipa_bits as u64;
        let sl0 = match self.start_level {
            0 => 2,
            1 => 1,
            _ => 0,
        };
        let ps = match guest::pa_bits() {
            32 => 0,
            36 => 1,
            40 => 2,
            42 => 3,
            44 => 4,
            _ => 5,
        };
        let vs = if guest::vmid_bits() == 16 { 1 << 19 } else { 0 };
        (1 << 31) | vs | (ps << 16) | (3 << 12) | (1 << 10) | (1 << 8) | (sl0 << 6) | t0sz
    }

    pub fn root(&self) -> u64 {
        self.root
    }

    fn index(&self, ipa: u64, level: u32) -> u64 {
        let i = ipa >> shift(level);
        if level == self.start_level {
            i
        } else {
            i & (ENTRIES - 1)
        }
    }

    /// The level-3 table for `ipa`, created on the way when `create`.
    fn leaf_table(&mut self, ipa: u64, create: bool) -> SysResult<Option<u64>> {
        let mut table = self.root;
        for level in self.start_level..3 {
            let i = self.index(ipa, level);
            let e = read(table, i);
            table = if e & VALID != 0 {
                e & ADDR
            } else if create {
                let t = frame::alloc_zeroed(1).ok_or(Errno::ENOMEM)?;
                TABLE_PAGES.fetch_add(1, Ordering::Relaxed);
                crate::arch::cpu::barrier_after_table_write();
                write(table, i, t | VALID | TABLE);
                t
            } else {
                return Ok(None);
            };
        }
        Ok(Some(table))
    }

    /// Maps guest page `ipa` to frame `pa` (taking a reference on it), readable, writable if
    /// `writable`, executable. An existing leaf is replaced (its reference dropped); the caller
    /// flushes the TLB when it replaced one.
    pub fn map(&mut self, ipa: u64, pa: u64, writable: bool) -> SysResult<bool> {
        let table = self.leaf_table(ipa, true)?.ok_or(Errno::ENOMEM)?;
        let i = self.index(ipa, 3);
        let old = read(table, i);
        // A guest with its MMU off reads memory uncached.
        crate::arch::cpu::clean_dcache_to_poc(phys_to_virt(pa), PAGE as usize);
        frame::get(pa);
        let ap = if writable { S2AP_R | S2AP_W } else { S2AP_R };
        write(table, i, (pa & ADDR) | LEAF | ap);
        crate::arch::cpu::barrier_after_table_write();
        if old & VALID != 0 {
            frame::put(old & ADDR);
            Ok(true)
        } else {
            LEAVES.fetch_add(1, Ordering::Relaxed);
            Ok(false)
        }
    }

    /// Removes the leaves in `[start, end)` (page-aligned IPAs), dropping their references.
    /// Returns whether any was there (the caller then flushes the VM's TLB entries).
    pub fn unmap(&mut self, start: u64, end: u64) -> bool {
        let mut any = false;
        let mut ipa = start;
        while ipa < end {
            let Some(table) = self.leaf_table(ipa, false).ok().flatten() else {
                // No level-3 table here: skip to the next 2 MiB.
                ipa = (ipa | ((1 << shift(2)) - 1)) + 1;
                continue;
            };
            let i = self.index(ipa, 3);
            let e = read(table, i);
            if e & VALID != 0 {
                write(table, i, 0);
                frame::put(e & ADDR);
                LEAVES.fetch_sub(1, Ordering::Relaxed);
                any = true;
            }
            ipa += PAGE;
        }
        any
    }

    /// Takes write permission away from the leaf of guest page `ipa`, if there is one and it
    /// had it (as `kvm_stage2_wp_range` for one page): the guest's next write to it faults.
    /// Returns whether a leaf changed (the caller then flushes the VM's TLB entries).
    pub fn write_protect(&mut self, ipa: u64) -> bool {
        let Some(table) = self.leaf_table(ipa, false).ok().flatten() else {
            return false;
        };
        let i = self.index(ipa, 3);
        let e = read(table, i);
        if e & VALID == 0 || e & S2AP_W == 0 {
            return false;
        }
        write(table, i, e & !S2AP_W);
        crate::arch::cpu::barrier_after_table_write();
        true
    }

    /// Drops everything below `table` (a table at `level` with `entries` entries): the
    /// frames its leaves reference and its lower tables.
    fn free_below(table: u64, level: u32, entries: u64) {
        for i in 0..entries {
            let e = read(table, i);
            if e & VALID == 0 {
                continue;
            }
            if level == 3 {
                frame::put(e & ADDR);
                LEAVES.fetch_sub(1, Ordering::Relaxed);
            } else {
                let lower = e & ADDR;
                Self::free_below(lower, level + 1, ENTRIES);
                frame::free(lower, 1);
                TABLE_PAGES.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl Drop for Stage2 {
    fn drop(&mut self) {
        let entries = 1u64 << (self.ipa_bits - shift(self.start_level));
        Self::free_below(self.root, self.start_level, entries);
        frame::free(self.root, self.root_pages);
        TABLE_PAGES.fetch_sub(self.root_pages, Ordering::Relaxed);
    }
}
