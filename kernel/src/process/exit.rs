//! Thread and process exit, and wait.

#![forbid(unsafe_code)]

use super::{futex, sched, unregister, CurrentTask, ProcState, Process, State};
use crate::process::signal;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sched::{self as s, wstatus};
use svelt_abi::uapi::signal as sig;

/// Ends the current thread; `status` (a wait status) becomes the process's if it is the last.
pub fn do_exit(cur: &CurrentTask, status: i32) -> ! {
    // The thread itself, not an owned reference: the task's data slot keeps it until the last
    // switch away, after everything here.
    let t = cur.task();
    crate::process::coredump::task_exit(cur);
    let p = t.process();
    // The tracer's exit event comes first, before anything of the thread is torn down (a
    // joining thread must not be woken through clear_child_tid before it).
    if t.traced.load(Ordering::Acquire) {
        let st = if p.exiting.load(Ordering::Acquire) {
            p.group_status.load(Ordering::Acquire)
        } else {
            status
        };
        crate::process::ptrace::event(
            cur,
            svelt_abi::uapi::ptrace::PTRACE_EVENT_EXIT,
            st as u32 as u64,
        );
        crate::process::ptrace::tracee_exit(&cur.to_arc(), st);
    }
    let ctid = t.clear_child_tid.swap(0, Ordering::AcqRel);
    if ctid != 0 && t.mm().is_some() && crate::mm::uaccess::UserPtr::new(ctid).write(&0u32).is_ok()
    {
        let _ = futex::wake_addr(t, ctid, 1);
    }
    super::fork::release_vfork(t);
    // Its CPU time joins the process's exited threads' in the same step as it leaves.
    let last = crate::process::cputime::thread_exit(t, || {
        let mut th = p.threads.lock();
        th.retain(|w| w.upgrade().is_some_and(|x| !core::ptr::eq(&*x, t)));
        th.is_empty()
    });
    // Drop this thread's resources. TTBR0 leaves the address space before its last reference
    // can go.
    crate::arch::mmu::clear_user_table();
    drop(t.set_mm(None));
    let files = core::mem::replace(&mut *t.files.lock(), no_files());
    drop(files);
    // Out of the task table before the process turns zombie: a parent that reaps it on
    // another CPU must find its /proc entries gone (ESRCH, ENOENT) at once.
    unregister(t.tid);
    if last {
        let status = if p.exiting.load(Ordering::Acquire) {
            p.group_status.load(Ordering::Acquire)
        } else {
            status
        };
        process_exit(cur, &p, status);
    }
    {
        // No preemption between the move and the mark: a switch away from a live task could
        // still save (and count) its registers.
        let _irqs = crate::arch::cpu::IrqGuard::new();
        crate::task::fpstate::thread_exit(t, &t.process.fpstat);
        t.set_state(State::Dead);
    }
    drop(p);
    sched::schedule();
    unreachable!("a dead task was scheduled");
}

/// The descriptor table an exited thread is left with: one empty table, shared by all of them
/// (nothing opens a file for a thread that has exited), so an exit allocates none.
fn no_files() -> Arc<spin::Mutex<crate::fs::FdTable>> {
    static EMPTY: spin::Once<Arc<spin::Mutex<crate::fs::FdTable>>> = spin::Once::new();
    EMPTY
        .call_once(|| Arc::new(spin::Mutex::new(crate::fs::FdTable::new())))
        .clone()
}

/// Ends the whole thread group with `status`.
pub fn do_group_exit(cur: &CurrentTask, status: i32) -> ! {
    kill_group(&cur.process, status, Some(cur.tid));
    do_exit(cur, status)
}

/// Makes every thread of `p` (but `except`) exit with `status`.
pub fn kill_group(p: &Arc<Process>, status: i32, except: Option<u32>) {
    if !p.exiting.swap(true, Ordering::AcqRel) {
        p.group_status.store(status, Ordering::Release);
    }
    for th in p.live_threads() {
        if Some(th.tid) != except {
            th.exit_code.store(status, Ordering::Relaxed);
            th.set_killed();
            crate::process::ptrace::wake_unless_frozen(&th);
        }
    }
    p.stopped.store(false, Ordering::Release);
    p.stop_wait.wake_all();
}

