//! A page table made of a map of pages, to drive `svelt_mm::Mm` on the host (the idea of
//! Hafnium's src/arch/fake). Entries name frames from a pool that counts references, so a test
//! sees exactly which frames an operation released; the pool is shared with forked tables.

#![allow(dead_code)] // each test file uses its own part of the fake

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_mm::layout::PAGE_SIZE;
use svelt_mm::{Mm, PageTable, Prot, VmBacking};

/// Frames in use (with their reference counts) and the ones released, in order.
#[derive(Default)]
pub struct Frames {
    refs: BTreeMap<u64, u32>,
    next: u64,
    pub freed: Vec<u64>,
}

impl Frames {
    fn alloc(&mut self) -> u64 {
        self.next += 1;
        self.refs.insert(self.next, 1);
        self.next
    }
    fn get(&mut self, f: u64) {
        *self.refs.get_mut(&f).expect("a live frame") += 1;
    }
    fn put(&mut self, f: u64) {
        let r = self.refs.get_mut(&f).expect("a live frame");
        *r -= 1;
        if *r == 0 {
            self.refs.remove(&f);
            self.freed.push(f);
        }
    }
    pub fn refs(&self, f: u64) -> u32 {
        self.refs.get(&f).copied().unwrap_or(0)
    }
    pub fn live(&self) -> usize {
        self.refs.len()
    }
}

pub type Pool = Rc<RefCell<Frames>>;

/// One page's entry: its frame, the rights of its mapping, and whether the hardware would let
/// it be written (false while a private frame is shared: copy-on-write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub frame: u64,
    pub prot: Prot,
    pub writable: bool,
}

pub struct FakeTable {
    pub entries: BTreeMap<usize, Entry>,
    pub pool: Pool,
    /// Makes the next `remap`/`fork_into` fail as if no table page could be had.
    pub fail_alloc: bool,
}

impl FakeTable {
    pub fn new(pool: &Pool) -> FakeTable {
        FakeTable {
            entries: BTreeMap::new(),
            pool: pool.clone(),
            fail_alloc: false,
        }
    }

    pub fn entry(&self, va: usize) -> Option<Entry> {
        self.entries.get(&va).copied()
    }

    /// The pages with an entry in `[start, end)`.
    pub fn mapped_in(&self, start: usize, end: usize) -> Vec<usize> {
        self.entries.range(start..end).map(|(&va, _)| va).collect()
    }
}

impl PageTable for FakeTable {
    fn unmap(&mut self, start: usize, end: usize) {
        for va in self.mapped_in(start, end) {
            let e = self.entries.remove(&va).unwrap();
            self.pool.borrow_mut().put(e.frame);
        }
    }

    fn protect(&mut self, start: usize, end: usize, prot: Prot, shared: bool) {
        let pool = self.pool.borrow();
        for (_, e) in self.entries.range_mut(start..end) {
            e.prot = prot;
            e.writable = prot.w() && (shared || pool.refs(e.frame) == 1);
        }
    }

    fn remap(&mut self, old: usize, new: usize, len: usize) -> SysResult<()> {
        if std::mem::take(&mut self.fail_alloc) {
            return Err(Errno::ENOMEM);
        }
        for va in self.mapped_in(old, old + len) {
            let e = self.entries.remove(&va).unwrap();
            let prev = self.entries.insert(va - old + new, e);
            assert!(prev.is_none(), "remap onto a page that has an entry");
        }
        Ok(())
    }

    fn fork_into(
        &mut self,
        child: &mut Self,
        ranges: impl Iterator<Item = (usize, usize, bool)>,
    ) -> SysResult<()> {
        assert!(child.entries.is_empty(), "fork into a table in use");
        for (start, end, shared) in ranges {
            for (&va, e) in self.entries.range_mut(start..end) {
                if std::mem::take(&mut child.fail_alloc) {
                    return Err(Errno::ENOMEM);
                }
                if !shared {
                    e.writable = false;
                }
                self.pool.borrow_mut().get(e.frame);
                child.entries.insert(va, *e);
            }
        }
        Ok(())
    }
}

impl Drop for FakeTable {
    fn drop(&mut self) {
        let all: Vec<usize> = self.entries.keys().copied().collect();
        for va in all {
            let e = self.entries.remove(&va).unwrap();
            self.pool.borrow_mut().put(e.frame);
        }
    }
}

/// What a test mapping maps, shaped like the kernel's: private anonymous memory (which merges
/// with its like), a shared object at an offset, or a file at an offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestBacking {
    Anon,
    Shared(u32, usize),
    File { id: u32, off: u64, shared: bool },
}

impl VmBacking for TestBacking {
    fn is_shared(&self) -> bool {
        match self {
            TestBacking::Anon => false,
            TestBacking::Shared(..) => true,
            TestBacking::File { shared, .. } => *shared,
        }
    }
    fn advanced_by(&self, delta: usize) -> Self {
        match self {
            TestBacking::Anon => TestBacking::Anon,
            TestBacking::Shared(id, off) => TestBacking::Shared(*id, off + delta),
            TestBacking::File { id, off, shared } => TestBacking::File {
                id: *id,
                off: off + delta as u64,
                shared: *shared,
            },
        }
    }
    fn merges_with(&self, next: &Self) -> bool {
        matches!((self, next), (TestBacking::Anon, TestBacking::Anon))
    }
}

pub type TestMm = Mm<TestBacking, FakeTable>;

pub fn new_mm() -> (TestMm, Pool) {
    let pool = Pool::default();
    (Mm::new(FakeTable::new(&pool)), pool)
}

/// Brings in the page at `va` the way the kernel's fault path would: a fresh frame, writable
/// if the mapping is. Panics where there is no mapping (a test bug).
pub fn touch(mm: &mut TestMm, va: usize) -> u64 {
    let va = va & !(PAGE_SIZE - 1);
    let (vmas, table) = mm.parts_mut();
    let v = vmas.find(va).expect("touching a mapped page");
    if let Some(e) = table.entry(va) {
        return e.frame;
    }
    let frame = table.pool.borrow_mut().alloc();
    table.entries.insert(
        va,
        Entry {
            frame,
            prot: v.prot,
            writable: v.prot.w(),
        },
    );
    frame
}

/// Touches every page of `[start, end)`; their frames, in address order.
pub fn touch_range(mm: &mut TestMm, start: usize, end: usize) -> Vec<u64> {
    (start..end)
        .step_by(PAGE_SIZE)
        .map(|va| touch(mm, va))
        .collect()
}

/// The VMAs as `(start, end, prot bits, locked)`.
pub fn layout(mm: &TestMm) -> Vec<(usize, usize, u32, bool)> {
    mm.vmas()
        .iter()
        .map(|v| (v.start, v.end, v.prot.0, v.locked))
        .collect()
}
