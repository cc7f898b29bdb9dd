//! A task's own state, and the three ways to reach it.
//!
//! `TaskLocal` holds what only one CPU at a time may touch: the user TLS registers as saved at
//! switch-out, the FP/SVE/SME state, the syscall being run, the fault behind a signal and the
//! tracer's breakpoints. Its fields are `Cell`s and `RefCell`s, so holders share `&TaskLocal`
//! and a second mutable borrow is caught (a kernel bug) instead of aliasing. Who may hold one:
//!
//! - `CurrentTask`: the running task, made once per exception entry from EL0 (kernel/src/entry.rs,
//!   which also makes one when a kernel copy faults on user memory) and passed down; it is
//!   neither `Send` nor `Sync`, so it never reaches another task. It is the only way above the
//!   task core to the running task (the scheduler's own pointer is private to task/).
//! - `Held`: a task whose user state the holder may read and write: the current task, or one
//!   parked off its CPU that the holder keeps parked (a tracer's `ptrace::Frozen`, a core dump's
//!   stopped threads).
//! - the scheduler, for the task it switches out (the current one) and the task it switches in
//!   (off every CPU until then).

use super::fpstate::TaskFpState;
use super::Task;
use crate::arch::exception::TrapFrame;
use core::cell::{Cell, RefCell};
use core::marker::PhantomData;
use core::ops::Deref;
use svelt_abi::fp::regset::HwDebug;

pub struct TaskLocal {
    pub fpu: RefCell<TaskFpState>,
    /// TPIDR_EL0 and TPIDRRO_EL0 while the task is switched out (live in the CPU while it runs).
    pub tpidr_el0: Cell<u64>,
    pub tpidrro_el0: Cell<u64>,
    /// x0 at syscall entry, for restarting an interrupted syscall.
    pub orig_x0: Cell<u64>,
    /// Syscall number being executed (-1 outside syscalls).
    pub in_syscall: Cell<i64>,
    /// ESR of the fault behind the signal being delivered (esr_context), 0 if none.
    pub fault_esr: Cell<u64>,
    pub fault_address: Cell<u64>,
    /// Breakpoints and watchpoints a tracer set (NT_ARM_HW_BREAK / NT_ARM_HW_WATCH).
    pub hw_debug: RefCell<HwDebug>,
    /// The guarded control stack (GCSPR_EL0 lives in the CPU while the task runs).
    pub gcs: Cell<svelt_abi::isa::gcs::GcsState>,
    /// The thread's rseq(2) registration.
    pub rseq: Cell<Option<RseqArea>>,
    /// Switched out since it last returned to user mode: its rseq area needs updating.
    pub rseq_resched: Cell<bool>,
    /// What restart_syscall resumes: a relative sleep interrupted with no handler run
    /// (Linux's restart_block); `None` makes restart_syscall fail with EINTR.
    pub restart_block: Cell<Option<RestartBlock>>,
    /// The memory rt_sigreturn last read a frame's extra space into, kept for the next one (a
    /// task with large vector state takes one such frame per signal).
    pub sigreturn_extra: Cell<alloc::vec::Vec<u8>>,
}

/// A thread's rseq(2) registration: where its `struct rseq` is, its length and the abort
/// signature (process/rseq.rs acts on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RseqArea {
    pub addr: usize,
    pub len: u32,
    pub sig: u32,
}

/// An interrupted relative sleep: its deadline (counter) and where its time left goes.
#[derive(Clone, Copy)]
pub struct RestartBlock {
    pub deadline: u64,
    pub rem: usize,
}

impl TaskLocal {
    pub fn new(fpu: TaskFpState, tpidr_el0: u64, tpidrro_el0: u64) -> TaskLocal {
        TaskLocal {
            fpu: RefCell::new(fpu),
            tpidr_el0: Cell::new(tpidr_el0),
            tpidrro_el0: Cell::new(tpidrro_el0),
            orig_x0: Cell::new(0),
            in_syscall: Cell::new(-1),
            fault_esr: Cell::new(0),
            fault_address: Cell::new(0),
            hw_debug: RefCell::new(HwDebug::default()),
            gcs: Cell::new(svelt_abi::isa::gcs::GcsState::default()),
            rseq: Cell::new(None),
            rseq_resched: Cell::new(false),
            restart_block: Cell::new(None),
            sigreturn_extra: Cell::new(alloc::vec::Vec::new()),
        }
    }
}

/// The running task, as the right to its locals and trap frame.
pub struct CurrentTask {
    task: &'static Task,
    _not_send: PhantomData<*const ()>,
}

impl CurrentTask {
    /// # Safety
    /// Only at an entry from EL0 (an exception, or a new task's first return), or in a kernel
    /// task's own code that hands the token to no other task (boot, as the boot CPU's idle
    /// task): the task running here is the one the token names, and every holder of the token
    /// runs as it.
    pub unsafe fn enter() -> CurrentTask {
        CurrentTask {
            task: super::sched::current(),
            _not_send: PhantomData,
        }
    }

    pub fn task(&self) -> &'static Task {
        self.task
    }

    pub fn local(&self) -> &TaskLocal {
        // SAFETY: the token exists only on the running task's own kernel stack (not Send), and
        // a running task is on one CPU.
        unsafe { self.task.local_unchecked() }
    }

    pub fn held(&self) -> Held<'_> {
        Held {
            task: self.task,
            current: true,
            _not_send: PhantomData,
        }
    }
}

impl Deref for CurrentTask {
    type Target = Task;
    fn deref(&self) -> &Task {
        self.task
    }
}

/// A task whose user state (trap frame, locals) the holder may read and write now.
pub struct Held<'a> {
    task: &'a Task,
    current: bool,
    _not_send: PhantomData<*const ()>,
}

impl<'a> Held<'a> {
    /// # Safety
    /// `t` is asleep and off every CPU, and stays so (nothing wakes it, nothing else touches
    /// its user state) for as long as the result lives.
    pub unsafe fn parked(t: &'a Task) -> Held<'a> {
        Held {
            task: t,
            current: false,
            _not_send: PhantomData,
        }
    }

    pub fn task(&self) -> &'a Task {
        self.task
    }

    /// Whether this is the running task (whose registers are live in the CPU).
    pub fn is_current(&self) -> bool {
        self.current
    }

    pub fn local(&self) -> &TaskLocal {
        // SAFETY: the running task (see CurrentTask::local), or a parked one the holder keeps
        // parked (`parked`'s contract).
        unsafe { self.task.local_unchecked() }
    }

    /// A copy of the task's saved user registers.
    pub fn trap_frame(&self) -> TrapFrame {
        // SAFETY: the frame at the top of the task's kernel stack, which lives as long as the
        // task; it is the running task's or a parked one's (as in `local`), so nothing writes
        // it meanwhile. A copy: no reference to it outlives the read.
        unsafe { self.task.trap_frame().read() }
    }

    /// Replaces the task's saved user registers.
    pub fn set_trap_frame(&self, tf: &TrapFrame) {
        // SAFETY: as in `trap_frame`.
        unsafe { self.task.trap_frame().write(*tf) }
    }
}