/// What else must know of a process's exit (the terminal: a session leader's exit frees it).
static ON_EXIT: spin::Once<fn(&Process)> = spin::Once::new();

/// Has `f` run at each process's exit, as its last thread leaves. Boot time.
pub fn on_exit(f: fn(&Process)) {
    ON_EXIT.call_once(|| f);
}

fn process_exit(cur: &CurrentTask, p: &Arc<Process>, status: i32) {
    // The last thread is the one running this.
    *p.zombie_comm.lock() = cur.comm();
    if let Some(f) = ON_EXIT.get() {
        f(p);
    }
    super::itimer::arm_itimer(p, 0, 0);
    super::posix_timer::clear(p);
    crate::process::ptrace::tracer_exit(p);
    // Orphans go to init.
    let children: Vec<Arc<Process>> = core::mem::take(&mut *p.children.lock());
    if !children.is_empty() {
        if let Some(init) = super::find_process(1).filter(|i| !Arc::ptr_eq(i, p)) {
            for c in &children {
                *c.parent.lock() = Arc::downgrade(&init);
            }
            let zombies = children
                .iter()
                .any(|c| matches!(*c.state.lock(), ProcState::Zombie(_)));
            init.children.lock().extend(children);
            if zombies {
                init.child_wait.wake_all();
            }
        }
    }
    if p.pid == 1 {
        *p.state.lock() = ProcState::Zombie(status);
        let code = if wstatus::wifexited(status) {
            wstatus::wexitstatus(status)
        } else {
            128 + wstatus::wtermsig(status)
        };
        log::info!("init exited with status {status:#x}");
        crate::power::exit(code as u32);
    }
    let Some(parent) = p.parent() else {
        *p.state.lock() = ProcState::Zombie(status);
        crate::fs::epoll::notify();
        return;
    };
    let exit_signal = p.exit_signal.load(Ordering::Relaxed);
    let (handler, flags) = parent.first_live_thread().map_or((0, 0), |t| {
        let a = t.sigaction(sig::SIGCHLD);
        (a.sa_handler, a.sa_flags)
    });
    // A parent that ignores SIGCHLD (or asks SA_NOCLDWAIT) does not get zombies.
    let autoreap =
        exit_signal == sig::SIGCHLD && (handler == sig::SIG_IGN || flags & sig::SA_NOCLDWAIT != 0);
    if autoreap {
        let mut children = parent.children.lock();
        children.retain(|c| !Arc::ptr_eq(c, p));
        super::unhash_process(p.pid);
    }
    {
        // The zombie and the parent's signal appear together, as under Linux's tasklist_lock:
        // a wait reads the state under this lock, so neither can it reap the child before the
        // signal is queued (a handler installed after that wait would get this child's
        // SIGCHLD), nor can a handler run by that signal find no zombie.
        let mut state = p.state.lock();
        *state = ProcState::Zombie(status);
        if !autoreap && exit_signal != 0 {
            signal::send_to_process(&parent, exit_signal, signal::child_info(p.pid, status));
        }
    }
    // pidfds of this process poll readable now.
    crate::fs::epoll::notify();
    parent.child_wait.wake_all();
}

/// What wait4/waitid select.
#[derive(Clone, Copy)]
pub enum Which {
    Any,
    Pid(u32),
    Pgid(u32),
}

/// A child event wait reports.
#[derive(Clone, Copy, Debug)]
pub struct Reported {
    pub pid: u32,
    /// The wait4 status word.
    pub status: i32,
    /// A ptrace stop (waitid's CLD_TRAPPED).
    pub trapped: bool,
    /// What a reaped child and its waited-for children used (wait4's rusage); zero for
    /// other events.
    pub usage: crate::process::cputime::Times,
}

