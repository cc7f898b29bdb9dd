//! An address space's mappings kept in step with its page table: every change to the VMAs
//! that takes pages away or changes their rights is carried out on the table, through
//! [`PageTable`], before the call returns.

use crate::vma::{Prot, VmBacking, Vmas};
use svelt_abi::uapi::errno::{Errno, SysResult};

/// The page-table side of an address space, as the bookkeeping drives it. Every present entry
/// holds one reference on its frame; entries exist only inside VMAs.
///
/// Filling entries (demand paging, copy-on-write) is not here: the owner of the table does it
/// on a fault, with the VMA from [`Vmas::find`].
pub trait PageTable {
    /// Removes the entries of `[start, end)` and drops the references they held. The TLB
    /// holds none of them when this returns.
    fn unmap(&mut self, start: usize, end: usize);

    /// Rewrites the entries of `[start, end)`, one mapping's, for the rights `prot`. `shared`:
    /// the mapping's writes go to memory others see, so its entries may be writable even where
    /// a frame has other references; a private mapping keeps such entries read-only
    /// (copy-on-write).
    fn protect(&mut self, start: usize, end: usize, prot: Prot, shared: bool);

    /// Moves the entries of the `len` bytes at `old` to `new`, where none exist (mremap); the
    /// frames keep their references. ENOMEM when a table for `new` cannot be had.
    fn remap(&mut self, old: usize, new: usize, len: usize) -> SysResult<()>;

    /// Gives `child`, an empty table, the entries of each `(start, end, shared)` range: each
    /// frame gains a reference, and private ranges become copy-on-write (read-only in both).
    /// ENOMEM when a table for the child cannot be had (the child is then dropped).
    fn fork_into(
        &mut self,
        child: &mut Self,
        ranges: impl Iterator<Item = (usize, usize, bool)>,
    ) -> SysResult<()>;
}

/// The mappings of one address space and the page table behind them.
pub struct Mm<B, P> {
    vmas: Vmas<B>,
    table: P,
}

impl<B: VmBacking, P: PageTable> Mm<B, P> {
    /// An address space with no mappings, over an empty table.
    pub fn new(table: P) -> Self {
        Mm {
            vmas: Vmas::new(),
            table,
        }
    }

    pub fn vmas(&self) -> &Vmas<B> {
        &self.vmas
    }

    pub fn table(&self) -> &P {
        &self.table
    }

    pub fn table_mut(&mut self) -> &mut P {
        &mut self.table
    }

    /// Both halves at once: the VMAs to look at and the table to fill (the fault path).
    pub fn parts_mut(&mut self) -> (&Vmas<B>, &mut P) {
        (&self.vmas, &mut self.table)
    }

    /// Adds a mapping over `[start, end)` (page-aligned), replacing whatever was there
    /// (MAP_FIXED). ENOMEM when there are already more than `max_map_count` VMAs, or when the
    /// replacement would split one past the limit.
    pub fn map(
        &mut self,
        start: usize,
        end: usize,
        prot: Prot,
        backing: B,
        max_map_count: usize,
    ) -> SysResult<()> {
        // As Linux: a new mapping is refused once the count is past the limit (so a process
        // can reach max_map_count + 1); splits are checked where they happen (unmap).
        if self.vmas.count() > max_map_count {
            return Err(Errno::ENOMEM);
        }
        self.unmap(start, end, max_map_count)?;
        self.vmas.insert(start, end, prot, backing);
        Ok(())
    }

    /// Removes the mappings in `[start, end)` and drops their pages. ENOMEM when it would split
    /// a VMA in two while the count is at `max_map_count`.
    pub fn unmap(&mut self, start: usize, end: usize, max_map_count: usize) -> SysResult<()> {
        if self
            .vmas
            .find(start)
            .is_some_and(|v| v.start < start && v.end > end)
            && self.vmas.count() >= max_map_count
        {
            return Err(Errno::ENOMEM);
        }
        let table = &mut self.table;
        self.vmas
            .remove(start, end, |v| table.unmap(v.start, v.end));
        Ok(())
    }

    /// Drops the pages of `[start, end)` but keeps the mappings: they read back as zero
    /// (private anonymous) or as the file or shared object again (MADV_DONTNEED).
    pub fn zap(&mut self, start: usize, end: usize) {
        self.table.unmap(start, end);
    }

    /// Changes the rights of `[start, end)` (mprotect). ENOMEM if part of it is unmapped, or if
    /// splitting VMAs at its ends would pass `max_map_count`; nothing changes then.
    pub fn protect(
        &mut self,
        start: usize,
        end: usize,
        prot: Prot,
        max_map_count: usize,
    ) -> SysResult<()> {
        if self.vmas.mapped_until(start, end) < end {
            return Err(Errno::ENOMEM);
        }
        let splits = self.vmas.splits_at(start) as usize + self.vmas.splits_at(end) as usize;
        if splits > 0 && self.vmas.count() + splits > max_map_count {
            return Err(Errno::ENOMEM);
        }
        let table = &mut self.table;
        self.vmas.set_prot(start, end, prot, |v| {
            table.protect(v.start, v.end, v.prot, v.backing.is_shared())
        });
        Ok(())
    }

    /// Moves the entries of the `len` bytes at `old` to `new` (mremap: the mapping at `new`
    /// exists and has no entries).
    pub fn move_entries(&mut self, old: usize, new: usize, len: usize) -> SysResult<()> {
        self.table.remap(old, new, len)
    }

    /// mlock/munlock of `[start, end)`, which the caller found mapped without holes: only the
    /// bookkeeping (bringing the pages in is the caller's, through its fault path).
    pub fn set_locked(&mut self, start: usize, end: usize, lock: bool) {
        self.vmas.set_locked(start, end, lock);
    }

    /// mlockall(MCL_FUTURE) on or off.
    pub fn set_lock_future(&mut self, on: bool) {
        self.vmas.set_lock_future(on);
    }

    /// The address space a forked child starts with, over `child_table` (empty): the same
    /// mappings, unlocked, and the same pages, private ones copy-on-write in both.
    pub fn fork(&mut self, child_table: P) -> SysResult<Self> {
        let mut child = Mm {
            vmas: self.vmas.fork_copy(),
            table: child_table,
        };
        let ranges = self
            .vmas
            .iter()
            .map(|v| (v.start, v.end, v.backing.is_shared()));
        self.table.fork_into(&mut child.table, ranges)?;
        Ok(child)
    }
}
