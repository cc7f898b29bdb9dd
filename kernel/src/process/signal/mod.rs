//! Signals: generation (kill, faults, children, timers), the pending sets, default actions
//! (terminate, core, stop, continue, ignore), and delivery through Linux's rt_sigframe
//! (frame.rs). Syscall restart decisions happen here too.

#![forbid(unsafe_code)]

pub mod frame;
pub mod signalfd;

use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::UserPtr;
use crate::process::exit;
use crate::process::{self, CurrentTask, Process, Thread};
use crate::task::work;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::sched::wstatus;
use svelt_abi::uapi::signal::{self as sig, DefaultAction};

pub const NSIG: u32 = 64;

fn bit(signo: u32) -> u64 {
    1u64 << (signo - 1)
}

/// Signals that can be neither blocked nor caught.
const UNBLOCKABLE: u64 = sig::Sigset::UNBLOCKABLE.0;

pub use sig::Siginfo as SigInfo;

/// SIGCHLD's siginfo for a child's wait status.
pub fn child_info(pid: u32, status: i32) -> SigInfo {
    let (code, st) = if wstatus::wifexited(status) {
        (sig::CLD_EXITED, wstatus::wexitstatus(status))
    } else if wstatus::wifcontinued(status) {
        (sig::CLD_CONTINUED, sig::SIGCONT as i32)
    } else if wstatus::wifstopped(status) {
        (sig::CLD_STOPPED, wstatus::wstopsig(status))
    } else if wstatus::wcoredump(status) {
        (sig::CLD_DUMPED, wstatus::wtermsig(status))
    } else {
        (sig::CLD_KILLED, wstatus::wtermsig(status))
    };
    SigInfo::chld(code, pid as i32, 0, st, 0, 0)
}

pub use sig::Sigaction as SigAction;

#[derive(Clone)]
pub struct SigHandlers {
    actions: [SigAction; NSIG as usize],
}

impl Default for SigHandlers {
    fn default() -> Self {
        SigHandlers {
            actions: [SigAction::default(); NSIG as usize],
        }
    }
}

impl SigHandlers {
    pub fn get(&self, signo: u32) -> SigAction {
        self.actions[signo as usize - 1]
    }
    pub fn set(&mut self, signo: u32, a: SigAction) {
        self.actions[signo as usize - 1] = a;
    }
    /// Handlers after execve: caught signals revert to their default; ignored stay ignored.
    pub fn for_exec(&self) -> SigHandlers {
        let mut h = SigHandlers::default();
        for (i, a) in self.actions.iter().enumerate() {
            if a.sa_handler == sig::SIG_IGN {
                h.actions[i].sa_handler = sig::SIG_IGN;
            }
        }
        h
    }
}

/// Pending signals with their siginfo (standard signals at most once, real-time ones queued).
#[derive(Default)]
pub struct Pending {
    mask: u64,
    queue: Vec<SigInfo>,
}

impl Pending {
    pub(crate) fn add(&mut self, info: SigInfo) {
        let s = info.signo();
        if s < sig::SIGRTMIN && self.mask & bit(s) != 0 {
            return;
        }
        self.mask |= bit(s);
        self.queue.push(info);
    }
    /// Drops a pending signal (its handler now ignores it).
    pub fn discard(&mut self, signo: u32) {
        self.remove(signo);
    }

    fn remove(&mut self, signo: u32) {
        self.mask &= !bit(signo);
        self.queue.retain(|i| i.signo() != signo);
    }
    /// Takes the lowest-numbered signal not in `blocked`.
    fn take(&mut self, blocked: u64) -> Option<SigInfo> {
        let ready = self.mask & !blocked;
        if ready == 0 {
            return None;
        }
        let signo = ready.trailing_zeros() + 1;
        let i = self.queue.iter().position(|q| q.signo() == signo)?;
        let info = self.queue.remove(i);
        // A standard signal is queued at most once (`add`): no second look for it.
        if signo < sig::SIGRTMIN || !self.queue.iter().any(|q| q.signo() == signo) {
            self.mask &= !bit(signo);
        }
        Some(info)
    }
    pub fn pending_mask(&self) -> u64 {
        self.mask
    }