/// A tracee's stop or exit for its tracer's wait. `Err(())`: none, but some tracee matches.
fn tracee_event(me: &Arc<Process>, which: Which, options: u32) -> Result<Option<Reported>, ()> {
    let mut tracees = me.tracees.lock();
    if tracees.is_empty() {
        return Ok(None);
    }
    let mut any = false;
    let mut i = 0;
    while i < tracees.len() {
        let t = tracees[i].clone();
        let p = t.process();
        let m = match which {
            Which::Any => true,
            Which::Pid(pid) => t.tid == pid,
            Which::Pgid(g) => p.pgid.load(Ordering::Relaxed) == g,
        };
        let leader = t.tid == p.pid;
        if !m || (!leader && options & (s::__WALL | s::__WCLONE) == 0) {
            i += 1;
            continue;
        }
        let mut l = t.ptrace.lock();
        if let Some(st) = l.stop.as_mut() {
            any = true;
            if !st.reported {
                if options & s::WNOWAIT == 0 {
                    st.reported = true;
                }
                let status = svelt_abi::uapi::ptrace::stop_status(st.exit_code);
                return Ok(Some(Reported {
                    pid: t.tid,
                    status,
                    trapped: true,
                    usage: Default::default(),
                }));
            }
        } else if let Some(status) = l.exit_status {
            let my_child = p.parent().is_some_and(|pp| Arc::ptr_eq(&pp, me));
            if leader && my_child {
                // The child's own exit is reported through the children list.
                drop(l);
                tracees.remove(i);
                continue;
            }
            if options & s::WEXITED != 0 {
                if options & s::WNOWAIT == 0 {
                    drop(l);
                    tracees.remove(i);
                }
                return Ok(Some(Reported {
                    pid: t.tid,
                    status,
                    trapped: false,
                    usage: Default::default(),
                }));
            }
        } else {
            any = true;
        }
        i += 1;
    }
    if any {
        Err(())
    } else {
        Ok(None)
    }
}

/// A reported child event.
pub fn do_wait(cur: &CurrentTask, which: Which, options: u32) -> SysResult<Option<Reported>> {
    let me = cur.process();
    let matches = |c: &Arc<Process>| match which {
        Which::Any => true,
        Which::Pid(pid) => c.pid == pid,
        Which::Pgid(g) => c.pgid.load(Ordering::Relaxed) == g,
    };
    let r = me.child_wait.wait(|| {
        let traced = match tracee_event(&me, which, options) {
            Ok(Some(r)) => return Some(Ok(Some(r))),
            Ok(None) => false,
            Err(()) => true,
        };
        let mut children = me.children.lock();
        if !traced && !children.iter().any(matches) {
            return Some(Err(Errno::ECHILD));
        }
        let mut reaped = None;
        for (i, c) in children.iter().enumerate().filter(|(_, c)| matches(c)) {
            let zombie = match *c.state.lock() {
                ProcState::Zombie(status) => Some(status),
                ProcState::Alive => None,
            };
            if let Some(status) = zombie {
                if options & s::WEXITED != 0
                    || options & (s::WEXITED | s::WSTOPPED | s::WCONTINUED) == 0
                {
                    reaped = Some((i, status));
                    break;
                }
            }
            let mut ev = c.stop_event.lock();
            if let Some((st, reported)) = ev.as_mut() {
                let wanted = if wstatus::wifcontinued(*st) {
                    options & s::WCONTINUED != 0
                } else {
                    options & s::WUNTRACED != 0
                };
                if wanted && !*reported {
                    if options & s::WNOWAIT == 0 {
                        *reported = true;
                    }
                    return Some(Ok(Some(Reported {
                        pid: c.pid,
                        status: *st,
                        trapped: false,
                        usage: Default::default(),
                    })));
                }
            }
        }
        if let Some((i, status)) = reaped {
            let (pid, usage) = if options & s::WNOWAIT == 0 {
                // Reaped: its pid is free from here (under the children lock, so no other
                // wait of this parent reports it again), and its time is now ours.
                let c = children.remove(i);
                super::unhash_process(c.pid);
                (c.pid, crate::process::cputime::reap(&me, &c))
            } else {
                let c = &children[i];
                (c.pid, crate::process::cputime::child_total(c))
            };
            return Some(Ok(Some(Reported {
                pid,
                status,
                trapped: false,
                usage,
            })));
        }
        if options & s::WNOHANG != 0 {
            return Some(Ok(None));
        }
        None
    });
    match r {
        Ok(v) => v,
        Err(_) => Err(Errno::ERESTARTSYS),
    }
}
