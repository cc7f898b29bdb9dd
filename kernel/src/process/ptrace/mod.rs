//! ptrace: tracers, tracees and their stops (signal-delivery, group, syscall and event stops),
//! and the handshake that lets a tracer touch a stopped tracee's registers.
//!
//! A tracee in a ptrace stop sleeps in the kernel with its user registers in its trap frame and
//! its FP state saved in memory. The tracer reads and writes them only after *freezing* the
//! stop (`Frozen`): while frozen nothing wakes the tracee (not even SIGKILL, which is noticed
//! once the tracer lets go), and the tracer waits until the tracee is off its CPU, so the two
//! never touch the same state at once. The requests themselves are in syscall/ptrace.rs.

#![deny(unsafe_code)]

pub mod regset;

use crate::arch::exception::TrapFrame;
use crate::process::signal::{self, SigInfo};
use crate::process::{sched, CurrentTask, Held, Process, State, Thread};
use crate::task::work;
use alloc::sync::{Arc, Weak};
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::ptrace::*;
use svelt_abi::uapi::signal as sig;

/// Why a tracee is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// Signal-delivery-stop: the signal is in `Link::siginfo`.
    Signal,
    /// Group-stop (or PTRACE_EVENT_STOP under SEIZE).
    Group,
    /// Syscall-entry or syscall-exit stop.
    Syscall,
    /// PTRACE_EVENT_* stop.
    Event,
}

#[derive(Clone, Copy, Debug)]
pub struct Stop {
    /// What wait shows in bits 8-23 (signal, plus an event in bits 8-15).
    pub exit_code: u32,
    pub kind: StopKind,
    /// Reported through wait already.
    pub reported: bool,
}

/// A task's ptrace link: its tracer, options, and the stop it is in.
#[derive(Default)]
pub struct Link {
    pub tracer: Option<Weak<Process>>,
    pub options: u32,
    pub seized: bool,
    pub stop: Option<Stop>,
    /// Set by the tracer to end the stop: the signal to deliver (0: none).
    pub resume: Option<u32>,
    /// The tracer is reading or writing the tracee's state: nothing may wake it.
    pub frozen: bool,
    /// PTRACE_LISTEN: stay stopped, but let a new event end the stop.
    pub listening: bool,
    /// An event for a listening tracee: report a new PTRACE_EVENT_STOP.
    pub notify: bool,
    /// The signal of a signal-delivery-stop (GETSIGINFO/SETSIGINFO).
    pub siginfo: Option<SigInfo>,
    pub event_msg: u64,
    pub syscall_stop: SyscallStop,
    /// PTRACE_INTERRUPT pending (or a seized new child's first stop).
    pub interrupt: bool,
    /// The process group stop this thread has reported (Process::stop_gen).
    pub group_gen: u32,
    /// Resume with single-stepping.
    pub singlestep: bool,
    /// The tracee exited with this status and the tracer has not reaped it.
    pub exit_status: Option<i32>,
}

impl Link {
    pub fn tracer(&self) -> Option<Arc<Process>> {
        self.tracer.as_ref().and_then(Weak::upgrade)
    }
    fn traced_by(&self, p: &Arc<Process>) -> bool {
        self.tracer().is_some_and(|t| Arc::ptr_eq(&t, p))
    }
}

/// Whether `t` is traced by `tracer`.
pub fn is_tracer_of(tracer: &Arc<Process>, t: &Thread) -> bool {
    t.traced.load(Ordering::Acquire) && t.ptrace.lock().traced_by(tracer)
}

/// The tracer's view of a tracee, for /proc (TracerPid).
pub fn tracer_pid(t: &Thread) -> u32 {
    if !t.traced.load(Ordering::Acquire) {
        return 0;
    }
    t.ptrace.lock().tracer().map_or(0, |p| p.pid)
}

