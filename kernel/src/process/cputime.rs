//! CPU time of threads and processes, as getrusage, times, wait4, /proc and the CPU-time
//! clocks report it (Linux's kernel/sys.c getrusage, kernel/time/posix-cpu-timers.c), and the
//! CPU-time interval timers ITIMER_VIRTUAL and ITIMER_PROF.
//!
//! The task core measures each task (task/cputime.rs); a process adds the time of its threads
//! that exited (folded in as each exits, under `Process::acct`, so a sum never counts a thread
//! twice or misses one) and, once it waits for them, its children's.

#![forbid(unsafe_code)]

use super::{Process, Thread};
use crate::sync::IrqLock;
use crate::task::Task;
use crate::time::counter_to_ns;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use svelt_abi::uapi::sys::Rusage;
use svelt_abi::uapi::time::Timeval;

/// Resources used, in nanoseconds, switches and KiB.
#[derive(Clone, Copy, Default, Debug)]
pub struct Times {
    pub user_ns: u64,
    pub system_ns: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub maxrss_kb: u64,
}

impl Times {
    pub fn add(&mut self, o: &Times) {
        self.user_ns += o.user_ns;
        self.system_ns += o.system_ns;
        self.nvcsw += o.nvcsw;
        self.nivcsw += o.nivcsw;
        self.maxrss_kb = self.maxrss_kb.max(o.maxrss_kb);
    }

    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.system_ns
    }

    pub fn rusage(&self) -> Rusage {
        let mut r = Rusage {
            ru_utime: Timeval::from_nanos(self.user_ns),
            ru_stime: Timeval::from_nanos(self.system_ns),
            ..Rusage::default()
        };
        r.counters[Rusage::MAXRSS] = self.maxrss_kb as i64;
        r.counters[Rusage::NVCSW] = self.nvcsw as i64;
        r.counters[Rusage::NIVCSW] = self.nivcsw as i64;
        r
    }
}

/// A process's sums.
#[derive(Default)]
pub struct Acct {
    /// Its threads that exited.
    pub exited: Times,
    /// Its children it waited for (their own time and their waited-for children's).
    pub children: Times,
}

/// What one task used.
pub fn task_times(t: &Task) -> Times {
    let u = t.cputime.usage();
    Times {
        user_ns: counter_to_ns(u.user),
        system_ns: counter_to_ns(u.system),
        nvcsw: u.nvcsw,
        nivcsw: u.nivcsw,
        maxrss_kb: 0,
    }
}

/// The largest resident size seen of `p`'s address space (KiB), refreshed from `t`'s now.
/// Svelt keeps no high-water mark of its own: the size is sampled at getrusage, exec and
/// thread exit (Linux updates its hiwater_rss lazily at the same kind of moments).
pub fn sample_rss(p: &Process, t: &Thread) -> u64 {
    let now = t.mm().map_or(0, |m| {
        (m.lock().resident_pages() * crate::arch::mmu::PAGE_SIZE / 1024) as u64
    });
    p.maxrss_kb.fetch_max(now, Ordering::Relaxed).max(now)
}

/// What `p` used: its exited threads and its live ones.
pub fn process_times(p: &Process) -> Times {
    let a = p.acct.lock();
    let mut sum = a.exited;
    for t in p.live_threads() {
        sum.add(&task_times(t.core()));
    }
    sum.maxrss_kb = p.maxrss_kb.load(Ordering::Relaxed);
    sum
}

/// What `p`'s waited-for children used.
pub fn children_times(p: &Process) -> Times {
    p.acct.lock().children
}

/// A thread leaves its process: its time joins the exited threads' sum in the same step as
/// it leaves the thread list (`leave`, which returns whether it was the last).
pub fn thread_exit(t: &Thread, leave: impl FnOnce() -> bool) -> bool {
    let p = &t.process;
    sample_rss(p, t);
    let mine = task_times(t.core());
    let mut a = p.acct.lock();
    a.exited.add(&mine);
    leave()
}

