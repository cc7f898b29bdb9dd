//! Exceptions from user mode: syscalls, page faults, undefined instructions, alignment faults,
//! breakpoints; and the work done on every return to user mode (rescheduling, signals, restarts).

#![deny(unsafe_code)]

use crate::arch::cpu;
use crate::arch::exception::TrapFrame;
use crate::mm::aspace::{Access, FaultError};
use crate::process::signal::{self, SigInfo};
use crate::process::{sched, CurrentTask, Thread};
use crate::task::work;
use svelt_abi::isa::esr::{Ec, Esr};
use svelt_abi::uapi::errno::Errno;
use svelt_abi::uapi::signal as sig;

/// A synchronous exception from EL0 (IRQs masked on entry), and the way back to user mode.
pub fn el0_sync(cur: &CurrentTask, tf: &mut TrapFrame) {
    let esr = Esr(tf.esr);
    cpu::irq_enable();
    let fault = |signo, code, addr, esr| fault(cur, signo, code, addr, esr);
    match esr.ec() {
        Ec::Svc64 => {
            crate::syscall::dispatch(cur, tf);
        }
        Ec::DataAbortLower | Ec::InstrAbortLower => user_abort(cur, tf, esr),
        Ec::PcAlignment => fault(sig::SIGBUS, sig::BUS_ADRALN, tf.far, esr.0),
        Ec::SpAlignment => fault(sig::SIGBUS, sig::BUS_ADRALN, tf.sp_el0, esr.0),
        Ec::Brk => fault(sig::SIGTRAP, sig::TRAP_BRKPT, tf.elr, 0),
        Ec::StepLower => {
            // A step armed for another task (MDSCR_EL1.SS is per CPU) fires at once in the
            // next task to reach EL0: disarm and go on.
            if crate::process::ptrace::stepping(cur) {
                fault(sig::SIGTRAP, sig::TRAP_TRACE, tf.elr, 0)
            } else {
                crate::arch::debug::set_single_step(false);
            }
        }
        Ec::BreakpointLower | Ec::WatchpointLower => {
            let watch = esr.ec() == Ec::WatchpointLower;
            if let Some(info) = crate::process::ptrace::hw_debug_trap(cur, watch, tf.elr, tf.far) {
                signal::force(cur, sig::SIGTRAP, info);
            }
        }
        Ec::FpException => fault(sig::SIGFPE, sig::FPE_FLTUNK, tf.elr, esr.0),
        // A GCS check failed (a return to another address than the GCS holds, a bad
        // GCSSS1 token, a disabled GCSSTR/GCSPUSHM): SIGSEGV/SEGV_CPERR at the instruction,
        // without fault information in the frame (Linux's do_el0_gcs).
        Ec::Gcs if crate::process::gcs::available() => signal::force(
            cur,
            sig::SIGSEGV,
            SigInfo::fault(sig::SIGSEGV, sig::SEGV_CPERR, tf.elr),
        ),
        Ec::SysReg => {
            let access = svelt_abi::isa::idregs::SysRegAccess::from_iss(esr.iss());
            if !emulate_mrs(tf, access) {
                fault(sig::SIGILL, sig::ILL_ILLOPC, tf.elr, 0);
            }
        }
        Ec::Unknown => {
            // Without FEAT_IDST an EL0 ID-register read is an undefined instruction: look at
            // the instruction itself.
            let insn = crate::mm::uaccess::UserPtr::<u32>::new(tf.elr as usize)
                .read()
                .ok();
            let access = insn.and_then(svelt_abi::isa::idregs::SysRegAccess::from_mrs_insn);
            if !access.is_some_and(|a| emulate_mrs(tf, a)) {
                fault(sig::SIGILL, sig::ILL_ILLOPC, tf.elr, 0);
            }
        }
        // Anything else from EL0 is an undefined instruction, as Linux reports it.
        _ => fault(sig::SIGILL, sig::ILL_ILLOPC, tf.elr, 0),
    }
    return_to_user(cur, tf);
}

/// An SVE or SME access trap from EL0 (EC 0x19 or 0x1D), IRQs masked on entry: first use
/// (Linux's do_sve_acc and do_sme_acc), handled with IRQs still masked. Returns `Live` when
/// the registers keep the task's state and the work word has nothing but the FP bit (which an
/// SVE or SME task keeps): the way back to user mode is then nothing more, as a syscall's
/// without work, and the vector restores only the registers the call may change.
/// Otherwise `fp_access_return` takes the full way back. An SME trap that is not first use, and
/// either trap on a CPU that does not offer the extension, is `Illegal`.
pub fn fp_access(cur: &CurrentTask, tf: &TrapFrame) -> crate::task::fpstate::AccessTrap {
    use crate::task::fpstate::{self, AccessTrap};
    let esr = Esr(tf.esr);
    let irqs = cpu::IrqGuard::new();
    let core = cur.core();
    // Bit 2 of the class tells SME (0x1D) from SVE (0x19).
    let done = if esr.ec_raw() & 4 == 0 {
        if fpstate::has_sve() {
            fpstate::do_sve_acc(core, &irqs)
        } else {
            AccessTrap::Illegal
        }
    } else if fpstate::has_sme() {
        fpstate::do_sme_acc(core, &irqs, esr.smtc())
    } else {
        AccessTrap::Illegal
    };
    let t = core.task();
    if done == AccessTrap::Live {
        if t.work.get() & (work::EXIT & !work::FP) == 0 {
            return AccessTrap::Live;
        }
        return AccessTrap::Reload;
    }
    done
}