/// Wakes `t` for a signal or a kill, unless its tracer has frozen it (the tracer's unfreeze
/// wakes it then). Every wake-up of a possibly traced task for a signal goes through here.
pub fn wake_unless_frozen(t: &Thread) {
    if t.traced.load(Ordering::Acquire) {
        let l = t.ptrace.lock();
        if !l.frozen {
            sched::wake(t.core());
        }
    } else {
        sched::wake(t.core());
    }
}

/// An event a listening tracee reports (SIGCONT, PTRACE_INTERRUPT): true if it was listening.
pub fn trap_notify(t: &Arc<Thread>) -> bool {
    if !t.traced.load(Ordering::Acquire) {
        return false;
    }
    let mut l = t.ptrace.lock();
    if !l.listening {
        return false;
    }
    l.notify = true;
    if !l.frozen {
        sched::wake(t.core());
    }
    true
}

/// Makes `tracer` trace `t`.
pub fn link(t: &Arc<Thread>, tracer: &Arc<Process>, options: u32, seized: bool) {
    {
        let mut l = t.ptrace.lock();
        *l = Link {
            tracer: Some(Arc::downgrade(tracer)),
            options,
            seized,
            group_gen: t.process.stop_gen.load(Ordering::Acquire),
            ..Link::default()
        };
    }
    t.traced.store(true, Ordering::Release);
    t.work.set(work::PTRACED);
    tracer.tracees.lock().push(t.clone());
}

/// Ends tracing of `t` (PTRACE_DETACH, the tracer's exit): a stopped tracee resumes with
/// `signo` (0: none).
pub fn unlink(t: &Arc<Thread>, signo: u32) {
    let tracer = {
        let mut l = t.ptrace.lock();
        let tracer = l.tracer.take();
        l.options = 0;
        l.seized = false;
        l.interrupt = false;
        l.listening = false;
        l.singlestep = false;
        if l.stop.is_some() {
            l.resume = Some(signo);
        }
        tracer
    };
    t.traced.store(false, Ordering::Release);
    t.syscall_trace.store(false, Ordering::Release);
    t.work.clear(work::PTRACED | work::SYSCALL_TRACE);
    if let Some(p) = tracer.and_then(|w| w.upgrade()) {
        p.tracees.lock().retain(|x| !Arc::ptr_eq(x, t));
    }
    sched::wake(t.core());
}

/// A tracer process is exiting: its tracees are detached, or killed with EXITKILL.
pub fn tracer_exit(p: &Arc<Process>) {
    let tracees = core::mem::take(&mut *p.tracees.lock());
    for t in tracees {
        let kill = t.ptrace.lock().options & PTRACE_O_EXITKILL != 0;
        unlink(&t, 0);
        if kill {
            signal::send_to_process(&t.process(), sig::SIGKILL, SigInfo::kernel(sig::SIGKILL));
        }
    }
}

/// Tells the tracer about a stop (SIGCHLD with CLD_TRAPPED, and its wait).
fn notify_tracer(tracer: &Arc<Process>, t: &Thread, exit_code: u32) {
    let nocldstop = tracer
        .live_threads()
        .first()
        .is_some_and(|th| th.sighand().lock().get(sig::SIGCHLD).sa_flags & sig::SA_NOCLDSTOP != 0);
    if !nocldstop {
        let info = SigInfo::chld(
            sig::CLD_TRAPPED,
            t.tid as i32,
            0,
            (exit_code & 0x7f) as i32,
            0,
            0,
        );
        signal::send_to_process(tracer, sig::SIGCHLD, info);
    }
    tracer.child_wait.wake_all();
}