/// What a dead `child` and its waited-for children used.
pub fn child_total(child: &Process) -> Times {
    let a = child.acct.lock();
    let mut t = a.exited;
    t.add(&a.children);
    t.maxrss_kb = child.maxrss_kb.load(Ordering::Relaxed).max(t.maxrss_kb);
    t
}

/// A parent reaps `child`: what the child and its own children used joins the parent's
/// children sum, and is what wait4 reports.
pub fn reap(parent: &Process, child: &Process) -> Times {
    let t = child_total(child);
    parent.acct.lock().children.add(&t);
    t
}

// ---- CPU-time clocks (clock_gettime, clock_getcpuclockid, pthread_getcpuclockid) ----

/// Which time a CPU clock counts (Linux's CPUCLOCK_PROF, _VIRT, _SCHED).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CpuWhich {
    Prof,
    Virt,
    Sched,
}

/// A CPU-time clock: a thread's or a process's.
#[derive(Clone)]
pub enum CpuClock {
    Thread(Arc<Thread>, CpuWhich),
    Process(Arc<Process>, CpuWhich),
}

impl CpuClock {
    /// The clock's reading (ns).
    pub fn read(&self) -> u64 {
        let (t, w) = match self {
            CpuClock::Thread(t, w) => (task_times(t.core()), *w),
            CpuClock::Process(p, w) => (process_times(p), *w),
        };
        match w {
            CpuWhich::Virt => t.user_ns,
            CpuWhich::Prof | CpuWhich::Sched => t.cpu_ns(),
        }
    }
}

/// The CPU clock `clock` names (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, or a
/// negative id made from a pid or tid), for `cur`; None: not a CPU clock; Some(Err): a CPU
/// clock of nobody (Linux's pid_for_clock: EINVAL).
pub fn cpu_clock(cur: &Thread, clock: u32, gettime: bool) -> Option<Result<CpuClock, ()>> {
    use svelt_abi::uapi::time as abi;
    let me = || super::find_task(cur.tid);
    match clock {
        abi::CLOCK_PROCESS_CPUTIME_ID => {
            return Some(Ok(CpuClock::Process(cur.process(), CpuWhich::Sched)))
        }
        abi::CLOCK_THREAD_CPUTIME_ID => {
            return Some(me().map(|t| CpuClock::Thread(t, CpuWhich::Sched)).ok_or(()));
        }
        _ => {}
    }
    let id = clock as i32;
    if id >= 0 {
        return None;
    }
    let which = match id & 3 {
        0 => CpuWhich::Prof,
        1 => CpuWhich::Virt,
        2 => CpuWhich::Sched,
        _ => return Some(Err(())),
    };
    let thread = id & 4 != 0;
    let pid = !(id >> 3);
    Some(if pid == 0 {
        if thread {
            me().map(|t| CpuClock::Thread(t, which)).ok_or(())
        } else {
            Ok(CpuClock::Process(cur.process(), which))
        }
    } else if thread {
        match super::find_task(pid as u32) {
            Some(t) if Arc::ptr_eq(&t.process, &cur.process) => Ok(CpuClock::Thread(t, which)),
            _ => Err(()),
        }
    } else if gettime && pid as u32 == cur.tid {
        Ok(CpuClock::Process(cur.process(), which))
    } else {
        super::find_process(pid as u32)
            .map(|p| CpuClock::Process(p, which))
            .ok_or(())
    })
}

// ---- ITIMER_VIRTUAL and ITIMER_PROF ----

/// A CPU-time interval timer: expires when the process's user (VIRTUAL) or user and system
/// (PROF) time reaches `expiry` (ns of that time; 0: disarmed).
#[derive(Clone, Copy, Default)]
pub struct CpuITimer {
    pub expiry: u64,
    pub interval_ns: u64,
}

/// A process's ITIMER_VIRTUAL and ITIMER_PROF, and whether either is armed (the tick looks
/// at nothing else when neither is).
pub struct CpuITimers {
    pub timers: IrqLock<[CpuITimer; 2]>,
    pub armed: AtomicBool,
}

