//! Each process's ITIMER_REAL (setitimer, alarm), driven by the tick, which also drives
//! ITIMER_VIRTUAL and ITIMER_PROF (cputime.rs) and the POSIX timers (posix_timer.rs).

#![forbid(unsafe_code)]

use super::Process;
use crate::arch::cpu;
use crate::sync::IrqLock;
use crate::time::{counter_to_ns, deadline_after_ns, ns_to_counter};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

static ITIMERS: IrqLock<Vec<Weak<Process>>> = IrqLock::new(Vec::new());

/// Real-interval timer of a process (setitimer ITIMER_REAL, alarm).
#[derive(Default, Clone, Copy)]
pub struct ITimer {
    /// Counter value of the next expiry (0: disarmed).
    pub deadline: u64,
    pub interval_ns: u64,
}

pub fn arm_itimer(p: &Arc<Process>, value_ns: u64, interval_ns: u64) {
    *p.itimer.lock() = ITimer {
        deadline: if value_ns == 0 {
            0
        } else {
            deadline_after_ns(value_ns)
        },
        interval_ns,
    };
    if value_ns != 0 {
        let mut l = ITIMERS.lock();
        l.retain(|w| w.strong_count() > 0);
        if !l
            .iter()
            .any(|w| w.upgrade().is_some_and(|q| Arc::ptr_eq(&q, p)))
        {
            l.push(Arc::downgrade(p));
        }
    }
}

/// Remaining (value, interval) in ns.
pub fn itimer_remaining(p: &Process) -> (u64, u64) {
    let t = *p.itimer.lock();
    let now = cpu::counter();
    let left = if t.deadline == 0 {
        0
    } else {
        counter_to_ns(t.deadline.saturating_sub(now)).max(1)
    };
    (left, t.interval_ns)
}

/// Has the timer interrupt run `tick`. Boot time, before interrupts are on.
pub fn init_irq() {
    crate::task::sched::on_tick_with_task(tick);
}

/// Timer tick on any CPU, with the task it interrupted: expired interval timers send SIGALRM;
/// the interrupted thread's process's CPU-time interval timers and every armed POSIX timer are
/// looked at too.
fn tick(running: Option<&crate::task::Task>) {
    if let Some(t) = running.filter(|t| !t.is_idle()) {
        super::cputime::tick(super::thread_of(t));
    }
    super::posix_timer::tick();
    let now = cpu::counter();
    let Some(l) = ITIMERS.try_lock() else { return };
    for p in l.iter().filter_map(Weak::upgrade) {
        // The expiry is decided and its SIGALRM queued under the timer's lock, which
        // setitimer takes too: once setitimer(ITIMER_REAL, 0) returns, no signal of the old
        // timer can still arrive (Linux's do_setitimer waits for a running hrtimer callback
        // in the same way). Order: ITIMERS -> Process::itimer -> the signal locks.
        let mut it = p.itimer.lock();
        if it.deadline != 0 && it.deadline <= now {
            it.deadline = if it.interval_ns == 0 {
                0
            } else {
                now + ns_to_counter(it.interval_ns)
            };
            crate::process::signal::send_to_process(
                &p,
                svelt_abi::uapi::signal::SIGALRM,
                crate::process::signal::SigInfo::kernel(svelt_abi::uapi::signal::SIGALRM),
            );
        }
    }
}
