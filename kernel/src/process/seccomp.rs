//! seccomp: strict mode and BPF filters checked at syscall entry, the seccomp(2) call, and the
//! per-task state (mode, filter chain, no_new_privs) that fork copies and execve keeps.
//!
//! Filters form a chain, newest first, shared through `Arc`s: fork gives the child the parent's
//! chain, a new filter points at the chain it was added to, and TSYNC points every thread of
//! the process at the caller's. The syscall path reads only `mode`; everything else is behind
//! the `#[cold]` `check`.

#![forbid(unsafe_code)]

use crate::arch::exception::TrapFrame;
use crate::mm::uaccess::UserPtr;
use crate::process::signal;
use crate::process::{exit, CurrentTask, Thread};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicBool, AtomicU8, Ordering};
use spin::{Mutex, MutexGuard};
use svelt_abi::uapi::bpf::{self, *};
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::nr;
use svelt_abi::uapi::sched::wstatus;
use svelt_abi::uapi::signal::{Siginfo, SIGKILL, SIGSYS};

/// Largest errno SECCOMP_RET_ERRNO passes on (Linux's MAX_ERRNO).
const MAX_ERRNO: u32 = 4095;

/// One installed program and the chain it was stacked on.
pub struct Filter {
    prog: Vec<SockFilter>,
    /// What it counts for against MAX_INSNS_PER_PATH (its eBPF length on Linux).
    cost: usize,
    /// SECCOMP_FILTER_FLAG_LOG.
    log: bool,
    prev: Option<Arc<Filter>>,
}

impl Filter {
    /// This filter and those under it, newest first.
    fn chain(&self) -> impl Iterator<Item = &Filter> {
        core::iter::successors(Some(self), |f| f.prev.as_deref())
    }
}

impl Drop for Filter {
    /// Frees a chain no one else holds one link at a time: thousands of one-instruction
    /// filters would overflow a kernel stack dropped recursively.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(f) = next {
            next = match Arc::try_unwrap(f) {
                Ok(mut f) => f.prev.take(),
                Err(_) => None,
            };
        }
    }
}

/// A task's seccomp state.
pub struct Seccomp {
    /// SECCOMP_MODE_*: the one thing the syscall path reads. Stored (Release) after `filter`.
    pub mode: AtomicU8,
    filter: Mutex<Option<Arc<Filter>>>,
    /// PR_SET_NO_NEW_PRIVS: set once, kept across fork and execve.
    pub no_new_privs: AtomicBool,
}

impl Default for Seccomp {
    fn default() -> Self {
        Seccomp::new()
    }
}

impl Seccomp {
    pub const fn new() -> Seccomp {
        Seccomp {
            mode: AtomicU8::new(SECCOMP_MODE_DISABLED),
            filter: Mutex::new(None),
            no_new_privs: AtomicBool::new(false),
        }
    }

    fn filter(&self) -> Option<Arc<Filter>> {
        self.filter.lock().clone()
    }

    /// How many filters are stacked (/proc's Seccomp_filters).
    pub fn filter_count(&self) -> usize {
        self.filter().map_or(0, |f| f.chain().count())
    }

    /// A new task's state from its creator's (clone, fork). Call with `attach_lock` held until
    /// the new task is in its process's thread list, so a TSYNC cannot miss it.
    pub fn inherit(&self, parent: &Seccomp) {
        *self.filter.lock() = parent.filter();
        self.no_new_privs.store(
            parent.no_new_privs.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.mode
            .store(parent.mode.load(Ordering::Relaxed), Ordering::Release);
    }
}

/// Sets `t`'s mode (after its filter), and the work bit that sends its syscalls through it.
fn set_mode(t: &Thread, mode: u8) {
    t.seccomp.mode.store(mode, Ordering::Release);
    t.work.set(crate::task::work::SECCOMP);
}

/// A new thread `t` under its creator's mode (after `Seccomp::inherit`).
pub fn inherited(t: &Thread) {
    if t.seccomp.mode.load(Ordering::Relaxed) != SECCOMP_MODE_DISABLED {
        t.work.set(crate::task::work::SECCOMP);
    }
}

/// Serialises mode changes, filter attachment and TSYNC against each other and against
/// thread creation.
static ATTACH: Mutex<()> = Mutex::new(());

pub fn attach_lock() -> MutexGuard<'static, ()> {
    ATTACH.lock()
}

