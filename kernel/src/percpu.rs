//! Per-CPU data. Each CPU's TPIDR_EL1 points at its `PerCpu`, set once when it comes up; the
//! fields that other CPUs read (online, ticks, vector lengths) are atomics.
//!
//! The table is sized at boot from the CPU count the device tree gives (up to `MAX_CPUS`) and
//! allocated once memory is up; until then the boot CPU runs on a static slot of its own.
//! Other modules keep their per-CPU state in a [`PerCpuArray`], sized the same way.

use crate::arch::cpu;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU16, AtomicU64, AtomicUsize, Ordering};
use spin::Once;
use svelt_abi::uapi::cpumask::CpuMask;

pub const MAX_CPUS: usize = svelt_abi::uapi::cpumask::NR_CPUS;

/// One cache line per CPU: no false sharing between CPUs' counters.
#[repr(align(64))]
pub struct PerCpu {
    pub id: usize,
    pub mpidr: AtomicU64,
    pub online: AtomicBool,
    pub ticks: AtomicU64,
    /// Console receive interrupts and reschedule IPIs taken here (/proc/interrupts).
    pub uart_irqs: AtomicU64,
    pub resched_ipis: AtomicU64,
    /// The running task (the scheduler's, kept here so finding it is one load from TPIDR_EL1).
    pub current_task: AtomicUsize,
    /// The scheduler should run at the next chance.
    pub need_resched: AtomicBool,
    /// Implemented SVE / SME vector lengths on this CPU (svelt_abi::fp::vl::VlSet bits).
    pub sve_vls: AtomicU16,
    pub sme_vls: AtomicU16,
    /// Whether the task running here may pass tagged user pointers (PR_SET_TAGGED_ADDR_CTRL):
    /// set when a task is switched in or changes its own setting, read by `mm::uaccess`.
    pub user_tagged_addr: AtomicBool,
    /// The VMID word this CPU last entered a guest with, 0 once a new VMID generation began
    /// (kvm/vmid.rs): here, so that a guest entry reads it at one load from TPIDR_EL1.
    pub kvm_vmid: AtomicU64,
    stack_lo: AtomicUsize,
    stack_hi: AtomicUsize,
}

impl PerCpu {
    const fn new(id: usize) -> PerCpu {
        PerCpu {
            id,
            mpidr: AtomicU64::new(u64::MAX),
            online: AtomicBool::new(false),
            ticks: AtomicU64::new(0),
            uart_irqs: AtomicU64::new(0),
            resched_ipis: AtomicU64::new(0),
            current_task: AtomicUsize::new(0),
            need_resched: AtomicBool::new(false),
            sve_vls: AtomicU16::new(0),
            sme_vls: AtomicU16::new(0),
            user_tagged_addr: AtomicBool::new(false),
            kvm_vmid: AtomicU64::new(0),
            stack_lo: AtomicUsize::new(0),
            stack_hi: AtomicUsize::new(0),
        }
    }
}

/// The boot CPU's area until the table exists.
static BOOT_CPU: PerCpu = PerCpu::new(0);
/// Every CPU's area, `possible()` of them; set once by `init_table`.
static TABLE: Once<&'static [PerCpu]> = Once::new();
/// How many CPUs the device tree lists (Linux's nr_cpu_ids), capped at MAX_CPUS.
static POSSIBLE: AtomicUsize = AtomicUsize::new(1);

fn table() -> &'static [PerCpu] {
    TABLE
        .get()
        .copied()
        .unwrap_or(core::slice::from_ref(&BOOT_CPU))
}

/// Sets the CPU count (from the device tree), before `init_table`.
pub fn set_possible(n: usize) {
    POSSIBLE.store(n.clamp(1, MAX_CPUS), Ordering::Relaxed);
}

/// CPU numbers run from 0 to `possible() - 1` (Linux's nr_cpu_ids).
pub fn possible() -> usize {
    POSSIBLE.load(Ordering::Relaxed)
}

/// Allocates the table for `possible()` CPUs (once memory is up, on the boot CPU) and moves
/// the boot CPU's area into its first slot. Nothing of the boot slot but its identity and
/// stack is in use yet: ticks, vector lengths and `online` come later.
pub fn init_table() {
    let n = possible();
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        panic!("no memory for {n} CPUs' per-CPU areas");
    }
    v.extend((0..n).map(PerCpu::new));
    let t: &'static [PerCpu] = v.leak();
    let b = &BOOT_CPU;
    t[0].mpidr
        .store(b.mpidr.load(Ordering::Relaxed), Ordering::Relaxed);
    t[0].stack_lo
        .store(b.stack_lo.load(Ordering::Relaxed), Ordering::Relaxed);
    t[0].stack_hi
        .store(b.stack_hi.load(Ordering::Relaxed), Ordering::Relaxed);
    TABLE.call_once(|| t);
    enter(0);
}

/// Records CPU `id`'s identity and stack before it starts.
pub fn prepare(id: usize, mpidr: u64, stack: (usize, usize)) {
    let c = get(id);
    c.mpidr.store(mpidr, Ordering::Relaxed);
    c.stack_lo.store(stack.0, Ordering::Relaxed);
    c.stack_hi.store(stack.1, Ordering::Relaxed);
}

