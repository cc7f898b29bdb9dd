//! Sleepers woken at their deadline (nanosleep, futex and poll timeouts), driven by the tick.

#![forbid(unsafe_code)]

use super::Task;
use crate::arch::cpu;
use crate::sync::IrqLock;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

static SLEEPERS: IrqLock<Vec<(u64, Weak<Task>)>> = IrqLock::new(Vec::new());

/// Wakes `t` once the counter reaches `deadline`.
pub fn wake_at(deadline: u64, t: &Arc<Task>) {
    SLEEPERS.lock().push((deadline, Arc::downgrade(t)));
}

/// Forgets `t`'s pending wake-ups (its sleep ended first), so none reaches a later sleep.
pub fn cancel_wake(t: &Task) {
    SLEEPERS
        .lock()
        .retain(|(_, w)| !core::ptr::eq(w.as_ptr(), t));
}

/// Has the timer interrupt run `tick`. Boot time, before interrupts are on.
pub fn init_irq() {
    crate::irq::on_tick(tick);
}

/// Timer tick on any CPU.
fn tick() {
    let now = cpu::counter();
    let due: Vec<Arc<Task>> = {
        let Some(mut l) = SLEEPERS.try_lock() else {
            return;
        };
        let mut due = Vec::new();
        l.retain(|(d, w)| {
            if *d <= now {
                if let Some(t) = w.upgrade() {
                    due.push(t);
                }
                false
            } else {
                w.strong_count() > 0
            }
        });
        due
    };
    for t in due {
        super::hooks::wake(&t);
    }
}
