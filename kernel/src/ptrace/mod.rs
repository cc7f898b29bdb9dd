//! ptrace: tracers, tracees and their stops (signal-delivery, group, syscall and event stops),
//! the requests of ptrace(2), and access to another task's memory and registers.
//!
//! A tracee in a ptrace stop sleeps in the kernel with its user registers in its trap frame and
//! its FP state saved in memory; the tracer reads and writes them only once the tracee is off
//! its CPU (`Task::on_cpu` false), so the two never touch the same state at once.

#![allow(dead_code)] // filled in by the ptrace work in progress
pub mod regset;

use crate::arch::aarch64::exception::TrapFrame;

/// SECCOMP_RET_TRACE: a PTRACE_EVENT_SECCOMP stop with `data` as the event message, if a
/// tracer asked for it (PTRACE_O_TRACESECCOMP). False when there is none: the syscall then
/// fails with ENOSYS. After the stop the tracer may have changed the call: its number is the
/// task's `local().in_syscall` (arm64's `syscallno`, what NT_ARM_SYSTEM_CALL writes; -1 skips
/// the call), its arguments x0-x5 in `tf`. seccomp then runs the filters again on the new call
/// (a TRACE result then allows it) and the dispatcher runs that number.
pub fn seccomp_event(tf: &mut TrapFrame, data: u16) -> bool {
    let _ = (tf, data);
    false
}
