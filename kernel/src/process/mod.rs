//! POSIX threads and processes: the layer above the task core.
//!
//! A `Thread` is what a user thread is beyond a schedulable task: its process, address space,
//! files, cwd, signal handlers and state, tracer link, seccomp filters, name and scheduling
//! attributes. What clone can share is held through `Arc`s: the address space (CLONE_VM), the
//! file table (CLONE_FILES), cwd (CLONE_FS) and signal handlers (CLONE_SIGHAND). A `Process` is
//! a thread group: pid, parent and children, exit status, process-wide pending signals.
//!
//! Each thread owns its core task (`task::Task`, reached by deref), and the task holds the
//! thread in its data slot until it has died and been switched away from for the last time
//! (task/mod.rs): the running task's thread is found from the task, and the thread outlives
//! nothing it needs.

#![deny(unsafe_code)]

pub mod coredump;
pub mod cputime;
pub mod exec;
pub mod exit;
pub mod fork;
pub mod futex;
pub mod gcs;
pub mod itimer;
pub mod pidfd;
pub mod posix_timer;
pub mod ptrace;
pub mod rseq;
pub mod seccomp;
pub mod signal;
pub mod sigwait;
mod token;

use crate::fs::{FdTable, FsContext};
use crate::mm::aspace::AddrSpace;
use crate::mm::frame;
use crate::process::signal::{SigHandlers, SigState};
use crate::sync::IrqLock;
use crate::task::fpstate;
use crate::task::wait::WaitQueue;
pub use crate::task::{sched, Pid, State, Task, TaskLocal};
use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::ops::Deref;
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
pub use token::{CurrentTask, Held};

pub type Mm = Arc<Mutex<AddrSpace>>;

/// kernel.threads-max (/proc/sys/kernel/threads-max): set at boot from RAM as Linux does.
pub static MAX_THREADS: AtomicUsize = AtomicUsize::new(usize::MAX);
/// User threads in existence (each has a kernel stack).
pub static NR_THREADS: AtomicUsize = AtomicUsize::new(0);
/// Threads per real user ID, for RLIMIT_NPROC.
static UID_THREADS: IrqLock<BTreeMap<u32, usize>> = IrqLock::new(BTreeMap::new());

/// Linux's default: as many threads as kernel stacks would fill an eighth of RAM, with its
/// 16 KiB stacks (RLIMIT_NPROC defaults to half of it).
pub fn init_limits() {
    let max = (frame::total() / 32).clamp(20, 0x3fff_ffff);
    MAX_THREADS.store(max, Ordering::Relaxed);
}

fn uid_charge(uid: u32, delta: isize) {
    let mut m = UID_THREADS.lock();
    let e = m.entry(uid).or_insert(0);
    *e = e.saturating_add_signed(delta);
    if *e == 0 {
        m.remove(&uid);
    }
}

/// Moves a thread's RLIMIT_NPROC charge to another user (setuid).
pub fn recharge_thread(old: u32, new: u32) {
    if old != new {
        uid_charge(new, 1);
        uid_charge(old, -1);
    }
}

/// A user thread's place in the thread counts (threads-max, RLIMIT_NPROC per real user ID),
/// held for as long as the thread exists.
pub struct ThreadCharge {
    /// The real user ID this thread counts against.
    uid: AtomicU32,
}

impl ThreadCharge {
    /// A new user thread of user `uid`: EAGAIN beyond threads-max or, for users other than
    /// root, beyond RLIMIT_NPROC `nproc` (as Linux's fork).
    pub(crate) fn new(uid: u32, nproc: u64) -> SysResult<ThreadCharge> {
        if NR_THREADS.load(Ordering::Relaxed) >= MAX_THREADS.load(Ordering::Relaxed) {
            return Err(Errno::EAGAIN);
        }
        if uid != 0 {
            let n = UID_THREADS.lock().get(&uid).copied().unwrap_or(0);
            if n as u64 >= nproc {
                return Err(Errno::EAGAIN);
            }
        }
        NR_THREADS.fetch_add(1, Ordering::Relaxed);
        uid_charge(uid, 1);
        Ok(ThreadCharge {
            uid: AtomicU32::new(uid),
        })
    }

