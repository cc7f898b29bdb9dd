//! CPU-time accounting at the user/kernel boundary (Linux's VIRT_CPU_ACCOUNTING_GEN idea): the
//! counter is read on every entry from EL0 and every return to it, and at each context switch,
//! so a task's user and system time are exact to the counter's tick, not sampled.
//!
//! Each of a task's two clocks is one word, written only by the CPU running the task and read
//! by anyone without a lock. While the clock runs the word holds its value minus the counter at
//! the moment it started (a wrapped, "negative" number); when it stops, the counter is added
//! back. A reader adds the counter to a negative word: one load, no torn pair.
//!
//! - `user` runs while the task is in user mode: the return to EL0 subtracts the counter, the
//!   next entry adds it (a load, an add and a store each way).
//! - `total` runs while the task is on a CPU: the switch in subtracts, the switch out adds.
//!
//! System time is `total - user`. The tick (and a dying task's last switch) folds the running
//! task's time since its last fold into the CPU's user/system/idle sums (/proc/stat); each
//! switch counts a voluntary or involuntary switch.

use super::Task;
use crate::arch::cpu;
use crate::percpu::PerCpuArray;
use core::sync::atomic::{AtomicU64, Ordering};

/// A task's CPU-time words (counter ticks) and switch counts.
pub struct CpuTime {
    user: AtomicU64,
    total: AtomicU64,
    /// `user` and `total` at the last fold into the CPU's sums (only the task's CPU touches
    /// these).
    mark_user: AtomicU64,
    mark_total: AtomicU64,
    /// Switches away while blocked (voluntary) and while still runnable (involuntary).
    pub nvcsw: AtomicU64,
    pub nivcsw: AtomicU64,
    /// Time spent queued, runnable, waiting for a CPU (schedstat's run_delay, a guest's stolen
    /// time): runs from the enqueue to the pick, as `total` runs on the CPU. Written under the
    /// run queue's lock from any CPU, so with atomic adds.
    wait: AtomicU64,
}

/// A word's value now: a running clock's word is wrapped below zero. A reader on another CPU
/// whose counter read lands a few cycles before the writer's would see a clock that started
/// in its future: it reads as no time at all rather than wrapping.
#[inline]
fn read(w: &AtomicU64, now: u64) -> u64 {
    let v = w.load(Ordering::Relaxed);
    if (v as i64) < 0 {
        (v.wrapping_add(now) as i64).max(0) as u64
    } else {
        v
    }
}

/// Adds `d` (wrapping) to a word only this CPU writes: a load and a store, no atomic RMW.
#[inline(always)]
fn bump(w: &AtomicU64, d: u64) {
    w.store(w.load(Ordering::Relaxed).wrapping_add(d), Ordering::Relaxed);
}

/// What a task has used: user and system time in counter ticks, switches.
#[derive(Clone, Copy, Default, Debug)]
pub struct Usage {
    pub user: u64,
    pub system: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
}

impl CpuTime {
    pub const fn new() -> CpuTime {
        CpuTime {
            user: AtomicU64::new(0),
            total: AtomicU64::new(0),
            mark_user: AtomicU64::new(0),
            mark_total: AtomicU64::new(0),
            nvcsw: AtomicU64::new(0),
            nivcsw: AtomicU64::new(0),
            wait: AtomicU64::new(0),
        }
    }

    /// Entry from EL0 (IRQs masked): the user clock stops.
    #[inline(always)]
    pub fn enter_kernel(&self) {
        bump(&self.user, cpu::counter_unordered());
    }

    /// Last step of the return to EL0 (IRQs masked): the user clock runs.
    #[inline(always)]
    pub fn leave_kernel(&self) {
        bump(&self.user, cpu::counter_unordered().wrapping_neg());
    }

