//! Per-CPU data. Each CPU's TPIDR_EL1 points at its `PerCpu`, set once when it comes up; the
//! fields that other CPUs read (online, ticks, vector lengths) are atomics.

use crate::arch::cpu;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicUsize, Ordering};

pub const MAX_CPUS: usize = 16;

/// One cache line per CPU: no false sharing between CPUs' counters.
#[repr(align(64))]
pub struct PerCpu {
    pub id: usize,
    pub mpidr: AtomicU64,
    pub online: AtomicBool,
    pub ticks: AtomicU64,
    /// Implemented SVE / SME vector lengths on this CPU (svelt_abi::vl::VlSet bits).
    pub sve_vls: AtomicU16,
    pub sme_vls: AtomicU16,
    /// Whether the task running here may pass tagged user pointers (PR_SET_TAGGED_ADDR_CTRL):
    /// set when a task is switched in or changes its own setting, read by `mm::uaccess`.
    pub user_tagged_addr: AtomicBool,
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
            sve_vls: AtomicU16::new(0),
            sme_vls: AtomicU16::new(0),
            user_tagged_addr: AtomicBool::new(false),
            stack_lo: AtomicUsize::new(0),
            stack_hi: AtomicUsize::new(0),
        }
    }
}

static CPUS: [PerCpu; MAX_CPUS] = {
    let mut a = [const { PerCpu::new(0) }; MAX_CPUS];
    let mut i = 0;
    while i < MAX_CPUS {
        a[i] = PerCpu::new(i);
        i += 1;
    }
    a
};

/// Records CPU `id`'s identity and stack before it starts.
pub fn prepare(id: usize, mpidr: u64, stack: (usize, usize)) {
    let c = &CPUS[id];
    c.mpidr.store(mpidr, Ordering::Relaxed);
    c.stack_lo.store(stack.0, Ordering::Relaxed);
    c.stack_hi.store(stack.1, Ordering::Relaxed);
}

/// Called on CPU `id` itself, first thing: TPIDR_EL1 := &CPUS[id].
pub fn enter(id: usize) {
    cpu::set_percpu_ptr(&CPUS[id] as *const PerCpu as usize);
}

/// This CPU's area. Valid once `enter` has run on it, which is each CPU's first act.
#[inline(always)]
pub fn this() -> &'static PerCpu {
    let p = cpu::percpu_ptr() as *const PerCpu;
    // SAFETY: only `enter` writes TPIDR_EL1, with the address of an element of the static
    // CPUS, and every CPU runs `enter` before anything that reaches here.
    unsafe { &*p }
}

pub fn cpu_id() -> usize {
    this().id
}

pub fn get(id: usize) -> &'static PerCpu {
    &CPUS[id]
}

pub fn all() -> &'static [PerCpu] {
    &CPUS
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
    CPUS.iter()
        .filter(|c| c.online.load(Ordering::Acquire))
        .count()
}