    pub fn set_uid(&self, uid: u32) {
        let old = self.uid.swap(uid, Ordering::Relaxed);
        recharge_thread(old, uid);
    }
}

impl Drop for ThreadCharge {
    fn drop(&mut self) {
        uid_charge(self.uid.load(Ordering::Relaxed), -1);
        NR_THREADS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The timer slack of the first thread (Linux's init_task: 50 us).
const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

pub struct Thread {
    /// The schedulable task this thread runs as (its id is the thread's tid).
    core: Arc<Task>,
    pub process: Arc<Process>,
    /// Its place in the thread counts (None for the idle and first tasks' bookkeeping).
    charge: Option<ThreadCharge>,
    pub mm: Mutex<Option<Mm>>,
    pub files: Mutex<Arc<Mutex<FdTable>>>,
    pub fs: Mutex<Arc<Mutex<FsContext>>>,
    pub sighand: IrqLock<Arc<IrqLock<SigHandlers>>>,
    pub sig: IrqLock<SigState>,
    /// CLONE_CHILD_CLEARTID / set_tid_address.
    pub clear_child_tid: AtomicUsize,
    pub robust_list: AtomicUsize,
    pub exit_code: AtomicI32,
    pub vfork_done: Mutex<Option<Arc<WaitQueue>>>,
    /// Whether `vfork_done` has been signalled.
    pub vfork_released: AtomicBool,
    /// Traced (a fast check before taking `ptrace`).
    pub traced: AtomicBool,
    /// Syscall-entry/exit stops asked for (PTRACE_SYSCALL): the syscall path's one check.
    pub syscall_trace: AtomicBool,
    /// The tracer link and stop state (ptrace/mod.rs).
    pub ptrace: IrqLock<crate::process::ptrace::Link>,
    /// Seccomp mode, filters and no_new_privs.
    pub seccomp: crate::process::seccomp::Seccomp,
    /// The thread's name (`comm`): exec's file name, PR_SET_NAME, /proc/PID/comm.
    pub comm: Mutex<[u8; svelt_abi::uapi::procfs::TASK_COMM_LEN]>,
    /// When the thread was created (ns since boot; /proc/PID/stat's starttime).
    pub start_ns: u64,
    /// Nice value (-20..=19), scheduling policy (SCHED_OTHER, BATCH or IDLE, with
    /// SCHED_RESET_ON_FORK) and I/O priority: kept and reported (syscall/sched.rs); the
    /// scheduler treats every task alike.
    pub nice: AtomicI32,
    pub policy: AtomicU32,
    pub ioprio: AtomicU32,
    /// PR_SET_TIMERSLACK's slack and the default PR_SET_TIMERSLACK(0) goes back to (the
    /// creator's slack at clone, 50 us at boot): kept and reported; timers expire without it.
    pub timer_slack_ns: AtomicU64,
    pub default_timer_slack_ns: AtomicU64,
    /// PR_MCE_KILL's policy (PR_MCE_KILL_LATE, _EARLY or _DEFAULT), inherited at clone:
    /// kept and reported (there are no memory-failure reports to act on).
    pub mce_kill: AtomicU8,
}

impl Deref for Thread {
    type Target = Task;
    fn deref(&self) -> &Task {
        &self.core
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcState {
    Alive,
    /// All threads exited; the status for wait.
    Zombie(i32),
}

pub struct Process {
    pub pid: Pid,
    pub pgid: AtomicU32,
    pub sid: AtomicU32,
    /// The console's generation when this process got it as its controlling terminal (0:
    /// none); see tty.rs.
    pub ctty: AtomicU32,
    pub parent: Mutex<Weak<Process>>,
    pub children: Mutex<Vec<Arc<Process>>>,
    pub threads: IrqLock<Vec<Weak<Thread>>>,
    pub state: Mutex<ProcState>,
    /// Stop/continue events for wait(WUNTRACED/WCONTINUED): (status, reported).
    pub stop_event: Mutex<Option<(i32, bool)>>,
    /// Parent waits here for this process's children.
    pub child_wait: WaitQueue,
    pub shared_sig: IrqLock<crate::process::signal::SharedPending>,
    /// Group exit in progress (exit_group / fatal signal).
    pub exiting: AtomicBool,
    pub exe: Mutex<alloc::string::String>,
    pub itimer: IrqLock<itimer::ITimer>,
    /// ITIMER_VIRTUAL and ITIMER_PROF.
    pub cpu_itimers: cputime::CpuITimers,
    /// timer_create's timers.
    pub timers: IrqLock<posix_timer::Timers>,
    /// CPU time of its exited threads and waited-for children.
    pub acct: IrqLock<cputime::Acct>,
    /// The largest resident size seen (KiB; see cputime::sample_rss).
    pub maxrss_kb: AtomicU64,
    pub stopped: AtomicBool,
    pub stop_wait: WaitQueue,
    /// Signal sent to the parent when this process exits (clone's CSIGNAL bits).
    pub exit_signal: AtomicU32,
    /// Wait status of a group exit in progress.
    pub group_status: AtomicI32,
    pub rlimits:
        Mutex<[svelt_abi::uapi::sys::Rlimit64; svelt_abi::uapi::sys::RLIM_NLIMITS as usize]>,
    /// Lazy FP counters of this process's exited threads (the live ones keep their own).
    pub fpstat: fpstate::Counters,
    /// Real, effective and saved user IDs (no capabilities beyond "uid 0 may do anything").
    pub uid: AtomicU32,
    pub euid: AtomicU32,
    pub suid: AtomicU32,
    /// The file-system user and group IDs (setfsuid/setfsgid; setuid sets the user one to
    /// the effective ID). Access checks use the effective ID.
    pub fsuid: AtomicU32,
    pub fsgid: AtomicU32,
    /// personality(2)'s value: Svelt acts on ADDR_NO_RANDOMIZE (exec places the program
    /// interpreter without a random offset); the rest is kept and reported.
    pub personality: AtomicU32,
    /// Threads this process traces (any of its threads may wait for them and command them).
    pub tracees: Mutex<Vec<Arc<Thread>>>,
    /// Bumped at each group stop, so a traced thread reports each one once.
    pub stop_gen: AtomicU32,
    /// A core dump in progress: the other threads wait in it (see coredump::task_exit).
    pub core_state: Mutex<Option<Arc<crate::process::coredump::CoreState>>>,
    /// The name its last thread had, kept for /proc while the process is a zombie.
    pub zombie_comm: Mutex<[u8; svelt_abi::uapi::procfs::TASK_COMM_LEN]>,
}

/// Resource limits of the first process (Linux's defaults for init).
pub fn default_rlimits(
) -> [svelt_abi::uapi::sys::Rlimit64; svelt_abi::uapi::sys::RLIM_NLIMITS as usize] {
    use svelt_abi::uapi::sys::*;
    let mut l = [Rlimit64::INFINITY; RLIM_NLIMITS as usize];
    l[RLIMIT_STACK as usize] = Rlimit64 {
        rlim_cur: STK_LIM,
        rlim_max: RLIM_INFINITY,
    };
    l[RLIMIT_CORE as usize] = Rlimit64 {
        rlim_cur: 0,
        rlim_max: RLIM_INFINITY,
    };
    l[RLIMIT_NOFILE as usize] = Rlimit64 {
        rlim_cur: INR_OPEN_CUR,
        rlim_max: INR_OPEN_MAX,
    };
    l[RLIMIT_MEMLOCK as usize] = Rlimit64 {
        rlim_cur: 8 << 20,
        rlim_max: 8 << 20,
    };
    l[RLIMIT_SIGPENDING as usize] = Rlimit64 {
        rlim_cur: 7_000,
        rlim_max: 7_000,
    };
    l[RLIMIT_MSGQUEUE as usize] = Rlimit64 {
        rlim_cur: 819_200,
        rlim_max: 819_200,
    };
    l[RLIMIT_NICE as usize] = Rlimit64 {
        rlim_cur: 0,
        rlim_max: 0,
    };
    l[RLIMIT_RTPRIO as usize] = Rlimit64 {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let nproc = (MAX_THREADS.load(Ordering::Relaxed) / 2) as u64;
    l[RLIMIT_NPROC as usize] = Rlimit64 {
        rlim_cur: nproc,
        rlim_max: nproc,
    };
    l
}

static TASKS: Mutex<BTreeMap<Pid, Weak<Thread>>> = Mutex::new(BTreeMap::new());
static NEXT_PID: AtomicU32 = AtomicU32::new(1);

/// The most recently allocated process/thread ID.
pub fn last_pid() -> Pid {
    NEXT_PID.load(Ordering::Relaxed) - 1
}

pub(crate) fn alloc_pid() -> Pid {
    NEXT_PID.fetch_add(1, Ordering::Relaxed)
}

impl Process {
    /// The soft limit of `resource` (RLIMIT_*).
    pub fn rlimit(&self, resource: u32) -> u64 {
        self.rlimits.lock()[resource as usize].rlim_cur
    }

    pub fn new(pid: Pid, parent: Weak<Process>) -> Arc<Process> {
        Arc::new(Process {
            pid,
            pgid: AtomicU32::new(pid),
            sid: AtomicU32::new(pid),
            ctty: AtomicU32::new(0),
            parent: Mutex::new(parent),
            children: Mutex::new(Vec::new()),
            threads: IrqLock::new(Vec::new()),
            state: Mutex::new(ProcState::Alive),
            stop_event: Mutex::new(None),
            child_wait: WaitQueue::new(),
            shared_sig: IrqLock::new(Default::default()),
            exiting: AtomicBool::new(false),
            exe: Mutex::new(alloc::string::String::new()),
            itimer: IrqLock::new(Default::default()),
            cpu_itimers: Default::default(),
            timers: IrqLock::new(Default::default()),
            acct: IrqLock::new(Default::default()),
            maxrss_kb: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            stop_wait: WaitQueue::new(),
            exit_signal: AtomicU32::new(svelt_abi::uapi::signal::SIGCHLD),
            group_status: AtomicI32::new(0),
            rlimits: Mutex::new(default_rlimits()),
            fpstat: crate::task::fpstate::ZERO_COUNTERS,
            uid: AtomicU32::new(0),
            euid: AtomicU32::new(0),
            suid: AtomicU32::new(0),
            fsuid: AtomicU32::new(0),
            fsgid: AtomicU32::new(0),
            personality: AtomicU32::new(0),
            tracees: Mutex::new(Vec::new()),
            stop_gen: AtomicU32::new(0),
            core_state: Mutex::new(None),
            zombie_comm: Mutex::new([0; svelt_abi::uapi::procfs::TASK_COMM_LEN]),
        })
    }

    pub fn parent(&self) -> Option<Arc<Process>> {
        self.parent.lock().upgrade()
    }

    pub fn ppid(&self) -> Pid {
        self.parent().map_or(0, |p| p.pid)
    }

    pub fn live_threads(&self) -> Vec<Arc<Thread>> {
        self.threads
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// `live_threads().first()` without the list (signal generation asks on every signal).
    pub fn first_live_thread(&self) -> Option<Arc<Thread>> {
        self.threads.lock().iter().find_map(Weak::upgrade)
    }
}

/// What `Task::user_ttbr0` holds for `mm`: its TTBR0 value, or 0 without one.
fn ttbr0_of(mm: &Option<Mm>) -> u64 {
    mm.as_ref().map_or(0, |m| m.lock().ttbr0())
}

impl Thread {
    /// The thread for `core`, a task not yet running (or a CPU's idle task), which holds it
    /// from now on. Its name starts empty: the creator gives it one (fork the parent's, the
    /// first process its program's).
    pub(crate) fn new(
        core: Arc<Task>,
        process: Arc<Process>,
        charge: Option<ThreadCharge>,
        mm: Option<Mm>,
        files: Arc<Mutex<FdTable>>,
        fs: Arc<Mutex<FsContext>>,
        sighand: Arc<IrqLock<SigHandlers>>,
    ) -> Arc<Thread> {
        core.user_ttbr0.store(ttbr0_of(&mm), Ordering::Relaxed);
        let t = Arc::new(Thread {
            core: core.clone(),
            process,
            charge,
            mm: Mutex::new(mm),
            files: Mutex::new(files),
            fs: Mutex::new(fs),
            sighand: IrqLock::new(sighand),
            sig: IrqLock::new(SigState::default()),
            clear_child_tid: AtomicUsize::new(0),
            robust_list: AtomicUsize::new(0),
            exit_code: AtomicI32::new(0),
            vfork_done: Mutex::new(None),
            vfork_released: AtomicBool::new(false),
            traced: AtomicBool::new(false),
            syscall_trace: AtomicBool::new(false),
            ptrace: IrqLock::new(crate::process::ptrace::Link::default()),
            seccomp: crate::process::seccomp::Seccomp::new(),
            comm: Mutex::new([0; svelt_abi::uapi::procfs::TASK_COMM_LEN]),
            start_ns: crate::time::now_ns(),
            nice: AtomicI32::new(0),
            policy: AtomicU32::new(0),
            ioprio: AtomicU32::new(0),
            timer_slack_ns: AtomicU64::new(DEFAULT_TIMER_SLACK_NS),
            default_timer_slack_ns: AtomicU64::new(DEFAULT_TIMER_SLACK_NS),
            mce_kill: AtomicU8::new(svelt_abi::uapi::prctl::PR_MCE_KILL_DEFAULT as u8),
        });
        core.set_data(t.clone());
        t
    }

    /// The task this thread runs as, owned (for the scheduler's calls).
    pub fn core(&self) -> &Arc<Task> {
        &self.core
    }

    /// Moves the thread's RLIMIT_NPROC charge to `uid` (setuid).
    pub fn recharge(&self, uid: u32) {
        if let Some(c) = &self.charge {
            c.set_uid(uid);
        }
    }

    pub fn process(&self) -> Arc<Process> {
        self.process.clone()
    }

    pub fn pid(&self) -> Pid {
        self.process.pid
    }

    pub fn mm(&self) -> Option<Mm> {
        self.mm.lock().clone()
    }

    /// Runs `f` on the thread's address space (EFAULT without one).
    pub fn with_mm<R>(&self, f: impl FnOnce(&mut AddrSpace) -> SysResult<R>) -> SysResult<R> {
        let mm = self.mm().ok_or(Errno::EFAULT)?;
        let mut g = mm.lock();
        f(&mut g)
    }

    /// Installs `mm` as this task's address space (None: none), returning the old one; the
    /// scheduler's copy of its TTBR0 value follows.
    pub fn set_mm(&self, mm: Option<Mm>) -> Option<Mm> {
        let ttbr0 = ttbr0_of(&mm);
        let mut slot = self.mm.lock();
        self.user_ttbr0.store(ttbr0, Ordering::Relaxed);
        core::mem::replace(&mut *slot, mm)
    }

    pub fn files(&self) -> Arc<Mutex<FdTable>> {
        self.files.lock().clone()
    }

    pub fn fs(&self) -> Arc<Mutex<FsContext>> {
        self.fs.lock().clone()
    }

    pub fn sighand(&self) -> Arc<IrqLock<SigHandlers>> {
        self.sighand.lock().clone()
    }

    /// Runs `f` on the handler table under its lock, reached through `sighand`'s pointer
    /// without taking a reference (signal generation and delivery ask on every signal). Lock
    /// order: the pointer, then the table, then `sig`.
    pub fn with_sighand<R>(&self, f: impl FnOnce(&mut SigHandlers) -> R) -> R {
        let table = self.sighand.lock();
        let mut h = table.lock();
        f(&mut h)
    }

    /// The action for `signo`.
    pub fn sigaction(&self, signo: u32) -> crate::process::signal::SigAction {
        self.with_sighand(|h| h.get(signo))
    }

    /// The thread's name.
    pub fn comm(&self) -> [u8; svelt_abi::uapi::procfs::TASK_COMM_LEN] {
        *self.comm.lock()
    }

    pub fn set_comm(&self, name: &[u8]) {
        *self.comm.lock() = svelt_abi::uapi::procfs::comm_from(name);
    }
}

static KERNEL_PROCESS: spin::Once<Arc<Process>> = spin::Once::new();

fn kernel_process() -> Arc<Process> {
    KERNEL_PROCESS
        .call_once(|| Process::new(0, Weak::new()))
        .clone()
}

/// Every process from its fork until it is reaped, by pid, sorted (Linux's pid hash, for
/// processes). A process whose last thread has left TASKS but that is not yet a zombie, or a
/// zombie on its way to a new parent, is found here: kill, getpgid, getsid and pidfd_open must
/// never miss a pid that wait has not freed. Pids only grow, so a new one goes at the end.
static PROCS: Mutex<Vec<(Pid, Weak<Process>)>> = Mutex::new(Vec::new());

/// Lists `p` under its pid until `unhash_process`: ENOMEM if the table cannot grow.
pub(crate) fn hash_process(p: &Arc<Process>) -> SysResult<()> {
    let mut t = PROCS.lock();
    let Err(at) = t.binary_search_by_key(&p.pid, |e| e.0) else {
        return Ok(());
    };
    t.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    t.insert(at, (p.pid, Arc::downgrade(p)));
    Ok(())
}

/// Frees `pid`: its process has been reaped (or will never be waited for).
pub(crate) fn unhash_process(pid: Pid) {
    let mut t = PROCS.lock();
    if let Ok(at) = t.binary_search_by_key(&pid, |e| e.0) {
        t.remove(at);
    }
}

/// The process with this pid, live, dying or a zombie, until it is reaped.
pub fn find_pid(pid: Pid) -> Option<Arc<Process>> {
    let t = PROCS.lock();
    let at = t.binary_search_by_key(&pid, |e| e.0).ok()?;
    t[at].1.upgrade()
}

/// Every process `find_pid` finds.
pub fn processes() -> SysResult<Vec<Arc<Process>>> {
    let t = PROCS.lock();
    let mut v = Vec::new();
    v.try_reserve_exact(t.len()).map_err(|_| Errno::ENOMEM)?;
    v.extend(t.iter().filter_map(|e| e.1.upgrade()));
    Ok(v)
}

/// Lists a new task by its tid (and the process of a group leader by its pid, if fork has not
/// yet: the first process).
pub fn register(task: &Arc<Thread>) {
    if task.tid == task.pid() && find_pid(task.tid).is_none() {
        // Only the first process gets here (fork hashes its own, fallibly): boot, not a
        // syscall, so it cannot fail for lack of memory in any way that matters.
        let _ = hash_process(&task.process);
    }
    TASKS.lock().insert(task.tid, Arc::downgrade(task));
}

pub fn unregister(tid: Pid) {
    TASKS.lock().remove(&tid);
}

pub fn find_task(tid: Pid) -> Option<Arc<Thread>> {
    TASKS.lock().get(&tid).and_then(Weak::upgrade)
}

/// Every live process (thread-group leaders' processes, without duplicates).
pub fn all_processes() -> Vec<Arc<Process>> {
    let mut v: Vec<Arc<Process>> = Vec::new();
    for t in TASKS.lock().values().filter_map(Weak::upgrade) {
        let p = t.process();
        if !v.iter().any(|q| q.pid == p.pid) {
            v.push(p);
        }
    }
    v
}

/// `all_processes` for an interrupt handler: None if the table is busy (the code it
/// interrupted may hold it).
pub fn try_all_processes() -> Option<Vec<Arc<Process>>> {
    let mut v: Vec<Arc<Process>> = Vec::new();
    for t in TASKS.try_lock()?.values().filter_map(Weak::upgrade) {
        let p = t.process();
        if !v.iter().any(|q| q.pid == p.pid) {
            v.push(p);
        }
    }
    Some(v)
}

/// No member of process group `g` has a parent in another group of session `sid` (init does
/// not count): nobody is left to continue it after a stop (POSIX's orphaned process group).
pub fn pgrp_orphaned(g: Pid, sid: Pid) -> bool {
    !all_processes().iter().any(|p| {
        p.pgid.load(Ordering::Relaxed) == g
            && p.parent().is_some_and(|par| {
                par.pid != 1
                    && par.pgid.load(Ordering::Relaxed) != g
                    && par.sid.load(Ordering::Relaxed) == sid
            })
    })
}

pub fn find_process(pid: Pid) -> Option<Arc<Process>> {
    let t = find_task(pid)?;
    let p = t.process();
    (p.pid == pid).then_some(p)
}

/// A process's lazy-FP counters: its exited threads' and its live threads'.
pub fn fp_counters(p: &Process) -> [u64; fpstate::NR_COUNTERS] {
    let mut sum = fpstate::load_counters(&p.fpstat);
    for t in p.live_threads() {
        fpstate::add_counters(&mut sum, &t.fpstat);
    }
    sum
}

/// The system's lazy-FP counters: every exited thread's and every live thread's.
pub fn system_fp_counters() -> [u64; fpstate::NR_COUNTERS] {
    let mut sum = fpstate::exited_counters();
    for p in all_processes() {
        for t in p.live_threads() {
            fpstate::add_counters(&mut sum, &t.fpstat);
        }
    }
    sum
}

/// The thread a task runs for (every task has one, the idle tasks included, from before it
/// first runs until after its last switch away): only for the running task, or a task the
/// caller knows to be alive and not yet switched away from for the last time (`Task::data_arc`
/// is the way for any other).
// The one unsafe of this layer's tables: every entry's token and every file operation's caller
// come here, and the typed `Task::data` would compare type ids each time.
#[allow(unsafe_code)]
pub fn thread_of(t: &Task) -> &Thread {
    debug_assert!(t.data::<Thread>().is_some(), "a task without its thread");
    // SAFETY: this layer is the only one that sets a task's data, always to a Thread
    // (`Thread::new`, for every task, before it runs); the slot keeps it alive while the task
    // can run, which is when anyone asks (a task's own thread, or a running one's).
    unsafe { &*(t.data_ptr() as *const Thread) }
}

/// The thread a file operation runs for (layers above this one are handed the running thread
/// by the file layer as a `fs::Caller`).
pub fn caller_thread(cur: &dyn crate::fs::Caller) -> &Thread {
    thread_of(cur.core())
}

/// Answers the task core's questions (task/hooks.rs): a pending signal or a tracer's interrupt
/// ends a wait, and a wake-up for one leaves a tracee its tracer froze asleep. Boot time.
pub fn init() {
    crate::task::hooks::register(crate::task::hooks::Hooks {
        // Asked by the waiting task itself: its thread is there.
        interrupted: |t| signal::interrupted(thread_of(t)),
        // Asked for any sleeper, also one that has since died and been switched away from for
        // the last time (a timer or queue entry can outlive that while a tracer still holds
        // the thread): an owned reference, taken under the slot's lock, or a plain wake-up
        // (a no-op for the dead) when the slot is already empty.
        wake: |t| match t.data_arc::<Thread>() {
            Some(th) => ptrace::wake_unless_frozen(&th),
            None => sched::wake(t),
        },
    });
}

/// Makes the code running on this CPU its idle task, a thread of the kernel's process 0.
pub fn init_cpu() {
    let idle = sched::init_cpu();
    let _ = Thread::new(
        idle,
        kernel_process(),
        None,
        None,
        Arc::new(Mutex::new(FdTable::new())),
        Arc::new(Mutex::new(FsContext::root())),
        Arc::new(IrqLock::new(SigHandlers::default())),
    );
}
