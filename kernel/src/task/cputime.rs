//! CPU-time accounting. A task's time on a CPU is exact to the counter's tick: the switch
//! reads the counter once and stops the outgoing task's clock and starts the incoming one's
//! (Linux's sum_exec_runtime, update_curr). How that time divides into user and system time
//! is sampled by the timer tick, as Linux does without nohz_full (kernel/sched/cputime.c:
//! account_process_tick books each tick to user or system time by where it interrupted), and
//! the exact total is split in the ratio of those samples when read (cputime_adjust), with
//! neither part ever going back. The EL0 boundary does no accounting at all.
//!
//! A clock is one word, written only by the CPU running the task (or switching it) and read by
//! anyone without a lock. While the clock runs the word holds its value minus the counter at
//! the moment it started (a wrapped, "negative" number); when it stops, the counter is added
//! back. A reader adds the counter to a negative word: one load, no torn pair.
//!
//! - `total` runs while the task is on a CPU: the switch in subtracts, the switch out adds.
//! - `active` runs while the task is runnable or running: from its wake-up (or creation) to the
//!   switch away after it blocks. A yield or a preemption leaves it running, so a switch
//!   between runnable tasks writes nothing but `total`. The time spent waiting for a CPU
//!   (schedstat's run_delay, a guest's stolen time) is `active - total`.
//!
//! The tick folds the running task's time since its last fold into the CPU's user, system or
//! idle sum (/proc/stat), by where it interrupted; each switch counts a voluntary or
//! involuntary switch.

use super::Task;
use crate::arch::cpu;
use crate::percpu::PerCpuArray;
use crate::sync::IrqLock;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use svelt_abi::uapi::time::split_cputime;

/// A task's CPU-time words (counter ticks), tick samples and switch counts.
pub struct CpuTime {
    total: AtomicU64,
    /// Ticks that found the task in user mode, and in the kernel (only the task's CPU writes
    /// these, in its tick).
    user_ticks: AtomicU64,
    system_ticks: AtomicU64,
    /// `total` at the last fold into the CPU's sums (only the task's CPU touches it).
    mark_total: AtomicU64,
    /// Switches away while blocked (voluntary) and while still runnable (involuntary).
    pub nvcsw: AtomicU64,
    pub nivcsw: AtomicU64,
    /// Runnable or running (see above). Started by the wake-up on whichever CPU wakes the task
    /// and stopped by the switch away on the task's CPU, which can overlap (a task woken while
    /// it is still switching away): both are atomic adds, so they commute.
    active: AtomicU64,
    /// The (user, system) split last reported (Linux's prev_cputime): neither goes back.
    reported: IrqLock<(u64, u64)>,
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
            total: AtomicU64::new(0),
            user_ticks: AtomicU64::new(0),
            system_ticks: AtomicU64::new(0),
            mark_total: AtomicU64::new(0),
            nvcsw: AtomicU64::new(0),
            nivcsw: AtomicU64::new(0),
            active: AtomicU64::new(0),
            reported: IrqLock::new((0, 0)),
        }
    }

    /// The task's use so far (a live task's clocks read now).
    pub fn usage(&self) -> Usage {
        let total = read(&self.total, cpu::counter());
        let (ut, st) = (
            self.user_ticks.load(Ordering::Relaxed),
            self.system_ticks.load(Ordering::Relaxed),
        );
        let (user, system) = split_cputime(&mut self.reported.lock(), total, ut, st);
        Usage {
            user,
            system,
            nvcsw: self.nvcsw.load(Ordering::Relaxed),
            nivcsw: self.nivcsw.load(Ordering::Relaxed),
        }
    }
}

/// `t` becomes runnable at `now` after blocking, or is new: its `active` clock runs.
#[inline(always)]
pub fn woken(t: &Task, now: u64) {
    t.cputime
        .active
        .fetch_add(now.wrapping_neg(), Ordering::Relaxed);
}

/// The time `t` has waited runnable for a CPU, in nanoseconds.
pub fn run_delay_ns(t: &Task) -> u64 {
    let now = cpu::counter();
    // `total` first: a switch in between only makes `active` the newer.
    let total = read(&t.cputime.total, now);
    let active = read(&t.cputime.active, now);
    crate::time::counter_to_ns(active.saturating_sub(total))
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

/// The interrupt being handled on this CPU was taken from user mode (entry.rs sets it around
/// the handler; the tick reads it).
static IRQ_FROM_USER: PerCpuArray<AtomicBool> = PerCpuArray::new(|_| AtomicBool::new(false));

pub fn cpu_stat(cpu: usize) -> &'static CpuStat {
    CPU_STAT.get(cpu)
}

/// Entry.rs: an interrupt from user mode starts (`true`) or its handler is done (`false`).
/// IRQs masked.
#[inline(always)]
pub fn irq_from_user(on: bool) {
    IRQ_FROM_USER.this().store(on, Ordering::Relaxed);
}

/// Folds the time `t` (running here) used since its last fold into this CPU's user or system
/// sum (`user`: the time goes to user mode). IRQs masked.
fn fold(t: &Task, now: u64, user: bool) {
    let c = &t.cputime;
    let total = read(&c.total, now);
    let dt = total.wrapping_sub(c.mark_total.load(Ordering::Relaxed));
    c.mark_total.store(total, Ordering::Relaxed);
    let s = CPU_STAT.this();
    if t.is_idle() {
        bump(&s.idle, dt);
    } else if user {
        bump(&s.user, dt);
    } else {
        bump(&s.system, dt);
    }
}

/// The timer tick (IRQs masked): the running task's time so far goes into this CPU's sums, and
/// the task gets a user or system sample by where the tick found it.
pub fn tick(t: &Task) {
    let user = IRQ_FROM_USER.this().load(Ordering::Relaxed);
    fold(t, cpu::counter(), user);
    if !t.is_idle() {
        let c = &t.cputime;
        bump(if user { &c.user_ticks } else { &c.system_ticks }, 1);
    }
}

/// A switch from `prev` to `next` on this CPU at `now` (IRQs masked; the counter as
/// `schedule` read it once): `prev`'s CPU clock stops and `next`'s runs; `voluntary` when
/// `prev` blocked rather than being preempted or yielding, which also stops its `active`
/// clock. The CPU's sums are left to the tick (a task's time since its last fold goes to the
/// CPU whose tick finds it running), but for a task that will never run again (`fold_dead`).
#[inline(always)]
pub fn switch(prev: &Task, next: &Task, voluntary: bool, now: u64) {
    bump(&prev.cputime.total, now);
    bump(&next.cputime.total, now.wrapping_neg());
    if voluntary {
        bump(&prev.cputime.nvcsw, 1);
        prev.cputime.active.fetch_add(now, Ordering::Relaxed);
    } else {
        bump(&prev.cputime.nivcsw, 1);
    }
}

/// A dead task's last switch is complete (IRQs masked, on the CPU it ran on): its time since
/// the last tick goes into this CPU's system sum. Both its clocks are stopped.
pub fn fold_dead(t: &Task) {
    fold(t, 0, false);
}

/// A CPU's idle task starts its clock (it is on its CPU from boot).
pub fn start_idle(t: &Task) {
    bump(&t.cputime.total, cpu::counter().wrapping_neg());
}
