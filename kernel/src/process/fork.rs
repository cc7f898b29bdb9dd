//! clone: new threads and processes.

use super::{alloc_pid, register, sched, CurrentTask, Process, Thread, ThreadCharge};
use crate::arch::context;
use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::UserPtr;
use crate::task::{KernelStack, Task, TaskLocal};
use alloc::sync::Arc;
use core::sync::atomic::Ordering;
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sched::{self as s, CloneArgs, SCHED_RESET_ON_FORK};

/// Creates a task from the current one as `clone` (`legacy`) or `clone3` describes; returns
/// the child's tid.
// The file's one unsafe: writing the child's trap frame and context before it runs.
#[allow(unsafe_code)]
pub fn do_clone(
    cur: &CurrentTask,
    args: &CloneArgs,
    tf: &TrapFrame,
    legacy: bool,
) -> SysResult<u32> {
    args.check_flags(legacy)?;
    let flags = args.flags;
    let parent = cur.task();
    let parent_proc = parent.process();

    let mm = match parent.mm() {
        Some(mm) if flags & s::CLONE_VM != 0 => Some(mm),
        Some(mm) => {
            let child = Arc::new(Mutex::new(mm.lock().fork()?));
            crate::mm::aspace::register_file_maps(&child);
            Some(child)
        }
        None => None,
    };
    let files = if flags & s::CLONE_FILES != 0 {
        parent.files()
    } else {
        Arc::new(Mutex::new(parent.files().lock().clone()))
    };
    let fs = if flags & s::CLONE_FS != 0 {
        parent.fs()
    } else {
        Arc::new(Mutex::new(parent.fs().lock().clone()))
    };
    let sighand = if flags & s::CLONE_SIGHAND != 0 {
        parent.sighand()
    } else if flags & s::CLONE_CLEAR_SIGHAND != 0 {
        // clone3's CLONE_CLEAR_SIGHAND: caught signals start at their default, as at exec.
        Arc::new(crate::sync::IrqLock::new(
            parent.sighand().lock().for_exec(),
        ))
    } else {
        Arc::new(crate::sync::IrqLock::new(parent.sighand().lock().clone()))
    };

    // Limits first (EAGAIN), before anything is linked anywhere.
    let charge = ThreadCharge::new(
        parent_proc.uid.load(Ordering::Relaxed),
        parent_proc.rlimit(svelt_abi::uapi::sys::RLIMIT_NPROC),
    )?;
    let kstack = KernelStack::new()?;
    let tid = alloc_pid();
    let process = if flags & s::CLONE_THREAD != 0 {
        parent_proc.clone()
    } else {
        let up = if flags & s::CLONE_PARENT != 0 {
            parent_proc.parent().unwrap_or(parent_proc.clone())
        } else {
            parent_proc.clone()
        };
        let p = Process::new(tid, Arc::downgrade(&up));
        p.pgid
            .store(parent_proc.pgid.load(Ordering::Relaxed), Ordering::Relaxed);
        p.sid
            .store(parent_proc.sid.load(Ordering::Relaxed), Ordering::Relaxed);
        p.ctty
            .store(parent_proc.ctty.load(Ordering::Relaxed), Ordering::Relaxed);
        *p.exe.lock() = parent_proc.exe.lock().clone();
        *p.rlimits.lock() = *parent_proc.rlimits.lock();
        for (dst, src) in [
            (&p.uid, &parent_proc.uid),
            (&p.euid, &parent_proc.euid),
            (&p.suid, &parent_proc.suid),
            (&p.fsuid, &parent_proc.fsuid),
            (&p.fsgid, &parent_proc.fsgid),
            (&p.personality, &parent_proc.personality),
        ] {
            dst.store(src.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        p.exit_signal
            .store(args.exit_signal as u32, Ordering::Relaxed);
        // Found by its pid from now until it is reaped.
        super::hash_process(&p)?;
        let mut children = up.children.lock();
        if children.try_reserve(1).is_err() {
            drop(children);
            super::unhash_process(p.pid);
            return Err(Errno::ENOMEM);
        }
        children.push(p.clone());
        drop(children);
        p
    };

    // The child's locals: the parent's FP state and TLS (or the TLS it was given).
    let pl = cur.local();
    pl.tpidr_el0.set(sched::current_tpidr_el0());
    let tls = if flags & s::CLONE_SETTLS != 0 {
        args.tls
    } else {
        pl.tpidr_el0.get()
    };
    let gcs = match crate::process::gcs::for_child(
        cur,
        flags & s::CLONE_VM != 0,
        flags & s::CLONE_VFORK != 0,
        args.stack_size,
    ) {
        Ok(g) => g,
        Err(e) => {
            // A new process never ran: unlist it, so no pid answers for it and no wait
            // waits for it.
            if flags & s::CLONE_THREAD == 0 {
                if let Some(up) = process.parent() {
                    up.children.lock().retain(|c| !Arc::ptr_eq(c, &process));
                }
                super::unhash_process(process.pid);
            }
            return Err(e);
        }
    };
    let fpu = crate::task::fpstate::fork_state(cur.core(), flags & s::CLONE_VM != 0);
    let local = TaskLocal::new(fpu, tls, pl.tpidrro_el0.get());
    local.gcs.set(gcs);
    // A new process keeps the registration (its copy of the memory has the area); a thread or
    // a vfork child registers its own.
    if flags & s::CLONE_VM == 0 {
        local.rseq.set(pl.rseq.get());
        local.rseq_resched.set(true);
    }
    let rseq = local.rseq_resched.get();
    let core = Arc::new(Task::new(tid, Some(kstack), local));
    if rseq {
        // Its first return to user mode fills the area's CPU fields for wherever it runs.
        core.work.set(crate::task::work::RSEQ);
    }
    let child = Thread::new(core, process.clone(), Some(charge), mm, files, fs, sighand);
    // The child's user registers: the parent's, returning 0, on a new stack if one was given.
    let ctf = child.trap_frame();
    // SAFETY: ctf is the top of the child's fresh kernel stack, which nothing else uses yet.
    unsafe {
        ctf.write(*tf);
        (*ctf).x[0] = 0;
        if let Some(sp) = args.child_sp() {
            (*ctf).sp_el0 = sp;
        }
    }
    // SAFETY: the child has not run: nothing else reads its saved context yet.
    unsafe { *child.ctx.get() = context::new_task_context(ctf as usize) };
    {
        let ps = parent.sig.lock();
        let mut cs = child.sig.lock();
        cs.blocked = ps.blocked;
        if flags & s::CLONE_VM == 0 || flags & s::CLONE_VFORK != 0 {
            cs.altstack = ps.altstack;
        }
    }
    *child.comm.lock() = parent.comm();
    child.affinity.store(parent.affinity.load());
    inherit_sched(parent, &child);
    child.tagged_addr.store(
        parent.tagged_addr.load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    // The child starts with its creator's slack, which is also its default (copy_process).
    let slack = parent.timer_slack_ns.load(Ordering::Relaxed);
    child.timer_slack_ns.store(slack, Ordering::Relaxed);
    child.default_timer_slack_ns.store(slack, Ordering::Relaxed);
    child
        .mce_kill
        .store(parent.mce_kill.load(Ordering::Relaxed), Ordering::Relaxed);
    if flags & s::CLONE_CHILD_CLEARTID != 0 {
        child
            .clear_child_tid
            .store(args.child_tid as usize, Ordering::Relaxed);
    }
    // Past the point where the child exists, a bad tid pointer fails nothing: Linux ignores
    // the write's fault (kernel_clone's put_user, schedule_tail's set_child_tid).
    if flags & s::CLONE_PARENT_SETTID != 0 {
        let _ = UserPtr::new(args.parent_tid as usize).write(&tid);
    }
    if flags & s::CLONE_CHILD_SETTID != 0 {
        // The child's address space (this one only with CLONE_VM): the software walk.
        if let Some(mm) = child.mm() {
            let _ = mm.lock().write_u32(args.child_tid as usize, tid);
        }
    }
    let vfork =
        (flags & s::CLONE_VFORK != 0).then(|| Arc::new(crate::task::wait::WaitQueue::new()));
    *child.vfork_done.lock() = vfork.clone();

    {
        // Under the seccomp lock until the child is listed, so a TSYNC reaches it.
        let _g = crate::process::seccomp::attach_lock();
        child.seccomp.inherit(&parent.seccomp);
        crate::process::seccomp::inherited(&child);
        process.threads.lock().push(Arc::downgrade(&child));
    }
    register(&child);
    // A traced parent's child starts traced, before it can run, if the tracer asked.
    let event = crate::process::ptrace::clone_event(cur, flags, args.exit_signal);
    if event.is_some() {
        crate::process::ptrace::trace_child(cur, &child);
    }
    sched::enqueue_new(child.core());
    if let Some(e) = event {
        crate::process::ptrace::event(cur, e, tid as u64);
    }

    if let Some(wq) = vfork {
        // The parent sleeps, not interruptibly (as Linux's vfork does for all but fatal
        // signals), until the child has exec'd or exited.
        let c = child.clone();
        wq.wait_uninterruptible(|| c.vfork_released.load(Ordering::Acquire).then_some(()));
        crate::process::ptrace::event(
            cur,
            svelt_abi::uapi::ptrace::PTRACE_EVENT_VFORK_DONE,
            tid as u64,
        );
    }
    Ok(tid)
}

/// Lets a vfork parent go (on exec or exit of the child).
pub fn release_vfork(t: &Thread) {
    if let Some(wq) = t.vfork_done.lock().take() {
        t.vfork_released.store(true, Ordering::Release);
        wq.wake_all();
    }
}

/// A fork's child: the parent's nice value, policy and I/O priority; with
/// SCHED_RESET_ON_FORK the flag is dropped and a negative nice value becomes 0 (Linux's
/// sched_fork; only real-time policies, which Svelt refuses, would fall back to SCHED_OTHER).
fn inherit_sched(parent: &Thread, child: &Thread) {
    let policy = parent.policy.load(Ordering::Relaxed);
    let nice = parent.nice.load(Ordering::Relaxed);
    if policy & SCHED_RESET_ON_FORK != 0 {
        child
            .policy
            .store(policy & !SCHED_RESET_ON_FORK, Ordering::Relaxed);
        child.nice.store(nice.max(0), Ordering::Relaxed);
    } else {
        child.policy.store(policy, Ordering::Relaxed);
        child.nice.store(nice, Ordering::Relaxed);
    }
    child
        .ioprio
        .store(parent.ioprio.load(Ordering::Relaxed), Ordering::Relaxed);
}