/// The rest of an access trap `fp_access` did not finish (the frame is now whole): SIGILL for
/// an `Illegal` one, then the full way back to user mode.
pub fn fp_access_return(
    cur: &CurrentTask,
    tf: &mut TrapFrame,
    done: crate::task::fpstate::AccessTrap,
) {
    if done == crate::task::fpstate::AccessTrap::Illegal {
        cpu::irq_enable();
        fault(cur, sig::SIGILL, sig::ILL_ILLOPC, tf.elr, 0);
    }
    return_to_user(cur, tf);
}

/// A fault signal for the current task. `addr` goes into si_addr as given (a data abort's FAR
/// with its tag: the handler sees it only with SA_EXPOSE_TAGBITS, see `deliver`); the frame's
/// fault_address gets it untagged, as Linux's set_thread_esr.
fn fault(t: &CurrentTask, signo: u32, code: i32, addr: u64, esr: u64) {
    let l = t.local();
    l.fault_esr.set(esr);
    l.fault_address
        .set(if signo == sig::SIGSEGV || signo == sig::SIGBUS {
            svelt_abi::uapi::sys::untagged_addr(addr as usize) as u64
        } else {
            0
        });
    // Logged only when no handler takes it, as Linux's arm64_show_signal: a program that
    // handles its own faults (a debugger's breakpoints, a JIT's guard pages) logs nothing.
    if !signal::force_fault(t, signo, SigInfo::fault(signo, code, addr)) {
        log::debug!(
            "pid {} tid {}: signal {signo} code {code} addr {addr:#x} esr {esr:#x}",
            t.pid(),
            t.tid
        );
    }
}

fn user_abort(cur: &CurrentTask, tf: &mut TrapFrame, esr: Esr) {
    let fault = |signo, code, addr, esr| fault(cur, signo, code, addr, esr);
    // A tagged pointer (top byte, ignored by the MMU with TBI0) faults at its untagged page;
    // the signal carries the whole FAR, as Linux's do_page_fault passes it on.
    let far = svelt_abi::uapi::sys::untagged_addr(tf.far as usize);
    let addr = tf.far;
    let access = if esr.ec() == Ec::InstrAbortLower {
        Access::Exec
    } else if esr.gcs_access() {
        Access::Gcs
    } else if esr.wnr() {
        Access::Write
    } else {
        Access::Read
    };
    match esr.fsc() {
        // Translation, access-flag and permission faults: demand paging, or SIGSEGV.
        0x04..=0x0f => match resolve_fault(cur, far, access) {
            Ok(()) => {}
            Err(FaultError::NoMapping) => fault(sig::SIGSEGV, sig::SEGV_MAPERR, addr, esr.0),
            Err(FaultError::Permission) => fault(sig::SIGSEGV, sig::SEGV_ACCERR, addr, esr.0),
            Err(FaultError::Bus) => fault(sig::SIGBUS, sig::BUS_ADRERR, addr, esr.0),
            Err(FaultError::NoMemory) => {
                oom_kill(cur);
            }
        },
        0x21 => fault(sig::SIGBUS, sig::BUS_ADRALN, addr, esr.0),
        0x00..=0x03 => fault(sig::SIGSEGV, sig::SEGV_MAPERR, addr, esr.0),
        _ => fault(sig::SIGBUS, sig::BUS_OBJERR, addr, esr.0),
    }
}

/// A page fault that cannot get a frame: the faulting process dies (SIGKILL), the kernel goes
/// on. Logged like Linux's out-of-memory killer, naming the victim.
pub fn oom_kill(t: &Thread) {
    let p = t.process();
    log::warn!(
        "Out of memory: Killed process {} ({}) total-vm:{}kB",
        p.pid,
        p.exe.lock().rsplit('/').next().unwrap_or(""),
        t.mm().map_or(0, |mm| mm.lock().total_vm() / 1024)
    );
    signal::force(t, sig::SIGKILL, SigInfo::kernel(sig::SIGKILL));
}