    /// The queued signal of POSIX timer `id`, if any.
    fn timer_signal(&mut self, id: i32) -> Option<&mut SigInfo> {
        self.queue
            .iter_mut()
            .find(|q| q.code() == sig::SI_TIMER && q.timer_id() == id)
    }

    /// Drops the queued signal of POSIX timer `id`.
    fn drop_timer_signal(&mut self, id: i32) {
        let Some(i) = self
            .queue
            .iter()
            .position(|q| q.code() == sig::SI_TIMER && q.timer_id() == id)
        else {
            return;
        };
        let signo = self.queue.remove(i).signo();
        if !self.queue.iter().any(|q| q.signo() == signo) {
            self.mask &= !bit(signo);
        }
    }
}

pub type SharedPending = Pending;

pub use sig::AltStack;

#[derive(Default)]
pub struct SigState {
    pub blocked: u64,
    pub pending: Pending,
    pub altstack: AltStack,
    /// The mask to restore after a temporary one (sigsuspend, ppoll, pselect, epoll_pwait).
    pub saved_mask: Option<u64>,
}

impl SigState {
    pub fn pending_mask(&self) -> u64 {
        self.pending.mask
    }
}

/// Stop/continue side effects at generation time. Returns false if the signal is dropped.
fn prepare(p: &Arc<Process>, signo: u32) -> bool {
    if p.exiting.load(Ordering::Acquire) {
        return signo == sig::SIGKILL;
    }
    let stop_mask = bit(sig::SIGSTOP) | bit(sig::SIGTSTP) | bit(sig::SIGTTIN) | bit(sig::SIGTTOU);
    if signo == sig::SIGCONT || signo == sig::SIGKILL {
        for t in p.live_threads() {
            for s in [sig::SIGSTOP, sig::SIGTSTP, sig::SIGTTIN, sig::SIGTTOU] {
                t.sig.lock().pending.remove(s);
            }
        }
        {
            let mut sh = p.shared_sig.lock();
            for s in [sig::SIGSTOP, sig::SIGTSTP, sig::SIGTTIN, sig::SIGTTOU] {
                sh.remove(s);
            }
        }
        let was_stopped = p.stopped.swap(false, Ordering::AcqRel);
        if signo == sig::SIGCONT {
            // A tracee in PTRACE_LISTEN reports the continue (after `stopped` is clear).
            for t in p.live_threads() {
                crate::process::ptrace::trap_notify(&t);
            }
        }
        if was_stopped && signo == sig::SIGCONT {
            *p.stop_event.lock() = Some((wstatus::continued(), false));
            notify_parent_stop(p, wstatus::continued());
        }
        p.stop_wait.wake_all();
    } else if stop_mask & bit(signo) != 0 {
        for t in p.live_threads() {
            t.sig.lock().pending.remove(sig::SIGCONT);
        }
        p.shared_sig.lock().remove(sig::SIGCONT);
    }
    // A traced thread keeps even ignored signals: its tracer sees them (Linux's sig_ignored).
    // The action first: a caught signal, the common case, needs no other look.
    let ignored = p.first_live_thread().is_some_and(|t| {
        t.sigaction(signo).ignores(signo)
            && !t.traced.load(Ordering::Acquire)
            && t.sig.lock().blocked & bit(signo) == 0
    });
    !ignored || signo == sig::SIGKILL
}

/// A SIGKILL is pending for `t`, or it is being killed (exit_group, exec): a ptrace stop is
/// not entered, a traced syscall not run.
pub fn fatal_pending(t: &Thread) -> bool {
    if t.killed.load(Ordering::Acquire) {
        return true;
    }
    let own = t.sig.lock().pending.mask;
    (own | t.process.shared_sig.lock().mask) & bit(sig::SIGKILL) != 0
}

/// Pokes a thread so it notices a new signal (or a ptrace request): wakes it if sleeping,
/// interrupts its CPU if it runs user code.
pub fn kick(t: &Arc<Thread>) {
    hint(t);
    crate::process::ptrace::wake_unless_frozen(t);
    let cpu = t.cpu.load(Ordering::Relaxed);
    if t.on_cpu.load(Ordering::Acquire) && cpu != crate::percpu::cpu_id() {
        crate::irq::send_reschedule(cpu);
    }
}

