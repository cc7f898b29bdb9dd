//! Wait queues: a task sleeps until a condition holds, the layer above has an event for it (a
//! signal: `hooks::interrupted`) or a deadline passes.

#![forbid(unsafe_code)]

use super::{sched, State, Task};
use crate::sync::IrqLock;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use svelt_abi::uapi::errno::{Errno, SysResult};

pub struct WaitQueue {
    waiters: IrqLock<VecDeque<Arc<Task>>>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub const fn new() -> WaitQueue {
        WaitQueue {
            waiters: IrqLock::new(VecDeque::new()),
        }
    }

    pub fn wake_all(&self) {
        let all: VecDeque<Arc<Task>> = core::mem::take(&mut *self.waiters.lock());
        for t in all {
            super::hooks::wake(&t);
        }
    }

    fn remove(&self, t: &Task) {
        self.waiters.lock().retain(|w| !core::ptr::eq(&**w, t));
    }

    /// Sleeps until `cond` returns `Some`. A pending signal ends the wait with `EINTR`; a
    /// deadline (counter value) with `Ok(None)`.
    pub fn wait_deadline<R>(
        &self,
        cond: impl FnMut() -> Option<R>,
        deadline: Option<u64>,
    ) -> SysResult<Option<R>> {
        self.wait_inner(cond, deadline, true)
    }

    /// Sleeps until `cond` holds; signals do not end the wait (only a kill of the task does,
    /// with `None`).
    pub fn wait_uninterruptible<R>(&self, cond: impl FnMut() -> Option<R>) -> Option<R> {
        self.wait_inner(cond, None, false).ok().flatten()
    }

    fn wait_inner<R>(
        &self,
        mut cond: impl FnMut() -> Option<R>,
        deadline: Option<u64>,
        interruptible: bool,
    ) -> SysResult<Option<R>> {
        let me = sched::current_arc();
        loop {
            if let Some(r) = cond() {
                return Ok(Some(r));
            }
            let killed = me.killed.load(core::sync::atomic::Ordering::Acquire);
            if killed || (interruptible && super::hooks::interrupted(&me)) {
                return Err(Errno::EINTR);
            }
            if deadline.is_some_and(|d| crate::arch::cpu::counter() >= d) {
                return Ok(None);
            }
            {
                let mut q = self.waiters.lock();
                me.set_state(State::Sleeping);
                q.push_back(me.clone());
            }
            // Re-check now that we are Sleeping: a condition change or a signal that came in
            // before (while we were still Running, so its wake-up found nothing to wake) would
            // otherwise be lost. One that comes in from here on makes us runnable again.
            if let Some(r) = cond() {
                self.remove(&me);
                sched::cancel_sleep(&me);
                return Ok(Some(r));
            }
            let killed = me.killed.load(core::sync::atomic::Ordering::Acquire);
            if killed || (interruptible && super::hooks::interrupted(&me)) {
                self.remove(&me);
                sched::cancel_sleep(&me);
                return Err(Errno::EINTR);
            }
            if let Some(d) = deadline {
                super::timer::wake_at(d, &me);
            }
            sched::schedule();
            self.remove(&me);
            if deadline.is_some() {
                super::timer::cancel_wake(&me);
            }
        }
    }

    pub fn wait<R>(&self, cond: impl FnMut() -> Option<R>) -> SysResult<R> {
        self.wait_deadline(cond, None).map(|r| r.unwrap())
    }
}

/// Sleeps until the deadline or a signal (nanosleep): `Ok(())` when the time has passed.
pub fn sleep_until(deadline: u64) -> SysResult<()> {
    static NOBODY: WaitQueue = WaitQueue::new();
    NOBODY
        .wait_deadline(|| None::<()>, Some(deadline))
        .map(|_| ())
}
