//! Where the hardware floor's calls land (arch/aarch64/entry.rs declares them): exceptions from
//! EL0 and EL1, a new task's first step, and the report of an exception nothing handles. The
//! boot entries `kernel_main` (main.rs) and `secondary_main` (smp.rs) are the other two.

use crate::arch::cpu;
use crate::arch::exception::{self, Kind, TrapFrame};
use crate::process::CurrentTask;
use core::sync::atomic::{AtomicBool, Ordering};

#[unsafe(no_mangle)]
fn svelt_irq() {
    crate::irq::handle();
}

// The three entries from EL0 each make the one `CurrentTask` that the code below them uses.

#[unsafe(no_mangle)]
fn svelt_el0_irq(tf: &mut TrapFrame) {
    // SAFETY: an IRQ taken from EL0: the running task is the one that was in user mode.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    // The tick books its sample as user time (task/cputime.rs).
    crate::task::cputime::irq_from_user(true);
    crate::irq::handle();
    crate::task::cputime::irq_from_user(false);
    crate::trap::return_to_user(&cur, tf);
}

/// Called by the EL0 synchronous vector itself (exception/vectors.s), hence the C ABI.
#[unsafe(no_mangle)]
extern "C" fn svelt_el0_sync(tf: &mut TrapFrame) {
    // SAFETY: a synchronous exception from EL0: the running task is the one that trapped.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    crate::trap::el0_sync(&cur, tf);
}

/// Called by the EL0 synchronous vector for an SVE or SME access trap, with x20-x28 and SP_EL0
/// not yet in the frame (nothing here reads them), hence the C ABI. Returns 0 (`Live`) when the
/// task goes straight back to user mode; any other code, the vector saves the rest of the frame
/// and calls `svelt_el0_fp_return` with it.
#[unsafe(no_mangle)]
extern "C" fn svelt_el0_fp(tf: &mut TrapFrame) -> crate::task::fpstate::AccessTrap {
    // SAFETY: a synchronous exception from EL0: the running task is the one that trapped.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    crate::trap::fp_access(&cur, tf)
}

/// The rest of an access trap `svelt_el0_fp` did not finish, with the whole frame.
#[unsafe(no_mangle)]
extern "C" fn svelt_el0_fp_return(tf: &mut TrapFrame, done: crate::task::fpstate::AccessTrap) {
    // SAFETY: still the exception `svelt_el0_fp` took, on the same task.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    crate::trap::fp_access_return(&cur, tf, done);
}

/// Called by the EL0 synchronous vector for a syscall (EC SVC64), hence the C ABI: the
/// shortest way through the kernel, for the calls made most.
#[unsafe(no_mangle)]
extern "C" fn svelt_el0_svc(tf: &mut TrapFrame) {
    // SAFETY: a syscall from EL0: the running task is the one that made it.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    // The core's fields through the core's token: one load fewer than through the thread.
    cpu::irq_enable();
    if crate::syscall::dispatch(&cur, tf) {
        crate::trap::return_to_user(&cur, tf);
    } else {
        crate::trap::return_from_syscall(&cur, tf);
    }
}

#[unsafe(no_mangle)]
extern "C" fn svelt_ret_from_fork(tf: &mut TrapFrame) {
    crate::task::sched::finish_switch();
    // SAFETY: a new task's first step towards EL0: it is the task running here.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    crate::trap::return_to_user(&cur, tf);
}

/// Called by arch's uaccess fixup, by its symbol name, when a kernel copy to or from user
/// memory faults (arch/aarch64/uaccess.rs declares it).
#[unsafe(no_mangle)]
fn svelt_resolve_user_fault(va: usize, esr: u64) -> bool {
    // SAFETY: the copy runs for the running task on its own kernel stack, and the token stays
    // here.
    let cur = CurrentTask::new(unsafe { crate::task::CurrentTask::enter() });
    crate::trap::user_access_fault(&cur, va, esr)
}

static DYING: AtomicBool = AtomicBool::new(false);

/// Reports an exception the kernel cannot handle and ends the run with the kernel-bug status.
#[unsafe(no_mangle)]
fn svelt_fatal(kind: Kind, tf: &TrapFrame) -> ! {
    if DYING.swap(true, Ordering::AcqRel) {
        cpu::halt();
    }
    let mut out = crate::console::emergency();
    // The running task's kernel stack if the frame pointer is on it, else this CPU's boot/idle
    // stack: both mapped.
    let fp = tf.x[29] as usize;
    let stack = match crate::task::current_kstack() {
        Some(r) if fp >= r.0 && fp < r.1 => r,
        _ => crate::percpu::stack_range(),
    };
    // SAFETY: both candidate stacks are mapped for as long as this CPU runs on them.
    unsafe { exception::report(&mut out, crate::percpu::cpu_id(), kind, tf, stack) };
    crate::power::exit_from_fatal(&mut out)
}