/// Puts the current task in a ptrace stop until its tracer resumes it. Returns the signal
/// the tracer resumed it with, or None when it was not stopped (not traced, or a fatal
/// signal is pending) or is leaving the stop because of a kill or a detach.
pub fn stop(
    cur: &CurrentTask,
    exit_code: u32,
    kind: StopKind,
    siginfo: Option<SigInfo>,
) -> Option<u32> {
    let t = cur.to_arc();
    if !t.traced.load(Ordering::Acquire) || signal::fatal_pending(&t) {
        return None;
    }
    let tracer = {
        let mut l = t.ptrace.lock();
        let tracer = l.tracer()?;
        l.stop = Some(Stop {
            exit_code,
            kind,
            reported: false,
        });
        l.resume = None;
        l.listening = false;
        l.siginfo = siginfo;
        // Any stop answers a pending PTRACE_INTERRUPT (Linux's ptrace_stop clears
        // JOBCTL_TRAP_STOP on entry); one that arrives during the stop survives it.
        l.interrupt = false;
        tracer
    };
    notify_tracer(&tracer, &t, exit_code);
    drop(tracer);
    let p = t.process();
    loop {
        {
            let mut l = t.ptrace.lock();
            // PTRACE_LISTEN: an event (SIGCONT, PTRACE_INTERRUPT) ends the listening; the
            // tracer hears of it through a new PTRACE_EVENT_STOP report, and the tracee stays
            // stopped.
            if l.listening && l.notify && !l.frozen {
                l.listening = false;
                l.notify = false;
                l.resume = None;
                let signo = stop_signal(&p);
                let code = event_code(signo, PTRACE_EVENT_STOP);
                l.stop = Some(Stop {
                    exit_code: code,
                    kind: StopKind::Group,
                    reported: false,
                });
                l.siginfo = Some(notify_info(cur, signo, code));
                if let Some(tr) = l.tracer() {
                    drop(l);
                    notify_tracer(&tr, &t, code);
                    continue;
                }
            }
            let leave = match l.resume {
                _ if l.frozen => None,
                Some(s) if !l.listening => Some(Some(s)),
                r if l.tracer.is_none() => Some(r),
                _ if signal::fatal_pending(&t) => Some(None),
                _ => None,
            };
            if let Some(resumed) = leave {
                // The stop ends under the same lock that decided it: a tracer must never
                // see a stop (and freeze it) that the tracee is already leaving, or its
                // `Frozen::new` would wait for a sleep that never comes.
                l.stop = None;
                l.resume = None;
                l.listening = false;
                if kind != StopKind::Syscall {
                    l.syscall_stop = SyscallStop::None;
                }
                break resumed;
            }
            // Sleeping is set under the link lock, and every waker takes it (or sets
            // `resume` under it) before waking: no wake-up is lost.
            t.set_state(State::Sleeping);
        }
        sched::schedule();
    }
}

/// `stop` for a caller holding the tracee's trap frame: the tracer reads and writes that
/// frame through its own pointer during the stop, so the frame is handed to an opaque
/// `black_box` on both sides (stores done before, loads redone after).
pub fn stop_with_frame(
    cur: &CurrentTask,
    tf: &mut TrapFrame,
    exit_code: u32,
    kind: StopKind,
    info: Option<SigInfo>,
) -> Option<u32> {
    core::hint::black_box(&mut *tf);
    let r = stop(cur, exit_code, kind, info);
    core::hint::black_box(&mut *tf);
    r
}

/// The siginfo a tracer reads at a syscall or event stop (Linux's ptrace_notify): SIGTRAP
/// with the stop's exit code as si_code, and the tracee's thread and user IDs.
fn trap_info(cur: &CurrentTask, exit_code: u32) -> SigInfo {
    notify_info(cur, sig::SIGTRAP, exit_code)
}

fn notify_info(t: &CurrentTask, signo: u32, exit_code: u32) -> SigInfo {
    let uid = t.process.uid.load(Ordering::Relaxed);
    SigInfo::queue(signo, exit_code as i32, t.tid as i32, uid, 0)
}