/// Demand paging for the current task `t`: maps the page behind `va` if its mapping allows
/// `access`.
fn resolve_fault(t: &Thread, va: usize, access: Access) -> Result<(), FaultError> {
    match t.mm() {
        Some(mm) => mm.lock().handle_fault(va, access),
        None => Err(FaultError::NoMapping),
    }
}

/// A kernel user-access instruction faulted on `va` (arch::uaccess) in a copy `t` makes: true
/// if the page is now there and the access may be retried. Never called with the
/// address-space lock held: user copies run outside `with_mm`.
pub fn user_access_fault(t: &Thread, va: usize, esr: u64) -> bool {
    let esr = Esr(esr);
    let access = if esr.gcs_access() {
        Access::Gcs
    } else if esr.wnr() {
        Access::Write
    } else {
        Access::Read
    };
    match resolve_fault(t, svelt_abi::uapi::sys::untagged_addr(va), access) {
        Ok(()) => true,
        // The copy fails with EFAULT, and the process is killed as a user fault would be.
        Err(FaultError::NoMemory) => {
            oom_kill(t);
            false
        }
        Err(_) => false,
    }
}

/// EL0 `MRS Xt, <ID register>`: Linux's sanitised value (HWCAP_CPUID). False: SIGILL.
fn emulate_mrs(tf: &mut TrapFrame, access: svelt_abi::isa::idregs::SysRegAccess) -> bool {
    let raw = crate::arch::cpu::read_id_regs();
    match svelt_abi::isa::idregs::emulate(&access, &raw, crate::cpufeature::offer()) {
        Some(v) => {
            if access.rt != 31 {
                tf.x[access.rt as usize] = v;
            }
            tf.elr += 4;
            true
        }
        None => false,
    }
}

/// The way back to user mode after a syscall (IRQs masked on return): with the work word
/// clear and no restart to consider, only the end of the syscall; else the full path.
#[inline(always)]
pub fn return_from_syscall(cur: &CurrentTask, tf: &mut TrapFrame) {
    cpu::irq_disable();
    // The core's fields through the core's token: one load fewer than through the thread.
    let t = cur.core().task();
    // Read with IRQs masked: a bit set after this read comes with an IPI, taken right after
    // the ERET (work.rs).
    if t.work.get() & work::EXIT != 0 || restarts(tf.x[0]) {
        return return_to_user(cur, tf);
    }
    cur.local().in_syscall.set(-1);
}

/// `x0` is one of the restart codes `signal::finish_syscall` acts on.
#[inline(always)]
fn restarts(x0: u64) -> bool {
    const FIRST: u64 = Errno::ERESTARTSYS as u64;
    const LAST: u64 = Errno::ERESTART_RESTARTBLOCK as u64;
    x0.wrapping_neg().wrapping_sub(FIRST) <= LAST - FIRST
}

/// The full way back to user mode, after an exception or an IRQ (and a syscall with work):
/// the work loop if the word says so, then a syscall's restart, ptrace's single step and the
/// FP state. Returns with IRQs masked.
pub fn return_to_user(cur: &CurrentTask, tf: &mut TrapFrame) {
    cpu::irq_disable();
    let t = cur.core().task();
    let mut w = t.work.get();
    if w & work::LOOP != 0 {
        return_to_user_work(cur, tf);
        // A tracer may have attached during a stop in there.
        w = t.work.get();
    }
    signal::finish_syscall(cur, tf);
    // `traced` only under its bit (set after it by attach, work.rs).
    if w & work::PTRACED != 0 && cur.traced.load(core::sync::atomic::Ordering::Relaxed) {
        crate::process::ptrace::prepare_return(cur, tf);
    }
    crate::task::fpstate::fpsimd_restore_current_state(cur.core());
}

/// The work `return_to_user` found: exit, reschedule, rseq, signals, until none is left.
/// Returns with IRQs masked.
#[cold]
#[inline(never)]
fn return_to_user_work(cur: &CurrentTask, tf: &mut TrapFrame) {
    loop {
        cpu::irq_disable();
        let t = cur.task();
        // The hints' states are asked below; a hint set again from here on is seen next time.
        if t.work.get() & work::LOOP_HINTS != 0 {
            t.work.clear(work::LOOP_HINTS);
        }
        if t.killed.load(core::sync::atomic::Ordering::Acquire) {
            cpu::irq_enable();
            crate::process::gcs::thread_exit(cur);
            crate::process::exit::do_exit(
                cur,
                t.exit_code.load(core::sync::atomic::Ordering::Relaxed),
            );
        }
        if sched::need_resched() {
            cpu::irq_enable();
            sched::schedule();
            continue;
        }
        if cur.local().rseq_resched.get() {
            cpu::irq_enable();
            crate::process::rseq::resume(cur, tf);
            continue;
        }
        if signal::has_work(t) {
            cpu::irq_enable();
            signal::do_signal(cur, tf);
            continue;
        }
        break;
    }
}