impl Default for CpuITimers {
    fn default() -> Self {
        CpuITimers {
            timers: IrqLock::new([CpuITimer::default(); 2]),
            armed: AtomicBool::new(false),
        }
    }
}

fn which_index(which: u32) -> (usize, CpuWhich) {
    if which == svelt_abi::uapi::time::ITIMER_VIRTUAL {
        (0, CpuWhich::Virt)
    } else {
        (1, CpuWhich::Prof)
    }
}

fn process_clock(p: &Process, w: CpuWhich) -> u64 {
    let t = process_times(p);
    if w == CpuWhich::Virt {
        t.user_ns
    } else {
        t.cpu_ns()
    }
}

/// Arms (or with `value_ns` 0 disarms) `p`'s ITIMER_VIRTUAL or ITIMER_PROF; returns the old
/// (value, interval) in ns. A value gets one tick more, as Linux's set_cpu_itimer adds
/// TICK_NSEC: the tick that looks at it never makes it fire early.
pub fn set_cpu_itimer(p: &Process, which: u32, value_ns: u64, interval_ns: u64) -> (u64, u64) {
    let value_ns = match value_ns {
        0 => 0,
        v => v.saturating_add(1_000_000_000 / crate::drivers::timer::HZ),
    };
    let (i, w) = which_index(which);
    let now = process_clock(p, w);
    let mut ts = p.cpu_itimers.timers.lock();
    let old = remaining(&ts[i], now);
    ts[i] = CpuITimer {
        expiry: if value_ns == 0 { 0 } else { now + value_ns },
        interval_ns,
    };
    p.cpu_itimers
        .armed
        .store(ts.iter().any(|t| t.expiry != 0), Ordering::Release);
    old
}

fn remaining(t: &CpuITimer, now: u64) -> (u64, u64) {
    let left = if t.expiry == 0 {
        0
    } else {
        t.expiry.saturating_sub(now).max(1)
    };
    (left, t.interval_ns)
}

/// `p`'s ITIMER_VIRTUAL or ITIMER_PROF: (value left, interval) in ns.
pub fn get_cpu_itimer(p: &Process, which: u32) -> (u64, u64) {
    let (i, w) = which_index(which);
    let now = process_clock(p, w);
    remaining(&p.cpu_itimers.timers.lock()[i], now)
}

/// The tick, for the thread running on this CPU: its process's CPU-time interval timers.
pub fn tick(t: &Thread) {
    let p = &t.process;
    if !p.cpu_itimers.armed.load(Ordering::Acquire) {
        return;
    }
    let Some(a) = p.acct.try_lock() else { return };
    let mut now = a.exited;
    drop(a);
    for th in p.live_threads() {
        now.add(&task_times(th.core()));
    }
    let Some(mut ts) = p.cpu_itimers.timers.try_lock() else {
        return;
    };
    let mut fire = [false; 2];
    for (i, it) in ts.iter_mut().enumerate() {
        let clock = if i == 0 { now.user_ns } else { now.cpu_ns() };
        if it.expiry != 0 && it.expiry <= clock {
            fire[i] = true;
            // Forwarded past now: a long tick does not pile up expiries.
            it.expiry = match (clock - it.expiry).checked_div(it.interval_ns) {
                None => 0,
                Some(n) => it.expiry + (n + 1) * it.interval_ns,
            };
        }
    }
    p.cpu_itimers
        .armed
        .store(ts.iter().any(|t| t.expiry != 0), Ordering::Release);
    drop(ts);
    let p = t.process();
    for (i, signo) in [
        svelt_abi::uapi::signal::SIGVTALRM,
        svelt_abi::uapi::signal::SIGPROF,
    ]
    .into_iter()
    .enumerate()
    {
        if fire[i] {
            super::signal::send_to_process(&p, signo, super::signal::SigInfo::kernel(signo));
        }
    }
}