/// A signal to one thread.
pub fn send_to_task(t: &Arc<Thread>, signo: u32, info: SigInfo) {
    if !prepare(&t.process, signo) {
        return;
    }
    t.sig.lock().pending.add(info);
    kick(t);
    signalfd::notify();
}

/// A POSIX timer's expiry (`info` made by `SigInfo::timer`), to thread `t` or to `p`: while
/// the timer's previous signal is still queued, this one and the `missed` expiries before it
/// only add to that signal's overrun count (Linux's si_overrun).
pub fn send_timer(p: &Arc<Process>, t: Option<&Arc<Thread>>, info: SigInfo, missed: i32) {
    let id = info.timer_id();
    let bump = |q: &mut Pending| {
        q.timer_signal(id).map(|s| {
            let n = s.timer_overrun().saturating_add(1).saturating_add(missed);
            s.set_timer_overrun(n);
        })
    };
    let queued = match t {
        Some(t) => bump(&mut t.sig.lock().pending),
        None => bump(&mut p.shared_sig.lock()),
    };
    if queued.is_some() {
        return;
    }
    match t {
        Some(t) => send_to_task(t, info.signo(), info),
        None => send_to_process(p, info.signo(), info),
    }
}

/// Drops the queued signal of POSIX timer `id` of `p` (deleted or re-armed), wherever it is.
pub fn drop_timer_signals(p: &Process, id: i32) {
    p.shared_sig.lock().drop_timer_signal(id);
    for t in p.live_threads() {
        t.sig.lock().pending.drop_timer_signal(id);
    }
}

/// A signal to a process: any thread not blocking it takes it.
pub fn send_to_process(p: &Arc<Process>, signo: u32, info: SigInfo) {
    if !prepare(p, signo) {
        return;
    }
    p.shared_sig.lock().add(info);
    let threads = p.live_threads();
    let target = threads
        .iter()
        .find(|t| t.sig.lock().blocked & bit(signo) == 0)
        .or(threads.first());
    if let Some(t) = target {
        kick(t);
    }
    if signo == sig::SIGKILL {
        for t in &threads {
            kick(t);
        }
    }
    signalfd::notify();
}

/// A synchronous fault signal, as Linux's force_sig_info_to_task sends it with the handler
/// in place: if `t` blocks or ignores it, it is unblocked and its handler reset to SIG_DFL (the
/// other sigaction fields kept), so it is delivered, or kills.
pub fn force(t: &Thread, signo: u32, info: SigInfo) {
    force_to(t, signo, info, false);
}

/// `force` for a fault; says whether a handler will take the signal (the fault is then not
/// worth a log line: Linux's arm64_show_signal reports only unhandled ones).
pub fn force_fault(t: &Thread, signo: u32, info: SigInfo) -> bool {
    force_to(t, signo, info, false)
}

/// `force`, with the handler reset to SIG_DFL in any case (Linux's force_fatal_sig).
fn force_fatal(t: &Thread, signo: u32, info: SigInfo) {
    force_to(t, signo, info, true);
}

/// Says whether the signal goes to a handler (not SIG_DFL or SIG_IGN).
fn force_to(t: &Thread, signo: u32, info: SigInfo, to_default: bool) -> bool {
    let handled = t.with_sighand(|h| {
        let mut s = t.sig.lock();
        let mut a = h.get(signo);
        let blocked = s.blocked & bit(signo) != 0;
        if blocked || a.sa_handler == sig::SIG_IGN || to_default {
            a.sa_handler = sig::SIG_DFL;
            h.set(signo, a);
            s.blocked &= !bit(signo);
        }
        s.pending.add(info);
        a.sa_handler != sig::SIG_DFL && a.sa_handler != sig::SIG_IGN
    });
    hint(t);
    handled
}

/// A signal frame for `failed` could not be written: Linux's force_sigsegv. SIGSEGV follows,
/// to its handler if it has one it can take (on an alternate stack, say); when the frame that
/// failed was SIGSEGV's own, it kills.
fn force_sigsegv(t: &Thread, failed: u32) {
    let info = SigInfo::kernel(sig::SIGSEGV);
    if failed == sig::SIGSEGV {
        force_fatal(t, sig::SIGSEGV, info);
    } else {
        force(t, sig::SIGSEGV, info);
    }
}