/// An event stop (PTRACE_EVENT_*) if the tracer asked for `event`; true if it stopped.
pub fn event(t: &CurrentTask, event: u32, msg: u64) -> bool {
    if !t.traced.load(Ordering::Acquire) {
        return false;
    }
    {
        let mut l = t.ptrace.lock();
        if l.options & option_for_event(event) == 0 {
            return false;
        }
        l.event_msg = msg;
    }
    let code = event_code(sig::SIGTRAP, event);
    stop(t, code, StopKind::Event, Some(trap_info(t, code)));
    true
}

/// After a successful execve: the exec event, or the legacy SIGTRAP without SEIZE.
pub fn exec_done(cur: &CurrentTask, old_tid: u32) {
    let t = cur.to_arc();
    if !t.traced.load(Ordering::Acquire) {
        return;
    }
    if !event(cur, PTRACE_EVENT_EXEC, old_tid as u64) && !t.ptrace.lock().seized {
        signal::send_to_task(&t, sig::SIGTRAP, SigInfo::kernel(sig::SIGTRAP));
    }
}

/// fork/vfork/clone: the event a traced parent reports for this kind of child, if its tracer
/// asked for it (or CLONE_PTRACE). The child must not have run yet.
pub fn clone_event(t: &CurrentTask, flags: u64, exit_signal: u64) -> Option<u32> {
    use svelt_abi::uapi::sched as s;
    if !t.traced.load(Ordering::Acquire) || flags & s::CLONE_UNTRACED != 0 {
        return None;
    }
    let event = if flags & s::CLONE_VFORK != 0 {
        PTRACE_EVENT_VFORK
    } else if exit_signal == sig::SIGCHLD as u64 {
        PTRACE_EVENT_FORK
    } else {
        PTRACE_EVENT_CLONE
    };
    let opts = t.ptrace.lock().options;
    (opts & option_for_event(event) != 0 || flags & s::CLONE_PTRACE != 0).then_some(event)
}

/// Starts tracing a new child as its parent is traced; it begins with a stop (SIGSTOP, or
/// PTRACE_EVENT_STOP under SEIZE).
pub fn trace_child(t: &CurrentTask, child: &Arc<Thread>) {
    let (tracer, options, seized) = {
        let l = t.ptrace.lock();
        let Some(tr) = l.tracer() else { return };
        (tr, l.options, l.seized)
    };
    link(child, &tracer, options, seized);
    if seized {
        child.ptrace.lock().interrupt = true;
        signal::hint(child);
    } else {
        child.sig.lock().pending.add(SigInfo::kernel(sig::SIGSTOP));
        signal::hint(child);
    }
}

/// The signal-delivery-stop for `info`: None when the tracer suppressed it, else the signal
/// to act on (the tracer may have changed it).
pub fn signal_stop(t: &CurrentTask, info: SigInfo) -> Option<SigInfo> {
    let signo = info.signo();
    let resumed = stop(t, signo, StopKind::Signal, Some(info))?;
    if resumed == 0 {
        return None;
    }
    let edited = t.ptrace.lock().siginfo.take();
    match edited {
        // The tracer's SETSIGINFO for the same signal, or the original.
        Some(i) if i.signo() == resumed => Some(i),
        _ => {
            let tracer = t.ptrace.lock().tracer();
            let (pid, uid) = tracer.map_or((0, 0), |p| (p.pid, p.uid.load(Ordering::Relaxed)));
            Some(SigInfo::kill(resumed, pid as i32, uid))
        }
    }
}

/// The signal a PTRACE_EVENT_STOP reports: the one that stopped the group, or SIGTRAP when
/// the group is not stopped (Linux's do_jobctl_trap).
fn stop_signal(p: &Process) -> u32 {
    if !p.stopped.load(Ordering::Acquire) {
        return sig::SIGTRAP;
    }
    p.stop_event
        .lock()
        .map_or(sig::SIGSTOP, |(st, _)| ((st >> 8) & 0xff) as u32)
}