/// Called on CPU `id` itself, first thing: TPIDR_EL1 := its area.
pub fn enter(id: usize) {
    cpu::set_percpu_ptr(get(id) as *const PerCpu as usize);
}

/// This CPU's area. Valid once `enter` has run on it, which is each CPU's first act.
#[inline(always)]
pub fn this() -> &'static PerCpu {
    let p = cpu::percpu_ptr() as *const PerCpu;
    // SAFETY: only `enter` writes TPIDR_EL1, with the address of BOOT_CPU or of an element of
    // the leaked (never freed) table, and every CPU runs `enter` before anything that reaches
    // here.
    unsafe { &*p }
}

pub fn cpu_id() -> usize {
    this().id
}

pub fn get(id: usize) -> &'static PerCpu {
    &table()[id]
}

pub fn all() -> &'static [PerCpu] {
    table()
}

/// This CPU's stack bounds (for backtraces).
pub fn stack_range() -> (usize, usize) {
    let c = this();
    (
        c.stack_lo.load(Ordering::Relaxed),
        c.stack_hi.load(Ordering::Relaxed),
    )
}

pub fn online_count() -> usize {
    all()
        .iter()
        .filter(|c| c.online.load(Ordering::Acquire))
        .count()
}

pub fn is_online(id: usize) -> bool {
    all()
        .get(id)
        .is_some_and(|c| c.online.load(Ordering::Acquire))
}

/// The online CPUs as a mask.
pub fn online_mask() -> CpuMask {
    let mut m = CpuMask::EMPTY;
    for c in all().iter().filter(|c| c.online.load(Ordering::Acquire)) {
        m.set(c.id);
    }
    m
}

/// One `T` per CPU, allocated (for `possible()` CPUs) at the first use, which comes after
/// `init_table`. An access costs the same whatever the CPU count: after the first use it is
/// one acquire load of the array's address and an index by this CPU's id (an id is always
/// below `possible()`, so no bounds check is needed).
pub struct PerCpuArray<T: 'static> {
    /// The array once made: published (release) after its elements are written.
    first: AtomicPtr<T>,
    /// Makes the array once, whichever CPU gets there first.
    cells: Once<&'static [T]>,
    init: fn(usize) -> T,
}

impl<T> PerCpuArray<T> {
    pub const fn new(init: fn(usize) -> T) -> PerCpuArray<T> {
        PerCpuArray {
            first: AtomicPtr::new(core::ptr::null_mut()),
            cells: Once::new(),
            init,
        }
    }

    #[inline]
    fn first(&self) -> *const T {
        let p = self.first.load(Ordering::Acquire);
        if p.is_null() {
            self.init_cells().as_ptr()
        } else {
            p
        }
    }

    #[cold]
    fn init_cells(&self) -> &'static [T] {
        let cells = self.cells.call_once(|| {
            assert!(
                TABLE.get().is_some(),
                "per-CPU array used before the CPU count"
            );
            let n = possible();
            let mut v = Vec::new();
            if v.try_reserve_exact(n).is_err() {
                panic!("no memory for a per-CPU array of {n}");
            }
            v.extend((0..n).map(self.init));
            v.leak()
        });
        self.first
            .store(cells.as_ptr() as *mut T, Ordering::Release);
        cells
    }

    #[inline]
    pub fn get(&self, cpu: usize) -> &'static T {
        assert!(cpu < possible(), "CPU {cpu} beyond the per-CPU arrays");
        // SAFETY: the array has possible() elements and lives for good; cpu is below that.
        unsafe { &*self.first().add(cpu) }
    }

    /// This CPU's element.
    #[inline]
    pub fn this(&self) -> &'static T {
        // SAFETY: this CPU's id is below possible() (ids are handed out below it), and the
        // array has possible() elements and lives for good.
        unsafe { &*self.first().add(cpu_id()) }
    }
}

/// A CPU mask other CPUs read while its owner may change it: each word is atomic, so a reader
/// sees every word either before or after a change.
pub struct AtomicCpuMask([AtomicU64; CpuMask::WORDS]);

impl AtomicCpuMask {
    pub const fn new(m: CpuMask) -> AtomicCpuMask {
        let w = m.words();
        let mut a = [const { AtomicU64::new(0) }; CpuMask::WORDS];
        let mut i = 0;
        while i < CpuMask::WORDS {
            a[i] = AtomicU64::new(w[i]);
            i += 1;
        }
        AtomicCpuMask(a)
    }

    pub fn load(&self) -> CpuMask {
        let mut w = [0; CpuMask::WORDS];
        for (o, a) in w.iter_mut().zip(&self.0) {
            *o = a.load(Ordering::Relaxed);
        }
        CpuMask::from_words(w)
    }

    pub fn store(&self, m: CpuMask) {
        for (a, w) in self.0.iter().zip(m.words()) {
            a.store(*w, Ordering::Relaxed);
        }
    }

    /// One word's load: cheap enough for the scheduler's every decision.
    #[inline]
    pub fn contains(&self, cpu: usize) -> bool {
        self.0
            .get(cpu / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) >> (cpu % 64) & 1 != 0)
    }
}
