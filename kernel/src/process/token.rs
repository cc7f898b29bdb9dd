//! The running thread and held threads, as the task core's tokens (task/local.rs) with the
//! POSIX thread beside them: what a syscall handler is given is the right to the running
//! task's locals and trap frame, and its thread.

#![forbid(unsafe_code)]

use super::{current_arc, thread_of, Thread};
use crate::arch::exception::TrapFrame;
use crate::task::{self, TaskLocal};
use alloc::sync::Arc;
use core::ops::Deref;

/// The running thread, as the right to its locals and trap frame.
pub struct CurrentTask {
    core: task::CurrentTask,
    thread: &'static Thread,
}

impl CurrentTask {
    /// The token for the task the core's token names.
    pub fn new(core: task::CurrentTask) -> CurrentTask {
        let thread = thread_of(core.task());
        CurrentTask { core, thread }
    }

    /// The core's token, for the vector-state machine and the scheduler.
    pub fn core(&self) -> &task::CurrentTask {
        &self.core
    }

    pub fn task(&self) -> &'static Thread {
        self.thread
    }

    pub fn local(&self) -> &TaskLocal {
        self.core.local()
    }

    /// An owned reference to the running thread, for a caller that must keep it.
    pub fn to_arc(&self) -> Arc<Thread> {
        current_arc()
    }

    pub fn held(&self) -> Held<'_> {
        Held {
            core: self.core.held(),
            thread: self.thread,
        }
    }
}

impl Deref for CurrentTask {
    type Target = Thread;
    fn deref(&self) -> &Thread {
        self.thread
    }
}

/// A thread whose user state (trap frame, locals) the holder may read and write now.
pub struct Held<'a> {
    core: task::Held<'a>,
    thread: &'a Thread,
}

impl<'a> Held<'a> {
    /// The core's token for `t` (task::Held::parked says when that may be made) with `t`.
    pub fn new(core: task::Held<'a>, t: &'a Thread) -> Held<'a> {
        Held { core, thread: t }
    }

    pub fn core(&self) -> &task::Held<'a> {
        &self.core
    }

    pub fn task(&self) -> &'a Thread {
        self.thread
    }

    /// Whether this is the running thread (whose registers are live in the CPU).
    pub fn is_current(&self) -> bool {
        self.core.is_current()
    }

    pub fn local(&self) -> &TaskLocal {
        self.core.local()
    }

    /// A copy of the thread's saved user registers.
    pub fn trap_frame(&self) -> TrapFrame {
        self.core.trap_frame()
    }

    /// Replaces the thread's saved user registers.
    pub fn set_trap_frame(&self, tf: &TrapFrame) {
        self.core.set_trap_frame(tf)
    }
}