/// Stops the return-to-user path may owe a tracer: PTRACE_INTERRUPT, a group stop not yet
/// reported. True if a stop happened (the caller looks at its signals again).
pub fn pending_stops(cur: &CurrentTask, t: &Arc<Thread>) -> bool {
    if !t.traced.load(Ordering::Acquire) {
        return false;
    }
    let p = t.process();
    let gen = p.stop_gen.load(Ordering::Acquire);
    let (interrupt, group, seized) = {
        let mut l = t.ptrace.lock();
        let group = p.stopped.load(Ordering::Acquire) && l.group_gen != gen;
        let interrupt = core::mem::take(&mut l.interrupt);
        if group {
            l.group_gen = gen;
        }
        (interrupt, group, l.seized)
    };
    if !interrupt && !group {
        return false;
    }
    let stopsig = stop_signal(&p);
    // Under SEIZE the stop is a PTRACE_EVENT_STOP with a siginfo (the stop signal, the code
    // in si_code); a plain group-stop has none (GETSIGINFO: EINVAL).
    if seized {
        let code = event_code(stopsig, PTRACE_EVENT_STOP);
        stop(
            cur,
            code,
            StopKind::Group,
            Some(notify_info(cur, stopsig, code)),
        );
    } else {
        stop(cur, stopsig, StopKind::Group, None);
    }
    true
}

/// Syscall-entry stop (PTRACE_SYSCALL).
pub fn syscall_entry(cur: &CurrentTask, tf: &mut TrapFrame) {
    let stop = SyscallStop::Entry {
        nr: tf.x[8],
        args: [tf.x[0], tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]],
    };
    syscall_stop(cur, tf, stop, 0);
}

/// Syscall-exit stop.
pub fn syscall_exit(cur: &CurrentTask, tf: &mut TrapFrame) {
    let rval = tf.x[0] as i64;
    syscall_stop(cur, tf, SyscallStop::Exit { rval }, 1);
    cur.ptrace.lock().syscall_stop = SyscallStop::None;
}

/// A syscall stop. x7 reads `dir` (0 entry, 1 exit) during the stop, as arm64 Linux reports
/// the direction; the tracer's changes to x7 do not survive it.
fn syscall_stop(cur: &CurrentTask, tf: &mut TrapFrame, stop: SyscallStop, dir: u64) {
    let good = {
        let mut l = cur.ptrace.lock();
        l.syscall_stop = stop;
        l.options & PTRACE_O_TRACESYSGOOD != 0
    };
    let saved = tf.x[7];
    tf.x[7] = dir;
    let code = sig::SIGTRAP | if good { 0x80 } else { 0 };
    stop_with_frame(cur, tf, code, StopKind::Syscall, Some(trap_info(cur, code)));
    tf.x[7] = saved;
}

/// SECCOMP_RET_TRACE: a PTRACE_EVENT_SECCOMP stop with `data` as the event message, if a
/// tracer asked for it (PTRACE_O_TRACESECCOMP). False when there is none: the syscall then
/// fails with ENOSYS. After the stop the tracer may have changed the call: its number is the
/// task's `local().in_syscall` (arm64's `syscallno`, what NT_ARM_SYSTEM_CALL writes; -1 skips
/// the call), its arguments x0-x5 in `tf`. seccomp then runs the filters again on the new call
/// (a TRACE result then allows it) and the dispatcher runs that number.
pub fn seccomp_event(cur: &CurrentTask, t: &CurrentTask, tf: &mut TrapFrame, data: u16) -> bool {
    if !t.traced.load(Ordering::Acquire) || t.ptrace.lock().options & PTRACE_O_TRACESECCOMP == 0 {
        return false;
    }
    let nr = t.local().in_syscall.get() as u64;
    t.ptrace.lock().syscall_stop = SyscallStop::Seccomp {
        nr,
        args: [tf.x[0], tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]],
        ret_data: data as u32,
    };
    core::hint::black_box(&mut *tf);
    let stopped = event(cur, PTRACE_EVENT_SECCOMP, data as u64);
    core::hint::black_box(&mut *tf);
    // The filters' re-check (and a restart) see the tracer's x0 as the first argument.
    t.local().orig_x0.set(tf.x[0]);
    stopped
}