/// A signal (or a kill) that should end an interruptible wait is pending for `t`.
///
/// When it is, `t`'s work word gets the signal bit here: a sender stores the signal first and
/// sets the bit after, so a wait on another CPU can see the signal between the two and return
/// EINTR; without the bit its return to user mode would skip delivery until the sender's kick
/// arrives, and user code would run first with the EINTR and no handler run (a KVM_RUN ending
/// with KVM_EXIT_INTR before its SIGALRM's handler, seen in the `kvm` test).
pub fn interrupted(t: &Thread) -> bool {
    let yes = stop_requested(t) || unblocked_pending(t, &t.sig.lock());
    if yes {
        hint(t);
    }
    yes
}

/// `t` must stop waiting whatever its signals say: it is being killed, or its tracer
/// interrupts it (PTRACE_INTERRUPT).
fn stop_requested(t: &Thread) -> bool {
    t.killed.load(Ordering::Acquire)
        || (t.traced.load(Ordering::Acquire) && t.ptrace.lock().interrupt)
}

/// A signal is pending for `t` (its own or its process's) that its mask, `s.blocked`, lets
/// through. `s` is `t.sig`, locked.
fn unblocked_pending(t: &Thread, s: &SigState) -> bool {
    (s.pending.mask | t.process.shared_sig.lock().mask) & !s.blocked != 0
}

/// Work for the return-to-user path: a deliverable signal or a stop.
/// Set whenever something may need the return-to-user path's attention (a new signal, a
/// mask change, a stop), so the common case checks one flag; `do_signal` recomputes it.
pub fn has_work(t: &crate::task::Task) -> bool {
    t.work.get() & work::SIGPENDING != 0
}

/// Marks `t` for a look at its signals on its next return to user mode.
pub fn hint(t: &Thread) {
    t.work.set(work::SIGPENDING);
}

fn notify_parent_stop(p: &Arc<Process>, status: i32) {
    let Some(parent) = p.parent() else { return };
    let flags = parent
        .live_threads()
        .first()
        .map_or(0, |t| t.sighand().lock().get(sig::SIGCHLD).sa_flags);
    if flags & sig::SA_NOCLDSTOP == 0 {
        send_to_process(&parent, sig::SIGCHLD, child_info(p.pid, status));
    }
    parent.child_wait.wake_all();
}

fn do_stop(p: &Arc<Process>, signo: u32) {
    if !p.stopped.swap(true, Ordering::AcqRel) {
        p.stop_gen.fetch_add(1, Ordering::AcqRel);
        *p.stop_event.lock() = Some((wstatus::stopped(signo), false));
        notify_parent_stop(p, wstatus::stopped(signo));
        for t in p.live_threads() {
            kick(&t);
        }
    }
}

/// Applies the syscall-restart rules once we know whether a handler runs.
fn restart(cur: &CurrentTask, tf: &mut TrapFrame, handler: Option<u64>) {
    let l = cur.local();
    if l.in_syscall.get() < 0 {
        return;
    }
    l.in_syscall.set(-1);
    let err = -(tf.x[0] as i64);
    let restart_it = match err {
        e if e == Errno::ERESTARTNOINTR as i64 => true,
        e if e == Errno::ERESTARTSYS as i64 => {
            handler.is_none_or(|flags| flags & sig::SA_RESTART != 0)
        }
        e if e == Errno::ERESTARTNOHAND as i64 || e == Errno::ERESTART_RESTARTBLOCK as i64 => {
            handler.is_none()
        }
        _ => return,
    };
    if restart_it {
        tf.x[0] = l.orig_x0.get();
        tf.elr -= 4;
        // The call resumes from its restart block rather than from its arguments (arm64's
        // setup_restart_syscall: x8, seen by the user and a tracer, says so).
        if err == Errno::ERESTART_RESTARTBLOCK as i64 {
            tf.x[8] = svelt_abi::uapi::nr::RESTART_SYSCALL as u64;
        }
    } else {
        tf.x[0] = (-(Errno::EINTR as i64)) as u64;
    }
}

