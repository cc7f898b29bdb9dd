//! A task's work word: one atomic word of flags that says whether a syscall's entry or the
//! return to user mode has anything to do besides the call itself. With the word clear the
//! syscall path is one load and one branch on entry and one on the way out (trap.rs); any bit
//! sends it through the full path, which asks the real state behind each bit (the idea of
//! Linux's thread_info flags and SYSCALL_WORK bits, read by exit_to_user_mode_loop in
//! kernel/entry/common.c and el0_svc_common in arch/arm64/kernel/syscall.c).
//!
//! A bit may be set when nothing is pending (the full path then finds nothing and costs one
//! pass), never clear while something is: every setter stores its state first and the bit
//! after (Release), then kicks the task's CPU if the task may be running elsewhere, as it did
//! before the word existed. The return path reads the word with IRQs masked, so a bit set
//! after that read comes with an IPI taken right after the ERET, whose return runs the full
//! path. Hint bits (`NEED_RESCHED`, `RSEQ`, `FP`) are cleared by the full path before it asks
//! their state, so a bit set again meanwhile is seen on its next pass.

use core::sync::atomic::{AtomicU32, Ordering};

/// A signal, a stop or a mask change may need the return path (Linux's TIF_SIGPENDING).
/// Set by process::signal when it queues or unblocks a signal or starts a stop; cleared by
/// signal delivery before it looks at the queues (the state behind it is the queues).
pub const SIGPENDING: u32 = 1 << 0;
/// This CPU's `need_resched` was set while the task ran (Linux's TIF_NEED_RESCHED). Set on the
/// running task with the per-CPU flag by the tick, the reschedule IPI and a task queued on
/// this CPU (a wake-up, a new child); cleared by the full return path, which asks the per-CPU
/// flag.
pub const NEED_RESCHED: u32 = 1 << 1;
/// The task must exit (`Task::killed`: exit_group, another thread's exec, a fatal signal).
/// Set with `killed` (`Task::set_killed`); never cleared: the task does not return to user.
pub const KILLED: u32 = 1 << 2;
/// The task may be inside an rseq critical section that must be aborted, or its rseq area
/// needs its CPU fields (`TaskLocal::rseq_resched`, Linux's TIF_NOTIFY_RESUME for rseq). Set
/// with that flag (a switch away, fork, registration); cleared by the full return path.
pub const RSEQ: u32 = 1 << 3;
/// The FP hooks must run: at a syscall's entry (an SVE/SME task's state is discarded) and on
/// the way out (the registers may not hold the task's state: Linux's TIF_FOREIGN_FPSTATE).
/// Set by task::fpstate when the task is switched in, whenever the kernel changes its state
/// (exec, sigreturn, a VL change, a trap, a regset), and kept while SVE or SME is enabled;
/// cleared by the full return path once it has loaded the state of a task without either.
pub const FP: u32 = 1 << 4;
/// The task is traced: the return path lets ptrace arm or disarm single-stepping. Set by
/// ptrace's attach, cleared by its detach (process::ptrace::link and unlink).
pub const PTRACED: u32 = 1 << 5;
/// PTRACE_SYSCALL: stop at syscall entry and exit (Linux's SYSCALL_WORK_SYSCALL_TRACE). Set
/// and cleared by the tracer's resume request while the tracee is stopped, cleared by detach.
pub const SYSCALL_TRACE: u32 = 1 << 6;
/// A seccomp mode is on: every syscall goes through its filters (Linux's
/// SYSCALL_WORK_SECCOMP). Set when a mode is set (or inherited at fork); never cleared.
pub const SECCOMP: u32 = 1 << 7;

/// The bits a syscall's entry acts on.
pub const ENTRY: u32 = SYSCALL_TRACE | SECCOMP | FP;
/// The bits the return to user mode acts on.
pub const EXIT: u32 = SIGPENDING | NEED_RESCHED | KILLED | RSEQ | FP | PTRACED;
/// The bits the return path's work loop acts on (the rest of the full path runs anyway).
pub const LOOP: u32 = SIGPENDING | NEED_RESCHED | KILLED | RSEQ;
/// The hints the work loop clears before asking their state (`FP` is task::fpstate's).
pub const LOOP_HINTS: u32 = NEED_RESCHED | RSEQ;

/// The word itself.
pub struct Work(AtomicU32);

impl Work {
    pub const fn new() -> Work {
        Work(AtomicU32::new(0))
    }

    /// The bits now.
    #[inline(always)]
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    /// Sets `bits` (after the state they stand for is stored).
    #[inline]
    pub fn set(&self, bits: u32) {
        self.0.fetch_or(bits, Ordering::Release);
    }

    /// Clears `bits` (before the state they stand for is asked).
    #[inline]
    pub fn clear(&self, bits: u32) {
        self.0.fetch_and(!bits, Ordering::AcqRel);
    }

    /// Sets or clears `bits`.
    pub fn put(&self, bits: u32, on: bool) {
        if on {
            self.set(bits)
        } else {
            self.clear(bits)
        }
    }
}