/// The tracee `t` is exiting with `status`: a tracer that is not its parent learns it through
/// wait.
pub fn tracee_exit(t: &Arc<Thread>, status: i32) {
    if !t.traced.load(Ordering::Acquire) {
        return;
    }
    let tracer = {
        let mut l = t.ptrace.lock();
        l.exit_status = Some(status);
        l.tracer()
    };
    if let Some(tr) = tracer {
        tr.child_wait.wake_all();
    }
}

/// PSTATE.SS: software step.
const SPSR_SS: u64 = 1 << 21;

/// Whether `t` is being single-stepped.
pub fn stepping(t: &Thread) -> bool {
    t.traced.load(Ordering::Acquire) && t.ptrace.lock().singlestep
}

/// On the way out to user mode of a traced task: arm or disarm single-stepping, and load its
/// hardware breakpoints and watchpoints into this CPU's debug registers.
pub fn prepare_return(t: &CurrentTask, tf: &mut TrapFrame) {
    if stepping(t) {
        tf.spsr |= SPSR_SS;
        crate::arch::debug::set_single_step(true);
    } else if tf.spsr & SPSR_SS != 0 {
        tf.spsr &= !SPSR_SS;
    }
    arm_hw_debug(t);
}

/// CPUs whose debug registers hold some task's breakpoints or watchpoints.
static HW_ARMED: crate::percpu::PerCpuArray<core::sync::atomic::AtomicBool> =
    crate::percpu::PerCpuArray::new(|_| core::sync::atomic::AtomicBool::new(false));

fn slot_enabled(s: &Option<svelt_abi::fp::regset::HwSlot>) -> bool {
    s.is_some_and(|s| s.ctrl.enabled)
}

fn arm_hw_debug(t: &CurrentTask) {
    use crate::arch::debug;
    let d = t.local().hw_debug.borrow();
    let any = d.brk.iter().chain(d.wpt.iter()).any(slot_enabled);
    let cpu = crate::percpu::cpu_id();
    if !any {
        if HW_ARMED.get(cpu).load(Ordering::Relaxed) {
            disarm_hw_debug();
        }
        return;
    }
    let info = regset::hw_info();
    for (i, s) in d.brk.iter().enumerate().take(info.brps as usize) {
        match s {
            Some(s) if s.ctrl.enabled => {
                debug::write_breakpoint(i, s.address, s.ctrl.encode().into())
            }
            _ => debug::write_breakpoint(i, 0, 0),
        }
    }
    for (i, s) in d.wpt.iter().enumerate().take(info.wrps as usize) {
        match s {
            Some(s) if s.ctrl.enabled => {
                debug::write_watchpoint(i, s.address, s.ctrl.encode().into())
            }
            _ => debug::write_watchpoint(i, 0, 0),
        }
    }
    debug::set_monitor(true);
    debug::sync();
    HW_ARMED.get(cpu).store(true, Ordering::Relaxed);
}

/// Clears this CPU's breakpoints and watchpoints.
fn disarm_hw_debug() {
    use crate::arch::debug;
    let info = regset::hw_info();
    for i in 0..info.brps as usize {
        debug::write_breakpoint(i, 0, 0);
    }
    for i in 0..info.wrps as usize {
        debug::write_watchpoint(i, 0, 0);
    }
    debug::set_monitor(false);
    debug::sync();
    HW_ARMED.this().store(false, Ordering::Relaxed);
}