/// The syscall-entry check, for a task whose mode is not DISABLED (the caller tests `mode`).
/// The syscall number is the task's `in_syscall` (arm64's `syscallno`), its arguments the
/// trap frame's x0-x5 with the entry x0 (`orig_x0`) as the first. Returns the number of the
/// syscall to run (a tracer may have changed it), or None not to run it (x0 already holds its
/// result, or the task is about to die).
#[cold]
#[inline(never)]
pub fn check(cur: &CurrentTask, t: &CurrentTask, tf: &mut TrapFrame) -> Option<u64> {
    // Pairs with the Release store of `mode` (by this task or a TSYNC): the filter is visible.
    fence(Ordering::Acquire);
    let nr = t.local().in_syscall.get();
    match t.seccomp.mode.load(Ordering::Relaxed) {
        SECCOMP_MODE_STRICT => {
            let allowed = [nr::READ, nr::WRITE, nr::EXIT, nr::RT_SIGRETURN];
            if allowed.iter().any(|&a| a as i64 == nr) {
                return Some(nr as u64);
            }
            // Only this thread goes, as if killed by SIGKILL.
            kill_thread(t, wstatus::signaled(SIGKILL, false));
            None
        }
        SECCOMP_MODE_FILTER => {
            run_filter(cur, t, tf, nr as i32, false).then(|| t.local().in_syscall.get() as u64)
        }
        _ => {
            kill_thread(t, wstatus::signaled(SIGKILL, false));
            None
        }
    }
}

/// Ends the current thread on its way out of the kernel, with wait status `status`.
fn kill_thread(t: &Thread, status: i32) {
    set_mode(t, SECCOMP_MODE_DEAD);
    t.exit_code.store(status, Ordering::Relaxed);
    t.set_killed();
}

/// The filters' verdict on syscall `nr`: true to run it, false to skip it (`__seccomp_filter`).
fn run_filter(
    cur: &CurrentTask,
    t: &CurrentTask,
    tf: &mut TrapFrame,
    nr: i32,
    recheck: bool,
) -> bool {
    let orig_x0 = t.local().orig_x0.get();
    let data = SeccompData {
        nr,
        arch: AUDIT_ARCH_AARCH64,
        instruction_pointer: tf.elr,
        args: [orig_x0, tf.x[1], tf.x[2], tf.x[3], tf.x[4], tf.x[5]],
    };
    // No chain in FILTER mode cannot happen; fail closed if it does.
    let (ret, log) = match t.seccomp.filter() {
        Some(f) => {
            let mut ret = SECCOMP_RET_ALLOW;
            let mut log = false;
            for f in f.chain() {
                let r = bpf::run(&f.prog, &data);
                if action_rank(r) < action_rank(ret) {
                    ret = r;
                    log = f.log;
                }
            }
            (ret, log)
        }
        None => (SECCOMP_RET_KILL_PROCESS, false),
    };
    let data_bits = ret & SECCOMP_RET_DATA;
    let action = ret & SECCOMP_RET_ACTION_FULL;
    if log || action == SECCOMP_RET_LOG {
        log::debug!(
            "seccomp: pid {} tid {} syscall {nr} action {action:#x}",
            t.pid(),
            t.tid
        );
    }
    match action {
        SECCOMP_RET_ERRNO => {
            tf.x[0] = (-(data_bits.min(MAX_ERRNO) as i64)) as u64;
            false
        }
        SECCOMP_RET_TRAP => {
            // The handler sees the registers of the call.
            tf.x[0] = orig_x0;
            let info = Siginfo::sigsys(tf.elr, nr, AUDIT_ARCH_AARCH64, data_bits as i32);
            signal::force(t, SIGSYS, info);
            false
        }
        SECCOMP_RET_TRACE => {
            if recheck {
                return true;
            }
            if !crate::process::ptrace::seccomp_event(cur, t, tf, data_bits as u16) {
                tf.x[0] = (-(Errno::ENOSYS as i64)) as u64;
                return false;
            }
            // A fatal signal during the stop: skip the call and let the task die.
            if signal::fatal_pending(t) {
                return false;
            }
            // The tracer may have changed the call (or skipped it with -1): check it again.
            let nr = t.local().in_syscall.get();
            nr >= 0 && run_filter(cur, t, tf, nr as i32, true)
        }
        // No listener can exist here (NEW_LISTENER is refused), so the call fails as on Linux
        // when the filter has none.
        SECCOMP_RET_USER_NOTIF => {
            tf.x[0] = (-(Errno::ENOSYS as i64)) as u64;
            false
        }
        SECCOMP_RET_LOG | SECCOMP_RET_ALLOW => true,
        _ => {
            // KILL_THREAD, KILL_PROCESS and anything unknown. A lone thread takes its process
            // with it, as KILL_PROCESS does: SIGSYS, with a core if one would be written.
            tf.x[0] = orig_x0;
            let p = t.process();
            if action == SECCOMP_RET_KILL_THREAD && p.live_threads().len() > 1 {
                kill_thread(t, wstatus::signaled(SIGSYS, false));
            } else {
                // SIGSYS's default action: a core file where RLIMIT_CORE allows one.
                let info = Siginfo::sigsys(tf.elr, nr, AUDIT_ARCH_AARCH64, data_bits as i32);
                let status = crate::process::coredump::do_coredump(t, tf, &info);
                exit::kill_group(&p, status, Some(t.tid));
                kill_thread(t, status);
            }
            false
        }
    }
}