/// After the return-to-user work: restart a syscall no handler interrupted, drop a temporary
/// mask nothing used.
pub fn finish_syscall(cur: &CurrentTask, tf: &mut TrapFrame) {
    restart(cur, tf, None);
}

/// Takes a pending signal in `want` even if blocked (sigtimedwait).
pub fn take_wanted(t: &Thread, want: u64) -> Option<SigInfo> {
    let info = {
        let mut s = t.sig.lock();
        s.pending
            .take(!want)
            .or_else(|| t.process.shared_sig.lock().take(!want))
    };
    taken(t, info)
}

/// Takes the next deliverable signal.
fn dequeue(t: &Thread) -> Option<SigInfo> {
    let info = {
        let mut s = t.sig.lock();
        let blocked = s.blocked;
        s.pending
            .take(blocked)
            .or_else(|| t.process.shared_sig.lock().take(blocked))
    };
    taken(t, info)
}

/// A signal leaves the queue: a POSIX timer's overrun count becomes timer_getoverrun's.
fn taken(t: &Thread, info: Option<SigInfo>) -> Option<SigInfo> {
    if let Some(i) = info.as_ref().filter(|i| i.code() == sig::SI_TIMER) {
        crate::process::posix_timer::delivered(&t.process, i);
    }
    info
}

/// Delivers pending signals (from the return-to-user path).
pub fn do_signal(cur: &CurrentTask, tf: &mut TrapFrame) {
    // The exit happens here, once this function's references to the task and its process
    // are gone: do_group_exit never returns, so anything still held would never be freed
    // (the task's kernel stack and its place in threads-max with it).
    if let Some(status) = signal_work(cur, tf) {
        exit::do_group_exit(cur, status);
    }
}

/// Delivers or acts on pending signals; `Some(status)` when the process must exit.
fn signal_work(cur: &CurrentTask, tf: &mut TrapFrame) -> Option<i32> {
    // Borrowed, not counted: the delivery path takes no reference it would have to drop.
    let t: &Thread = cur;
    let p = &t.process;
    t.work.clear(work::SIGPENDING);
    let traced = t.traced.load(Ordering::Acquire);
    loop {
        // A traced thread reports a group stop (or PTRACE_INTERRUPT) to its tracer and runs
        // on when the tracer says so, even while its group stays stopped.
        if traced && crate::process::ptrace::pending_stops(cur, &cur.to_arc()) {
            // The tracer may have rewritten the registers during the stop.
            core::hint::black_box(&mut *tf);
            continue;
        }
        if !traced && p.stopped.load(Ordering::Acquire) && !t.killed.load(Ordering::Acquire) {
            let pending_kill = {
                let s = t.sig.lock();
                (s.pending.mask | p.shared_sig.lock().mask) & bit(sig::SIGKILL) != 0
            };
            if !pending_kill {
                p.stop_wait.wait_uninterruptible(|| {
                    let go = !p.stopped.load(Ordering::Acquire) || t.killed.load(Ordering::Acquire);
                    go.then_some(())
                });
                continue;
            }
        }
        let Some(mut info) = dequeue(t) else { break };
        if traced && info.signo() != sig::SIGKILL {
            let r = crate::process::ptrace::signal_stop(cur, info);
            core::hint::black_box(&mut *tf);
            match r {
                None => continue,
                Some(i) => info = i,
            }
            // The tracer may have turned it into a signal the thread blocks: it waits.
            if t.sig.lock().blocked & bit(info.signo()) != 0 {
                t.sig.lock().pending.add(info);
                continue;
            }
        }
        let signo = info.signo();
        let action = t.sigaction(signo);
        match action.sa_handler {
            sig::SIG_IGN => continue,
            sig::SIG_DFL => match sig::default_action(signo) {
                Some(DefaultAction::Ign | DefaultAction::Cont) | None => continue,
                Some(DefaultAction::Stop) => {
                    // The terminal's stop signals are dropped in an orphaned group, which
                    // nobody could continue (SIGSTOP still stops).
                    if signo != sig::SIGSTOP
                        && process::pgrp_orphaned(
                            p.pgid.load(Ordering::Relaxed),
                            p.sid.load(Ordering::Relaxed),
                        )
                    {
                        continue;
                    }
                    do_stop(p, signo);
                    continue;
                }
                Some(DefaultAction::Term) => return Some(wstatus::signaled(signo, false)),
                // The core bit when a core file was made (see coredump::do_coredump).
                Some(DefaultAction::Core) => {
                    return Some(crate::process::coredump::do_coredump(cur, tf, &info));
                }
            },
            _ => {
                restart(cur, tf, Some(action.sa_flags));
                crate::process::rseq::before_signal(cur, tf);
                let Ok(more) = deliver(cur, tf, &info, &action) else {
                    // The frame could not be written (bad stack): SIGSEGV instead, taken on
                    // the next turn of this loop.
                    force_sigsegv(t, signo);
                    continue;
                };
                // More may be pending: look again before returning to user mode.
                if more || stop_requested(t) {
                    hint(t);
                }
                return None;
            }
        }
    }
    // Nothing was delivered: a temporary mask (sigsuspend, ppoll...) has served its purpose.
    let mut s = t.sig.lock();
    if let Some(m) = s.saved_mask.take() {
        s.blocked = m;
    }
    None
}

