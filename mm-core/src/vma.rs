//! The mappings of one address space as plain data: VMAs keyed by their start address, and the
//! totals Linux's limits are checked against, kept up to date as VMAs come, go, split and merge.
//! Nothing here touches a page: [`crate::Mm`] pairs every change with its page-table side.

use crate::layout::{MMAP_MIN, MMAP_TOP, STACK_TOP, USER_END};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::cell::Cell;

/// Access rights of a mapping (PROT_READ/WRITE/EXEC bits), and whether it is a guarded
/// control stack (`SHADOW`, Linux's VM_SHADOW_STACK: GCS instructions may read and write it,
/// ordinary stores may not; the bit stays with the mapping through mprotect).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot(pub u32);

impl Prot {
    pub const READ: u32 = svelt_abi::uapi::mm::PROT_READ;
    pub const WRITE: u32 = svelt_abi::uapi::mm::PROT_WRITE;
    pub const EXEC: u32 = svelt_abi::uapi::mm::PROT_EXEC;
    /// Not a PROT_* bit: set only by map_shadow_stack and the GCS the kernel allocates.
    pub const SHADOW: u32 = 1 << 16;
    /// The PROT_* rights alone.
    pub fn rwx(self) -> u32 {
        self.0 & (Self::READ | Self::WRITE | Self::EXEC)
    }
    pub fn shadow(self) -> bool {
        self.0 & Self::SHADOW != 0
    }
    pub fn r(self) -> bool {
        self.0 & Self::READ != 0
    }
    pub fn w(self) -> bool {
        self.0 & Self::WRITE != 0
    }
    pub fn x(self) -> bool {
        self.0 & Self::EXEC != 0
    }

    /// Whether a mapping with these rights admits `access` (on arm64 any right implies read).
    pub fn allows(self, access: Access) -> bool {
        match access {
            Access::Read => self.r() || self.w() || self.x(),
            // Ordinary stores never reach a shadow stack; GCS accesses (handled as writes, as
            // Linux does) reach nothing else, and only a writable one.
            Access::Write => self.w() && !self.shadow(),
            Access::Gcs => self.shadow() && self.w(),
            Access::Exec => self.x(),
            Access::Kernel => true,
        }
    }
}

/// Kinds of access, for faults and copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Exec,
    /// A GCS instruction's load or store (ESR ISS2.GCS): handled as a write, so that a
    /// copy-on-write shadow-stack page is copied.
    Gcs,
    /// The kernel filling a mapping it made (exec), whatever its protection.
    Kernel,
}

/// Why a user access failed (for si_code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultError {
    /// No mapping there (SEGV_MAPERR).
    NoMapping,
    /// A mapping without the needed permission (SEGV_ACCERR).
    Permission,
    /// Out of memory.
    NoMemory,
    /// A file mapping beyond the end of its file (SIGBUS, BUS_ADRERR).
    Bus,
}

/// What a VMA maps (anonymous memory, a shared object, a file): the little the bookkeeping
/// needs to know of it.
pub trait VmBacking: Clone {
    /// Whether writes go to memory others see (no copy-on-write).
    fn is_shared(&self) -> bool;
    /// The backing of the part of a VMA starting `delta` bytes further on (after a split).
    fn advanced_by(&self, delta: usize) -> Self;
    /// Whether a VMA backed by `self` and the VMA right above it backed by `next`, with the
    /// same rights and lock state, may become one.
    fn merges_with(&self, next: &Self) -> bool;
}

/// One mapping: `[start, end)`, page-aligned and never empty.
#[derive(Clone, Debug)]
pub struct Vma<B> {
    pub start: usize,
    pub end: usize,
    pub prot: Prot,
    pub backing: B,
    /// mlock'ed (VM_LOCKED): counted against RLIMIT_MEMLOCK.
    pub locked: bool,
}

impl<B: VmBacking> Vma<B> {
    pub fn size(&self) -> usize {
        self.end - self.start
    }

    /// The VMA's share of RLIMIT_DATA's count: private writable memory other than the main
    /// stack.
    fn data_bytes(&self) -> usize {
        if self.prot.w() && !self.backing.is_shared() && self.end != STACK_TOP {
            self.size()
        } else {
            0
        }
    }
}

/// The VMAs of one address space and the totals Linux's limits count.
pub struct Vmas<B> {
    tree: BTreeMap<usize, Vma<B>>,
    /// `[packed_below, MMAP_TOP)` is known to be mapped without a gap, so the top-down search
    /// for free space starts here (without it, a program that maps page after page makes
    /// every mmap walk every mapping).
    packed_below: Cell<usize>,
    /// Bytes mapped (RLIMIT_AS), and bytes of private writable mappings other than the main
    /// stack (RLIMIT_DATA).
    total_vm: usize,
    data_vm: usize,
    /// Bytes of mlock'ed mappings, and whether new mappings are locked (mlockall MCL_FUTURE).
    locked_vm: usize,
    lock_future: bool,
}