/// A hardware breakpoint (`watch` false, at `pc`) or watchpoint (data address `far`) fired in
/// EL0. The SIGTRAP a tracer sees, as Linux's ptrace_hbptriggered makes it for a native task:
/// TRAP_HWBKPT with the trigger address (the slot-numbering si_errno is AArch32's only).
/// None: the registers held another task's slots (the debug registers are per CPU and armed
/// lazily): they are cleared and the instruction runs again.
pub fn hw_debug_trap(t: &CurrentTask, watch: bool, pc: u64, far: u64) -> Option<SigInfo> {
    let d = t.local().hw_debug.borrow();
    let slots = if watch { &d.wpt } else { &d.brk };
    let armed = slots.iter().any(slot_enabled);
    if !armed || !t.traced.load(Ordering::Acquire) {
        disarm_hw_debug();
        return None;
    }
    let addr = if watch { far } else { pc };
    Some(SigInfo::fault(sig::SIGTRAP, sig::TRAP_HWBKPT, addr))
}

/// A tracee in a stop whose state the tracer may touch until this is dropped.
pub struct Frozen {
    pub task: Arc<Thread>,
}

impl Frozen {
    /// Freezes `t`'s stop: it must be traced by `tracer` and in a stop the tracer has not
    /// ended. Waits until the tracee is off its CPU.
    pub fn new(t: Arc<Thread>, tracer: &Arc<Process>) -> Option<Frozen> {
        {
            let mut l = t.ptrace.lock();
            if !l.traced_by(tracer) || l.stop.is_none() || l.resume.is_some() || l.frozen {
                return None;
            }
            l.frozen = true;
        }
        // The tracee may still be finishing its switch away (or re-checking after a wake-up
        // that came in before the freeze). Once asleep it is parked: no wake-up (a detach by
        // another tracer thread, a kill) can run it, and so touch its registers' memory,
        // while we hold it. Then wait until it has left its CPU.
        while !sched::park_sleeping(&t) {
            sched::yield_now();
        }
        while t.on_cpu.load(Ordering::Acquire) {
            sched::yield_now();
        }
        Some(Frozen { task: t })
    }

    /// The tracee's user state, for the tracer to read and write.
    // The file's one unsafe: vouching that the frozen tracee stays parked (Held::parked).
    #[allow(unsafe_code)]
    pub fn held(&self) -> Held<'_> {
        // SAFETY: frozen in its stop and off its CPU (see `new`): nothing wakes it, not even
        // SIGKILL, until this is dropped, and only its tracer (us) touches its user state.
        Held::new(unsafe { crate::task::Held::parked(&self.task) }, &self.task)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        self.task.ptrace.lock().frozen = false;
        // A kill or a resume that came in while frozen was held back: let the tracee look.
        sched::unpark(self.task.core());
    }
}

/// Linux's ptrace access check with Yama off: root, or a caller whose user ID is the
/// target's real, effective and saved user ID.
pub fn may_access(me: &Process, target: &Process) -> bool {
    if me.euid.load(Ordering::Relaxed) == 0 {
        return true;
    }
    let uid = me.uid.load(Ordering::Relaxed);
    [&target.uid, &target.euid, &target.suid]
        .iter()
        .all(|id| id.load(Ordering::Relaxed) == uid)
}

/// /proc/PID/mem: reads or writes the process's memory at `addr`, as far as it is mapped.
pub fn access_mem(
    me: &Process,
    t: &Thread,
    addr: usize,
    buf: &mut [u8],
    write: bool,
) -> SysResult<usize> {
    if !may_access(me, &t.process()) {
        return Err(Errno::EACCES);
    }
    let mm = t.mm().ok_or(Errno::EIO)?;
    let mut done = 0;
    while done < buf.len() {
        let a = addr + done;
        let n = (0x1000 - (a & 0xfff)).min(buf.len() - done);
        let chunk = &mut buf[done..done + n];
        let r = if write {
            let r = mm.lock().write_kernel(a, chunk);
            crate::arch::cpu::sync_icache();
            r
        } else {
            mm.lock().read(a, chunk)
        };
        if r.is_err() {
            break;
        }
        done += n;
    }
    if done == 0 && !buf.is_empty() {
        return Err(Errno::EIO);
    }
    Ok(done)
}