/// Builds the frame and points the user registers at the handler; Err when the frame cannot
/// be written. Ok(true) when another signal is pending that the handler's mask lets through.
fn deliver(t: &CurrentTask, tf: &mut TrapFrame, info: &SigInfo, a: &SigAction) -> Result<bool, ()> {
    let signo = info.signo();
    let (mask_to_save, altstack) = {
        let s = t.sig.lock();
        (s.saved_mask.unwrap_or(s.blocked), s.altstack)
    };
    // A temporary mask (sigsuspend...) is only given up once a frame holds it: the signal
    // that follows a failed frame saves it too.
    // The record is copied only when its address loses its tag.
    let hidden;
    let shown = if a.sa_flags & sig::SA_EXPOSE_TAGBITS == 0 && info.hides_tag_bits() {
        hidden = info.tag_bits_hidden();
        &hidden
    } else {
        info
    };
    frame::setup_rt_frame(t, tf, shown, a, mask_to_save, altstack)?;
    let more = {
        let mut s = t.sig.lock();
        if a.sa_flags & sig::SA_ONSTACK != 0 {
            s.altstack.disarm_after_save();
        }
        s.saved_mask = None;
        s.blocked = a.handler_mask(signo, sig::Sigset(s.blocked)).0;
        unblocked_pending(t, &s)
    };
    if a.sa_flags & sig::SA_RESETHAND != 0 {
        t.with_sighand(|h| {
            let mut cur = h.get(signo);
            cur.sa_handler = sig::SIG_DFL;
            cur.sa_flags &= !sig::SA_SIGINFO;
            h.set(signo, cur);
        });
    }
    Ok(more)
}

// ---- syscall helpers ------------------------------------------------------------------------

pub fn valid_signo(s: i32) -> SysResult<u32> {
    if (1..=NSIG as i32).contains(&s) {
        Ok(s as u32)
    } else {
        Err(Errno::EINVAL)
    }
}

pub fn unblockable() -> u64 {
    UNBLOCKABLE
}

/// Installs a temporary signal mask for the rest of a syscall (ppoll, pselect6, epoll_pwait);
/// the previous one comes back after the syscall, or after the handler it lets through.
pub struct TempMask;

impl TempMask {
    pub fn from_user(cur: &CurrentTask, set: usize, size: usize) -> SysResult<TempMask> {
        if set == 0 {
            return Ok(TempMask);
        }
        if size != 8 {
            return Err(Errno::EINVAL);
        }
        let m = UserPtr::<u64>::new(set).read()?;
        set_temp_mask(cur, m);
        Ok(TempMask)
    }
}

pub fn set_temp_mask(t: &CurrentTask, m: u64) {
    let mut s = t.sig.lock();
    if s.saved_mask.is_none() {
        s.saved_mask = Some(s.blocked);
    }
    s.blocked = m & !UNBLOCKABLE;
    drop(s);
    hint(t);
}

/// AT_MINSIGSTKSZ: the largest frame this system delivers (ZA off), plus the frame record and
/// alignment slack.
pub fn min_sigstksz() -> usize {
    frame::min_sigstksz()
}