impl<B: VmBacking> Default for Vmas<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: VmBacking> Vmas<B> {
    pub fn new() -> Self {
        Vmas {
            tree: BTreeMap::new(),
            packed_below: Cell::new(MMAP_TOP),
            total_vm: 0,
            data_vm: 0,
            locked_vm: 0,
            lock_future: false,
        }
    }

    /// How many VMAs there are (what vm.max_map_count limits).
    pub fn count(&self) -> usize {
        self.tree.len()
    }

    /// The VMAs in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Vma<B>> {
        self.tree.values()
    }

    /// The VMA containing `va`.
    pub fn find(&self, va: usize) -> Option<&Vma<B>> {
        self.tree
            .range(..=va)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| va < v.end)
    }

    /// Whether `[start, end)` overlaps no mapping.
    pub fn is_free(&self, start: usize, end: usize) -> bool {
        self.tree
            .range(..end)
            .next_back()
            .is_none_or(|(_, v)| v.end <= start)
    }

    /// A free range of `len` bytes: `hint` if it is free and within `[MMAP_MIN, MMAP_TOP)`,
    /// else the highest one below `MMAP_TOP` (and not below `MMAP_MIN`).
    pub fn find_free(&self, len: usize, hint: usize) -> Option<usize> {
        // A hint that does not fit (or overflows) is ignored, as Linux ignores it.
        if hint >= MMAP_MIN
            && hint.checked_add(len).is_some_and(|end| end <= MMAP_TOP)
            && self.is_free(hint, hint + len)
        {
            return Some(hint);
        }
        let mut top = self.packed_below.get();
        let mut packed = true;
        for (_, v) in self.tree.range(..top).rev() {
            if v.end < top {
                packed = false;
            }
            if v.end <= top && top - v.end >= len {
                return Some(top - len);
            }
            top = top.min(v.start);
            if packed {
                self.packed_below.set(top);
            }
        }
        // Checked: `len` is the user's, and may be close to the whole address space.
        top.checked_sub(len).filter(|&start| start >= MMAP_MIN)
    }

    /// Where the mappings that run without a hole from `start` stop (at most `end`).
    pub fn mapped_until(&self, start: usize, end: usize) -> usize {
        let mut va = start;
        while va < end {
            match self.find(va) {
                Some(v) => va = v.end,
                None => return va,
            }
        }
        end
    }

    /// Whether `[va, va + len)` is covered by mappings allowing `access` (no page is touched).
    pub fn range_ok(&self, va: usize, len: usize, access: Access) -> bool {
        let Some(end) = va.checked_add(len) else {
            return false;
        };
        if end > USER_END {
            return false;
        }
        let mut cur = va;
        while cur < end {
            match self.find(cur) {
                Some(v) if v.prot.allows(access) => cur = v.end,
                _ => return false,
            }
        }
        true
    }

    /// Bytes mapped, in total.
    pub fn total_vm(&self) -> usize {
        self.total_vm
    }

    /// Bytes of private writable memory other than the main stack (RLIMIT_DATA's count).
    pub fn data_vm(&self) -> usize {
        self.data_vm
    }

    /// Bytes of mlock'ed memory (RLIMIT_MEMLOCK's count, VmLck).
    pub fn locked_vm(&self) -> usize {
        self.locked_vm
    }

    /// Whether new mappings start locked (mlockall MCL_FUTURE).
    pub fn lock_future(&self) -> bool {
        self.lock_future
    }

    /// Bytes of `[start, end)` not locked yet (what an mlock of it would add).
    pub fn unlocked_in(&self, start: usize, end: usize) -> usize {
        self.tree
            .range(..end)
            .rev()
            .take_while(|(_, v)| v.end > start)
            .filter(|(_, v)| !v.locked)
            .map(|(_, v)| v.end.min(end) - v.start.max(start))
            .sum()
    }

    /// Whether `at` falls strictly inside a VMA (a boundary there would split it).
    pub(crate) fn splits_at(&self, at: usize) -> bool {
        self.find(at).is_some_and(|v| v.start < at)
    }

    /// Adds a VMA over `[start, end)`, which must be free, and joins it with its neighbours
    /// where they allow.
    pub(crate) fn insert(&mut self, start: usize, end: usize, prot: Prot, backing: B) {
        let v = Vma {
            start,
            end,
            prot,
            backing,
            locked: self.lock_future,
        };
        if v.locked {
            self.locked_vm += v.size();
        }
        self.total_vm += v.size();
        self.data_vm += v.data_bytes();
        self.tree.insert(start, v);
        self.try_merge(end);
        self.try_merge(start);
    }

    /// Takes the VMAs out of `[start, end)`, splitting those that straddle its ends; `gone`
    /// sees each piece removed.
    pub(crate) fn remove(&mut self, start: usize, end: usize, mut gone: impl FnMut(&Vma<B>)) {
        if end > self.packed_below.get() {
            // A hole opens at or above the packed range: it is packed only above the hole.
            self.packed_below
                .set(end.clamp(self.packed_below.get(), MMAP_TOP));
        }
        for s in self.split_range(start, end) {
            let Some(v) = self.tree.remove(&s) else {
                continue;
            };
            self.total_vm -= v.size();
            if v.locked {
                self.locked_vm -= v.size();
            }
            self.data_vm -= v.data_bytes();
            gone(&v);
        }
    }

    /// Gives `[start, end)` (mapped without holes) the rights `prot`, splitting the VMAs at its
    /// ends; `changed` sees each VMA after its change, before neighbours merge.
    pub(crate) fn set_prot(
        &mut self,
        start: usize,
        end: usize,
        prot: Prot,
        mut changed: impl FnMut(&Vma<B>),
    ) {
        let keys = self.split_range(start, end);
        for k in &keys {
            let Some(v) = self.tree.get_mut(k) else {
                continue;
            };
            self.data_vm -= v.data_bytes();
            v.prot = Prot(prot.0 | (v.prot.0 & Prot::SHADOW));
            self.data_vm += v.data_bytes();
            changed(v);
        }
        self.merge_range(&keys, end);
    }

    /// Locks or unlocks `[start, end)`, splitting the VMAs at its ends and joining those that
    /// end up alike.
    pub(crate) fn set_locked(&mut self, start: usize, end: usize, lock: bool) {
        let keys = self.split_range(start, end);
        for k in &keys {
            let Some(v) = self.tree.get_mut(k) else {
                continue;
            };
            if v.locked != lock {
                v.locked = lock;
                if lock {
                    self.locked_vm += v.size();
                } else {
                    self.locked_vm -= v.size();
                }
            }
        }
        self.merge_range(&keys, end);
    }

    /// Splits the VMAs straddling `start` and `end`; the starts of those in between.
    fn split_range(&mut self, start: usize, end: usize) -> Vec<usize> {
        // An empty or reversed range has nothing in it (and BTreeMap::range would panic).
        if start >= end {
            return Vec::new();
        }
        self.split_at(start);
        self.split_at(end);
        self.tree.range(start..end).map(|(&s, _)| s).collect()
    }

    /// After a change to the VMAs starting at `keys` (ending at `end`): joins every boundary,
    /// inside and at both ends, where neighbours have become alike (as Linux's mprotect and
    /// mlock merge).
    fn merge_range(&mut self, keys: &[usize], end: usize) {
        for &k in keys {
            self.try_merge(k);
        }
        self.try_merge(end);
    }

    pub(crate) fn set_lock_future(&mut self, on: bool) {
        self.lock_future = on;
    }

    /// The VMAs a forked child starts with: the same mappings and totals, none locked (locks
    /// are not inherited, as on Linux).
    pub(crate) fn fork_copy(&self) -> Self {
        let mut tree = self.tree.clone();
        for v in tree.values_mut() {
            v.locked = false;
        }
        Vmas {
            tree,
            packed_below: Cell::new(MMAP_TOP),
            total_vm: self.total_vm,
            data_vm: self.data_vm,
            locked_vm: 0,
            lock_future: false,
        }
    }

    /// Splits the VMA containing `at` (if any) so that a VMA boundary falls at `at`.
    fn split_at(&mut self, at: usize) {
        let Some(v) = self.find(at).cloned() else {
            return;
        };
        if v.start == at {
            return;
        }
        let mut lo = v.clone();
        lo.end = at;
        let mut hi = v;
        hi.backing = hi.backing.advanced_by(at - hi.start);
        hi.start = at;
        self.tree.insert(lo.start, lo);
        self.tree.insert(hi.start, hi);
    }

    /// Joins the VMA ending at `at` with the one starting there when they are alike (as Linux
    /// merges neighbours).
    fn try_merge(&mut self, at: usize) {
        let Some(hi) = self.tree.get(&at) else {
            return;
        };
        let Some(lo) = self.tree.range(..at).next_back().map(|(_, v)| v) else {
            return;
        };
        if lo.end == at
            && lo.prot == hi.prot
            && lo.locked == hi.locked
            && lo.backing.merges_with(&hi.backing)
        {
            let (lo_start, hi_end) = (lo.start, hi.end);
            self.tree.remove(&at);
            if let Some(lo) = self.tree.get_mut(&lo_start) {
                lo.end = hi_end;
            }
        }
    }
}