// ---- seccomp(2) and prctl ----

/// seccomp(op, flags, args). `privileged`: the caller has root's capabilities
/// (syscall::cred::privileged), which lets it install a filter without no_new_privs.
pub fn seccomp(
    t: &Thread,
    op: u32,
    flags: u32,
    uargs: usize,
    privileged: bool,
) -> SysResult<usize> {
    match op {
        SECCOMP_SET_MODE_STRICT => {
            if flags != 0 || uargs != 0 {
                return Err(Errno::EINVAL);
            }
            set_mode_strict(t)
        }
        SECCOMP_SET_MODE_FILTER => set_mode_filter(t, flags, uargs, privileged),
        SECCOMP_GET_ACTION_AVAIL => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            let action = UserPtr::<u32>::new(uargs).read()?;
            if action_available(action) {
                Ok(0)
            } else {
                Err(Errno::EOPNOTSUPP)
            }
        }
        SECCOMP_GET_NOTIF_SIZES => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            UserPtr::new(uargs).write(&NOTIF_SIZES)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// PR_SET_SECCOMP: the mode with the filter pointer, no flags.
pub fn prctl_set_seccomp(
    t: &Thread,
    mode: usize,
    filter: usize,
    privileged: bool,
) -> SysResult<usize> {
    match mode {
        m if m == SECCOMP_MODE_STRICT as usize => {
            seccomp(t, SECCOMP_SET_MODE_STRICT, 0, 0, privileged)
        }
        m if m == SECCOMP_MODE_FILTER as usize => {
            seccomp(t, SECCOMP_SET_MODE_FILTER, 0, filter, privileged)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// PR_GET_SECCOMP.
pub fn prctl_get_seccomp(t: &Thread) -> SysResult<usize> {
    Ok(t.seccomp.mode.load(Ordering::Relaxed) as usize)
}

/// PR_SET_NO_NEW_PRIVS (arguments checked by abi::uapi::prctl): once set, never cleared.
pub fn set_no_new_privs(t: &Thread) -> SysResult<usize> {
    t.seccomp.no_new_privs.store(true, Ordering::Relaxed);
    Ok(0)
}

/// PR_GET_NO_NEW_PRIVS.
pub fn get_no_new_privs(t: &Thread) -> SysResult<usize> {
    Ok(t.seccomp.no_new_privs.load(Ordering::Relaxed) as usize)
}

/// A mode may be entered from DISABLED or from itself (filters stack); never changed.
fn may_assign(t: &Thread, mode: u8) -> bool {
    let cur = t.seccomp.mode.load(Ordering::Relaxed);
    cur == SECCOMP_MODE_DISABLED || cur == mode
}

fn set_mode_strict(t: &Thread) -> SysResult<usize> {
    let _g = attach_lock();
    if !may_assign(t, SECCOMP_MODE_STRICT) {
        return Err(Errno::EINVAL);
    }
    set_mode(t, SECCOMP_MODE_STRICT);
    Ok(0)
}

/// Copies in and validates a user `sock_fprog` (`seccomp_prepare_user_filter`): EFAULT for
/// unreadable memory, EINVAL for a bad program, EACCES without no_new_privs or root, ENOMEM
/// when the program cannot be stored.
fn prepare(t: &Thread, uargs: usize, privileged: bool) -> SysResult<Vec<SockFilter>> {
    let fprog = UserPtr::<SockFprog>::new(uargs).read()?;
    let len = fprog.len as usize;
    if len == 0 || len > BPF_MAXINSNS {
        return Err(Errno::EINVAL);
    }
    if !t.seccomp.no_new_privs.load(Ordering::Relaxed) && !privileged {
        return Err(Errno::EACCES);
    }
    if fprog.filter == 0 {
        return Err(Errno::EINVAL);
    }
    let mut prog = Vec::new();
    prog.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    prog.resize(len, SockFilter::default());
    UserPtr::new(fprog.filter as usize).read_slice(&mut prog)?;
    let mut scratch: Vec<u16> = Vec::new();
    scratch.try_reserve_exact(len).map_err(|_| Errno::ENOMEM)?;
    scratch.resize(len, 0);
    check_seccomp_filter(&mut prog, &mut scratch)?;
    Ok(prog)
}

/// Is `old` (None: no filter) part of the chain `new`?
fn is_ancestor(old: &Option<Arc<Filter>>, new: &Option<Arc<Filter>>) -> bool {
    let Some(old) = old else { return true };
    new.as_deref()
        .is_some_and(|n| n.chain().any(|f| core::ptr::eq(f, &**old)))
}

fn set_mode_filter(t: &Thread, flags: u32, uargs: usize, privileged: bool) -> SysResult<usize> {
    // User notification is not implemented: NEW_LISTENER (and what only makes sense with it)
    // is refused as an unknown flag.
    let supported = SECCOMP_FILTER_FLAG_MASK
        & !(SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
    if flags & !supported != 0 {
        return Err(Errno::EINVAL);
    }
    let prog = prepare(t, uargs, privileged)?;
    let _g = attach_lock();
    if !may_assign(t, SECCOMP_MODE_FILTER) {
        return Err(Errno::EINVAL);
    }
    let cur = t.seccomp.filter();
    let installed: usize = cur
        .as_deref()
        .map_or(0, |f| f.chain().map(|f| f.cost + FILTER_PATH_PENALTY).sum());
    let cost = translated_len(&prog);
    if cost + installed > MAX_INSNS_PER_PATH {
        return Err(Errno::ENOMEM);
    }
    let tsync = flags & SECCOMP_FILTER_FLAG_TSYNC != 0;
    let others: Vec<Arc<Thread>> = if tsync {
        t.process()
            .live_threads()
            .into_iter()
            .filter(|o| o.tid != t.tid && !o.killed.load(Ordering::Acquire))
            .collect()
    } else {
        Vec::new()
    };
    // TSYNC: every other thread must be unfiltered or on an ancestor of our chain; else the
    // first that is not is named (or ESRCH with TSYNC_ESRCH).
    for o in &others {
        let ok = match o.seccomp.mode.load(Ordering::Relaxed) {
            SECCOMP_MODE_DISABLED => true,
            SECCOMP_MODE_FILTER => is_ancestor(&o.seccomp.filter(), &cur),
            _ => false,
        };
        if !ok {
            if flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH != 0 {
                return Err(Errno::ESRCH);
            }
            return Ok(o.tid as usize);
        }
    }
    let f = Arc::new(Filter {
        prog,
        cost,
        log: flags & SECCOMP_FILTER_FLAG_LOG != 0,
        prev: cur,
    });
    *t.seccomp.filter.lock() = Some(f.clone());
    set_mode(t, SECCOMP_MODE_FILTER);
    let nnp = t.seccomp.no_new_privs.load(Ordering::Relaxed);
    for o in &others {
        // The old chain is dropped outside the other thread's lock.
        let old = o.seccomp.filter.lock().replace(f.clone());
        drop(old);
        if nnp {
            o.seccomp.no_new_privs.store(true, Ordering::Relaxed);
        }
        set_mode(o, SECCOMP_MODE_FILTER);
    }
    Ok(0)
}