    /// The task's use so far (a live task's clocks read now).
    pub fn usage(&self) -> Usage {
        let now = cpu::counter();
        // `total` first: a switch in between only makes `user` newer, never larger than the
        // total it reads after (clamped below).
        let user = read(&self.user, now);
        let total = read(&self.total, now);
        Usage {
            user,
            system: total.saturating_sub(user),
            nvcsw: self.nvcsw.load(Ordering::Relaxed),
            nivcsw: self.nivcsw.load(Ordering::Relaxed),
        }
    }
}

/// `t` went on a run queue at `now` (run queue lock held): its wait clock runs. Only the
/// caller that turned `t.on_rq` from false to true gets here, and `picked` runs before the
/// flag is cleared again, so the word has one writer at a time (the flag's swap and store
/// order them): a load and a store, no atomic add.
#[inline(always)]
pub fn queued(t: &Task, now: u64) {
    bump(&t.cputime.wait, now.wrapping_neg());
}

/// `t` is taken off a run queue to run at `now` (run queue lock held, `t.on_rq` still set):
/// its wait clock stops.
#[inline(always)]
pub fn picked(t: &Task, now: u64) {
    bump(&t.cputime.wait, now);
}

/// The time `t` has waited runnable for a CPU, in nanoseconds.
pub fn run_delay_ns(t: &Task) -> u64 {
    crate::time::counter_to_ns(read(&t.cputime.wait, cpu::counter()))
}

/// One CPU's time (counter ticks): user and system time of the tasks it ran, and its idle
/// task's time.
pub struct CpuStat {
    pub user: AtomicU64,
    pub system: AtomicU64,
    pub idle: AtomicU64,
}

static CPU_STAT: PerCpuArray<CpuStat> = PerCpuArray::new(|_| CpuStat {
    user: AtomicU64::new(0),
    system: AtomicU64::new(0),
    idle: AtomicU64::new(0),
});

pub fn cpu_stat(cpu: usize) -> &'static CpuStat {
    CPU_STAT.get(cpu)
}

/// Folds the time `t` (running here, in the kernel) used since its last fold into this CPU's
/// sums. IRQs masked.
fn fold(t: &Task, now: u64) {
    let c = &t.cputime;
    let user = read(&c.user, now);
    let total = read(&c.total, now);
    let du = user.wrapping_sub(c.mark_user.load(Ordering::Relaxed));
    let dt = total.wrapping_sub(c.mark_total.load(Ordering::Relaxed));
    c.mark_user.store(user, Ordering::Relaxed);
    c.mark_total.store(total, Ordering::Relaxed);
    let s = CPU_STAT.this();
    if t.is_idle() {
        bump(&s.idle, dt);
    } else {
        bump(&s.user, du);
        bump(&s.system, dt.saturating_sub(du));
    }
}

/// The timer tick (IRQs masked): the running task's time so far goes into this CPU's sums.
pub fn tick(t: &Task) {
    fold(t, cpu::counter());
}

/// A switch from `prev` to `next` on this CPU at `now` (IRQs masked; the counter as
/// `schedule` read it once for the run-delay clocks too): `prev`'s CPU clock stops and
/// `next`'s runs; `voluntary` when `prev` blocked rather than being preempted or yielding.
/// The CPU's sums are left to the tick (a task's time since its last fold goes to the CPU
/// whose tick finds it running), but for a task that will never run again (`fold_dead`).
pub fn switch(prev: &Task, next: &Task, voluntary: bool, now: u64) {
    bump(&prev.cputime.total, now);
    bump(&next.cputime.total, now.wrapping_neg());
    let n = if voluntary {
        &prev.cputime.nvcsw
    } else {
        &prev.cputime.nivcsw
    };
    bump(n, 1);
}

/// A dead task's last switch is complete (IRQs masked, on the CPU it ran on): its time since
/// the last tick goes into this CPU's sums. Both its clocks are stopped.
pub fn fold_dead(t: &Task) {
    fold(t, 0);
}

/// A CPU's idle task starts its clock (it is on its CPU from boot).
pub fn start_idle(t: &Task) {
    bump(&t.cputime.total, cpu::counter().wrapping_neg());
}
