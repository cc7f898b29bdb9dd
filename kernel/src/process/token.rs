//! The running thread and held threads, as the task core's tokens (task/local.rs) with the
//! POSIX thread beside them: what a syscall handler is given is the right to the running
//! task's locals and trap frame, and its thread.

#![forbid(unsafe_code)]

use super::{thread_of, Thread};
use crate::arch::exception::TrapFrame;
use crate::fs::{FdTable, FsContext};
use crate::task::{self, TaskLocal};
use alloc::sync::Arc;
use core::ops::Deref;
use core::sync::atomic::Ordering;
use spin::Mutex;

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
        self.core
            .data_arc::<Thread>()
            .expect("a task without its thread")
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

/// The file layer's questions about the caller (fs/caller.rs), answered by the running thread.
/// Inline: a syscall handler that has the trait in scope calls these for the thread's own
/// methods (`cur.files()` on the read and write paths), and must pay no call for it.
impl crate::fs::Caller for CurrentTask {
    #[inline]
    fn core(&self) -> &task::CurrentTask {
        &self.core
    }
    #[inline]
    fn euid(&self) -> u32 {
        self.thread.process.euid.load(Ordering::Relaxed)
    }
    #[inline]
    fn fs_ids(&self) -> (u32, u32) {
        let p = &self.thread.process;
        (
            p.fsuid.load(Ordering::Relaxed),
            p.fsgid.load(Ordering::Relaxed),
        )
    }
    #[inline]
    fn nofile(&self) -> u64 {
        self.thread
            .process
            .rlimit(svelt_abi::uapi::sys::RLIMIT_NOFILE)
    }
    #[inline]
    fn fs(&self) -> Arc<Mutex<FsContext>> {
        self.thread.fs()
    }
    #[inline]
    fn files(&self) -> Arc<Mutex<FdTable>> {
        self.thread.files()
    }
    fn broken_pipe(&self) {
        let s = svelt_abi::uapi::signal::SIGPIPE;
        super::signal::send_to_task(&self.to_arc(), s, super::signal::SigInfo::kernel(s));
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
