//! CPU-time accounting and timers: a busy loop shows user time in times, getrusage and the
//! CPU-time clocks (which only grow), system work shows system time, a child's time appears
//! in RUSAGE_CHILDREN and cutime only once it is waited for (and in wait4's rusage),
//! ITIMER_VIRTUAL and ITIMER_PROF deliver SIGVTALRM and SIGPROF during a busy loop, POSIX
//! timers (timer_create and friends) deliver SI_TIMER signals with their id, value and
//! overrun count, re-fire at their interval, stop at timer_delete and refuse bad arguments
//! with Linux's errnos and go at exec, and /proc shows the times and switch counts. No assertion depends on
//! exact timing: only on order, growth, nonzero values and generous bounds.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use svelt_user::io::read_file;
use svelt_user::ktap::TestResult;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;
/// The most a loop waits for CPU time it needs, however loaded the host: a bound that only
/// turns a broken kernel's hang into a failure.
const PATIENCE: u64 = 30_000 * MS;

const CLOCK_PROCESS_CPUTIME_ID: u32 = 2;
const CLOCK_THREAD_CPUTIME_ID: u32 = 3;
const CLOCK_MONOTONIC_RAW: u32 = 4;
const ITIMER_VIRTUAL: u32 = 1;
const ITIMER_PROF: u32 = 2;
const SIGVTALRM: i32 = 26;
const SIGPROF: i32 = 27;
const SI_TIMER: i32 = -2;
const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD_ID: i32 = 4;
const RUSAGE_SELF: i32 = 0;
const RUSAGE_CHILDREN: i32 = -1;
const RUSAGE_THREAD: i32 = 1;

const NR_WAITID: usize = 95;
const NR_TIMER_CREATE: usize = 107;
const NR_TIMER_GETTIME: usize = 108;
const NR_TIMER_GETOVERRUN: usize = 109;
const NR_TIMER_SETTIME: usize = 110;
const NR_TIMER_DELETE: usize = 111;
const NR_CLOCK_GETTIME: usize = 113;
const NR_TIMES: usize = 153;
const NR_GETRUSAGE: usize = 165;
const NR_WAIT4: usize = 260;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Tms {
    utime: i64,
    stime: i64,
    cutime: i64,
    cstime: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    /// ru_maxrss .. ru_nivcsw.
    counters: [i64; 14],
}

impl Rusage {
    fn user_us(&self) -> i64 {
        self.utime.tv_sec * 1_000_000 + self.utime.tv_usec
    }
    fn sys_us(&self) -> i64 {
        self.stime.tv_sec * 1_000_000 + self.stime.tv_usec
    }
    fn maxrss(&self) -> i64 {
        self.counters[0]
    }
    fn nvcsw(&self) -> i64 {
        self.counters[12]
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Itimerspec {
    interval: Timespec,
    value: Timespec,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SigEvent {
    value: u64,
    signo: i32,
    notify: i32,
    tid: i32,
    _pad: [i32; 11],
}

impl SigEvent {
    fn new(notify: i32, signo: i32, value: u64) -> SigEvent {
        SigEvent {
            value,
            signo,
            notify,
            tid: 0,
            _pad: [0; 11],
        }
    }
}

fn times() -> SysResult<Tms> {
    let mut t = Tms::default();
    sys::syscall(NR_TIMES, &[&mut t as *mut _ as usize])?;
    Ok(t)
}

fn getrusage(who: i32) -> SysResult<Rusage> {
    let mut r = Rusage::default();
    sys::syscall(NR_GETRUSAGE, &[who as usize, &mut r as *mut _ as usize])?;
    Ok(r)
}

fn cpu_ns(clock: u32) -> SysResult<u64> {
    let mut ts = Timespec::default();
    sys::syscall(
        NR_CLOCK_GETTIME,
        &[clock as usize, &mut ts as *mut _ as usize],
    )?;
    Ok(ts.ns())
}

/// Spins in user mode until this process's CPU clock has advanced `ns`; false if that took
/// longer than PATIENCE of wall time.
fn burn_user(ns: u64) -> bool {
    let (start, wall) = (cpu_ns(CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0), sys::now_ns());
    let mut x = 1u64;
    loop {
        for _ in 0..20_000 {
            x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let now = cpu_ns(CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0);
        if now.saturating_sub(start) >= ns {
            return true;
        }
        if sys::now_ns() - wall > PATIENCE {
            return false;
        }
    }
}

/// Works in the kernel (reads /dev/zero) until `ns` of CPU time has gone by.
fn burn_system(ns: u64) -> bool {
    let fd = match sys::open("/dev/zero", 0) {
        Ok(fd) => fd,
        Err(_) => return false,
    };
    let mut buf = alloc::vec![0u8; 64 * 1024];
    let (start, wall) = (cpu_ns(CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0), sys::now_ns());
    let ok = loop {
        for _ in 0..16 {
            let _ = sys::read(fd, &mut buf);
        }
        if cpu_ns(CLOCK_PROCESS_CPUTIME_ID)
            .unwrap_or(0)
            .saturating_sub(start)
            >= ns
        {
            break true;
        }
        if sys::now_ns() - wall > PATIENCE {
            break false;
        }
    };
    let _ = sys::close(fd);
    ok
}

fn stat_fields(path: &str) -> Result<Vec<String>, String> {
    let b = read_file(path).map_err(|e| format!("{path}: {e:?}"))?;
    let s = String::from_utf8(b).map_err(|_| String::from("not UTF-8"))?;
    let close = s.rfind(") ").ok_or("no ) in stat")?;
    // Fields from 3 (state) on; field N is at index N - 3.
    Ok(s[close + 2..]
        .trim_end()
        .split(' ')
        .map(String::from)
        .collect())
}

fn stat_field(f: &[String], n: usize) -> Result<i64, String> {
    let v = f.get(n - 3).ok_or(format!("no field {n}"))?;
    v.parse().map_err(|_| format!("field {n}: {v:?}"))
}

/// Another process, sleeping until dropped (then killed and reaped).
struct Other(i32);

impl Other {
    fn start() -> SysResult<Other> {
        proc::spawn(|| {
            sys::sleep_ns(PATIENCE);
            0
        })
        .map(Other)
    }
}

impl Drop for Other {
    fn drop(&mut self) {
        let _ = sys::kill(self.0, SIGKILL);
        let _ = sys::waitpid(self.0, 0);
    }
}

fn user_time_grows() -> TestResult {
    let before = t!(cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
    let thread_before = t!(cpu_ns(CLOCK_THREAD_CPUTIME_ID));
    check!(
        burn_user(60 * MS),
        "no 60 ms of CPU time within {PATIENCE} ns"
    );
    // The clocks only go forward, read after read.
    let mut prev = t!(cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
    let mut prev_thread = t!(cpu_ns(CLOCK_THREAD_CPUTIME_ID));
    check!(prev >= before + 60 * MS, "process clock {before} -> {prev}");
    check!(
        prev_thread > thread_before,
        "thread clock {thread_before} -> {prev_thread}"
    );
    for _ in 0..2000 {
        let p = t!(cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
        let th = t!(cpu_ns(CLOCK_THREAD_CPUTIME_ID));
        check!(p >= prev, "process CPU clock went back: {prev} -> {p}");
        check!(
            th >= prev_thread,
            "thread CPU clock went back: {prev_thread} -> {th}"
        );
        (prev, prev_thread) = (p, th);
    }
    // A single-threaded process: its thread's time is all of it, never more.
    check!(prev_thread <= t!(cpu_ns(CLOCK_PROCESS_CPUTIME_ID)));
    let tms = t!(times());
    check!(tms.utime > 0, "times: {tms:?}");
    let self_ru = t!(getrusage(RUSAGE_SELF));
    check!(self_ru.user_us() > 0, "RUSAGE_SELF {self_ru:?}");
    let thr = t!(getrusage(RUSAGE_THREAD));
    check!(thr.user_us() > 0, "RUSAGE_THREAD {thr:?}");
    // Both clocks agree with getrusage within a generous margin (different granularities).
    let ru_ns = (self_ru.user_us() + self_ru.sys_us()) as u64 * 1000;
    check!(
        ru_ns <= t!(cpu_ns(CLOCK_PROCESS_CPUTIME_ID)) + 50 * MS,
        "{ru_ns} vs clock"
    );
    // More work, more time.
    check!(burn_user(30 * MS));
    let later = t!(getrusage(RUSAGE_SELF));
    // The sum: Linux may book the new ticks as system time (cputime_adjust).
    check!(
        later.user_us() + later.sys_us() > self_ru.user_us() + self_ru.sys_us(),
        "{self_ru:?} -> {later:?}"
    );
    check!(t!(times()).utime >= tms.utime);
    check_eq!(getrusage(5).map(|_| ()), Err(EINVAL));
    Ok(())
}

fn system_time_and_proc_stat() -> TestResult {
    check!(
        burn_system(150 * MS),
        "no 150 ms of CPU time within {PATIENCE} ns"
    );
    let ru = t!(getrusage(RUSAGE_SELF));
    check!(
        ru.sys_us() > 0,
        "no system time after reading /dev/zero: {ru:?}"
    );
    let f = t!(stat_fields("/proc/self/stat"));
    let (utime, stime) = (t!(stat_field(&f, 14)), t!(stat_field(&f, 15)));
    check!(
        utime > 0 && stime > 0,
        "/proc/self/stat utime {utime} stime {stime}"
    );
    let tid = sys::gettid();
    let tf = t!(stat_fields(&format!("/proc/self/task/{tid}/stat")));
    check!(t!(stat_field(&tf, 14)) + t!(stat_field(&tf, 15)) > 0);
    // /proc/stat's cpu line: user, nice, system, idle... in USER_HZ; some of it is ours.
    let s = String::from_utf8(t!(read_file("/proc/stat"))).unwrap_or_default();
    let cpu: Vec<u64> = s
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    check!(cpu.len() >= 4, "{s}");
    check!(cpu[0] > 0 && cpu[2] > 0, "/proc/stat cpu line {cpu:?}");
    let per_cpu = s
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    check!(per_cpu >= 1, "{s}");
    Ok(())
}

fn switch_counts() -> TestResult {
    // A sleep whose timer expired before the sleeper reached the scheduler (a busy host can
    // stall a CPU that long) does not switch, on Linux too: three of them, at least one counted.
    let before = t!(getrusage(RUSAGE_SELF)).nvcsw();
    for _ in 0..3 {
        sys::sleep_ns(10 * MS);
    }
    let after = t!(getrusage(RUSAGE_SELF));
    check!(
        after.nvcsw() > before,
        "ru_nvcsw {before} -> {}",
        after.nvcsw()
    );
    let s = String::from_utf8(t!(read_file("/proc/self/status"))).unwrap_or_default();
    let v: i64 = s
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(-1);
    check!(v >= 1, "voluntary_ctxt_switches {v}");
    check!(s.contains("nonvoluntary_ctxt_switches:"));
    // schedstat: time on a CPU (ns), time waiting runnable for one (ns), switches; none goes
    // back, and the sleeps above left a CPU at least three times.
    let read = || -> Result<Vec<u64>, String> {
        let s = String::from_utf8(read_file("/proc/self/schedstat").map_err(|e| format!("{e:?}"))?)
            .unwrap_or_default();
        Ok(s.split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect())
    };
    let a = t!(read());
    check_eq!(a.len(), 3, "/proc/self/schedstat {a:?}");
    check!(a[0] > 0 && a[2] >= 3, "/proc/self/schedstat {a:?}");
    check!(burn_user(10 * MS));
    // As above, one short sleep may not leave the CPU on a busy host: up to five.
    let mut b = a.clone();
    for _ in 0..5 {
        sys::sleep_ns(MS);
        b = t!(read());
        if b.len() == 3 && b[2] > a[2] {
            break;
        }
    }
    check!(
        b.len() == 3 && b[0] >= a[0] + 10 * MS && b[1] >= a[1] && b[2] > a[2],
        "/proc/self/schedstat {a:?} -> {b:?}"
    );
    Ok(())
}

/// ru_maxrss, in KiB, covers at least memory we touched (Linux's RSS counters are per-CPU
/// batches: a small process may read 0, so only a large touch is checked), and a child's
/// shows in wait4's rusage and RUSAGE_CHILDREN.
fn maxrss_covers_touched_memory() -> TestResult {
    const LEN: usize = 8 << 20;
    let pid = t!(proc::spawn(|| {
        let Ok(a) = sys::mmap_anon(LEN) else { return 1 };
        for off in (0..LEN).step_by(4096) {
            // SAFETY: a fresh private anonymous mapping of LEN bytes.
            unsafe { ((a + off) as *mut u8).write_volatile(1) };
        }
        match getrusage(RUSAGE_SELF) {
            Ok(r) if r.maxrss() >= (LEN / 1024) as i64 => 0,
            Ok(_) => 2,
            Err(_) => 3,
        }
    }));
    let mut ru = Rusage::default();
    let mut status = 0i32;
    t!(sys::syscall(
        NR_WAIT4,
        &[
            pid as usize,
            &mut status as *mut _ as usize,
            0,
            &mut ru as *mut _ as usize
        ]
    ));
    check_eq!(status, 0, "the child's own ru_maxrss (exit 2: too small)");
    check!(
        ru.maxrss() >= (LEN / 1024) as i64,
        "wait4 ru_maxrss {}",
        ru.maxrss()
    );
    let ch = t!(getrusage(RUSAGE_CHILDREN));
    check!(
        ch.maxrss() >= (LEN / 1024) as i64,
        "RUSAGE_CHILDREN ru_maxrss {}",
        ch.maxrss()
    );
    Ok(())
}

fn children_time_after_wait() -> TestResult {
    let c0 = t!(getrusage(RUSAGE_CHILDREN));
    let t0 = t!(times());
    let pid = t!(proc::spawn(|| if burn_user(60 * MS) { 0 } else { 1 }));
    // Wait for it to end without reaping it (waitid WNOWAIT): not counted yet.
    let mut info = SigInfo::zeroed();
    t!(sys::syscall(
        NR_WAITID,
        &[
            1,
            pid as usize,
            &mut info as *mut _ as usize,
            4 | 0x0100_0000,
            0
        ]
    ));
    // Linux splits a task's run time between user and system in the ratio of
    // the ticks that sampled it (cputime_adjust in kernel/sched/cputime.c), so
    // under an emulator a busy user loop may show much of its time as system
    // time: the sums are what the child is owed.
    let c1 = t!(getrusage(RUSAGE_CHILDREN));
    check_eq!(
        c1.user_us() + c1.sys_us(),
        c0.user_us() + c0.sys_us(),
        "child time counted before the wait"
    );
    let t1 = t!(times());
    check_eq!(t1.cutime + t1.cstime, t0.cutime + t0.cstime);
    let mut ru = Rusage::default();
    let mut status = 0i32;
    let got = t!(sys::syscall(
        NR_WAIT4,
        &[
            pid as usize,
            &mut status as *mut _ as usize,
            0,
            &mut ru as *mut _ as usize
        ]
    ));
    check_eq!(got as i32, pid);
    check_eq!(status, 0, "the child had its CPU time");
    check!(ru.user_us() + ru.sys_us() >= 50_000, "wait4 rusage {ru:?}");
    let c2 = t!(getrusage(RUSAGE_CHILDREN));
    check!(
        c2.user_us() + c2.sys_us() >= c0.user_us() + c0.sys_us() + 50_000,
        "RUSAGE_CHILDREN {c0:?} -> {c2:?}"
    );
    let t2 = t!(times());
    check!(
        t2.cutime + t2.cstime >= t0.cutime + t0.cstime + 4,
        "tms_cutime+cstime {:?} -> {:?}",
        (t0.cutime, t0.cstime),
        (t2.cutime, t2.cstime)
    );
    let f = t!(stat_fields("/proc/self/stat"));
    check!(
        t!(stat_field(&f, 16)) + t!(stat_field(&f, 17)) >= 4,
        "/proc/self/stat cutime + cstime"
    );
    // Our own time is not the child's.
    check!(t!(getrusage(RUSAGE_SELF)).user_us() < c2.user_us() + 10_000_000);
    Ok(())
}

static VT: AtomicU32 = AtomicU32::new(0);
static PROF: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_cpu_timer(sig: i32, _info: *mut SigInfo, _uc: *mut u8) {
    match sig {
        SIGVTALRM => VT.fetch_add(1, Ordering::SeqCst),
        SIGPROF => PROF.fetch_add(1, Ordering::SeqCst),
        _ => 0,
    };
}

fn getitimer(which: u32) -> SysResult<Itimerval> {
    let mut cur = Itimerval::default();
    sys::syscall(
        nr::GETITIMER,
        &[which as usize, &mut cur as *mut _ as usize],
    )?;
    Ok(cur)
}

fn cpu_itimers() -> TestResult {
    t!(set_handler(SIGVTALRM, on_cpu_timer, SA_RESTART, 0));
    t!(set_handler(SIGPROF, on_cpu_timer, SA_RESTART, 0));
    for which in [ITIMER_VIRTUAL, ITIMER_PROF] {
        let idle = t!(getitimer(which));
        check!(
            idle.it_value.tv_sec == 0 && idle.it_value.tv_usec == 0,
            "{idle:?}"
        );
    }
    // ITIMER_VIRTUAL counts user time: a user-mode loop makes it fire again and again.
    t!(sys::setitimer(ITIMER_VIRTUAL, 10 * MS, 10 * MS));
    let cur = t!(getitimer(ITIMER_VIRTUAL));
    check_eq!(cur.it_interval.tv_usec, 10_000);
    // Linux adds a tick to a CPU-time timer's value (its set_cpu_itimer): up to 10 ms more.
    check!(
        cur.it_value.tv_sec == 0 && cur.it_value.tv_usec > 0,
        "{cur:?}"
    );
    check!(cur.it_value.tv_usec <= 20_000, "{cur:?}");
    let wall = sys::now_ns();
    while VT.load(Ordering::SeqCst) < 3 && sys::now_ns() - wall < PATIENCE {
        burn_user(5 * MS);
    }
    let old = t!(sys::setitimer(ITIMER_VIRTUAL, 0, 0));
    check!(
        VT.load(Ordering::SeqCst) >= 3,
        "{} SIGVTALRM",
        VT.load(Ordering::SeqCst)
    );
    check_eq!(old.it_interval.tv_usec, 10_000);
    // ITIMER_PROF counts user and system time: work in the kernel counts too.
    t!(sys::setitimer(ITIMER_PROF, 10 * MS, 10 * MS));
    let wall = sys::now_ns();
    while PROF.load(Ordering::SeqCst) < 3 && sys::now_ns() - wall < PATIENCE {
        burn_system(5 * MS);
    }
    t!(sys::setitimer(ITIMER_PROF, 0, 0));
    check!(
        PROF.load(Ordering::SeqCst) >= 3,
        "{} SIGPROF",
        PROF.load(Ordering::SeqCst)
    );
    // Disarmed: no more of either while we keep working.
    let (vt, prof) = (VT.load(Ordering::SeqCst), PROF.load(Ordering::SeqCst));
    burn_user(30 * MS);
    check_eq!(
        (VT.load(Ordering::SeqCst), PROF.load(Ordering::SeqCst)),
        (vt, prof)
    );
    // A one-shot PROF timer fires once.
    t!(sys::setitimer(ITIMER_PROF, 5 * MS, 0));
    burn_user(40 * MS);
    check_eq!(PROF.load(Ordering::SeqCst), prof + 1);
    check_eq!(sys::setitimer(3, 0, 0).map(|_| ()), Err(EINVAL));
    check_eq!(getitimer(3).map(|_| ()), Err(EINVAL));
    t!(set_disposition(SIGVTALRM, SIG_DFL));
    t!(set_disposition(SIGPROF, SIG_DFL));
    Ok(())
}

fn timer_create(clock: u32, ev: Option<&SigEvent>) -> SysResult<i32> {
    let mut id = -1i32;
    sys::syscall(
        NR_TIMER_CREATE,
        &[
            clock as usize,
            ev.map_or(0, |e| e as *const _ as usize),
            &mut id as *mut _ as usize,
        ],
    )?;
    Ok(id)
}

fn timer_settime(id: i32, flags: u32, value_ns: u64, interval_ns: u64) -> SysResult<Itimerspec> {
    let new = Itimerspec {
        interval: Timespec::from_ns(interval_ns),
        value: Timespec::from_ns(value_ns),
    };
    let mut old = Itimerspec::default();
    sys::syscall(
        NR_TIMER_SETTIME,
        &[
            id as usize,
            flags as usize,
            &new as *const _ as usize,
            &mut old as *mut _ as usize,
        ],
    )?;
    Ok(old)
}

fn timer_gettime(id: i32) -> SysResult<Itimerspec> {
    let mut cur = Itimerspec::default();
    sys::syscall(
        NR_TIMER_GETTIME,
        &[id as usize, &mut cur as *mut _ as usize],
    )?;
    Ok(cur)
}

fn timer_getoverrun(id: i32) -> SysResult<i32> {
    sys::syscall(NR_TIMER_GETOVERRUN, &[id as usize]).map(|v| v as i32)
}

fn timer_delete(id: i32) -> SysResult {
    sys::syscall(NR_TIMER_DELETE, &[id as usize])
}

static TSIG: AtomicU32 = AtomicU32::new(0);
static T_CODE: AtomicI32 = AtomicI32::new(0);
static T_ID: AtomicI32 = AtomicI32::new(-1);
static T_OVERRUN: AtomicI32 = AtomicI32::new(-1);
static T_VALUE: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_timer(_sig: i32, info: *mut SigInfo, _uc: *mut u8) {
    // SAFETY: an SA_SIGINFO handler gets a valid siginfo.
    let i = unsafe { &*info };
    T_CODE.store(i.code, Ordering::SeqCst);
    // _timer: si_tid, si_overrun (two ints at offset 16), si_value (offset 24).
    T_ID.store(i.fields[0] as u32 as i32, Ordering::SeqCst);
    T_OVERRUN.store((i.fields[0] >> 32) as u32 as i32, Ordering::SeqCst);
    T_VALUE.store(i.fields[1], Ordering::SeqCst);
    TSIG.fetch_add(1, Ordering::SeqCst);
}

/// Waits (in sigsuspend with `mask`) until `n` timer signals have arrived.
fn wait_signals(n: u32, mask: u64) -> bool {
    let wall = sys::now_ns();
    while TSIG.load(Ordering::SeqCst) < n {
        if sys::now_ns() - wall > PATIENCE {
            return false;
        }
        let _ = sigsuspend(mask);
    }
    true
}

fn posix_timer_signals() -> TestResult {
    t!(set_handler(SIGUSR1, on_timer, 0, 0));
    let old_mask = t!(sigprocmask(SIG_BLOCK, Some(bit(SIGUSR1))));
    let open = old_mask & !bit(SIGUSR1);
    TSIG.store(0, Ordering::SeqCst);
    let ev = SigEvent::new(SIGEV_SIGNAL, SIGUSR1, 0x5eed_1234_abcd);
    let id = t!(timer_create(CLOCK_MONOTONIC, Some(&ev)));
    check!(id >= 0);
    // Created disarmed.
    let cur = t!(timer_gettime(id));
    check_eq!((cur.value.ns(), cur.interval.ns()), (0, 0));
    // A one-shot relative timer: one SI_TIMER signal with the timer's id and our value.
    let t0 = sys::now_ns();
    t!(timer_settime(id, 0, 20 * MS, 0));
    let cur = t!(timer_gettime(id));
    check!(cur.value.ns() > 0 && cur.value.ns() <= 20 * MS, "{cur:?}");
    check!(wait_signals(1, open));
    check!(sys::now_ns() - t0 >= 20 * MS, "fired early");
    check_eq!(T_CODE.load(Ordering::SeqCst), SI_TIMER);
    check_eq!(T_ID.load(Ordering::SeqCst), id);
    check_eq!(T_OVERRUN.load(Ordering::SeqCst), 0);
    check_eq!(T_VALUE.load(Ordering::SeqCst), 0x5eed_1234_abcd);
    check_eq!(
        t!(timer_gettime(id)).value.ns(),
        0,
        "a spent one-shot timer"
    );
    // An interval timer fires again and again.
    TSIG.store(0, Ordering::SeqCst);
    t!(timer_settime(id, 0, 5 * MS, 5 * MS));
    check!(wait_signals(3, open));
    check_eq!(t!(timer_gettime(id)).interval.ns(), 5 * MS);
    // Blocked, its expiries pile up as overruns of the one signal still queued.
    sys::sleep_ns(80 * MS);
    let n = TSIG.load(Ordering::SeqCst);
    check!(wait_signals(n + 1, open));
    let overrun = T_OVERRUN.load(Ordering::SeqCst);
    check!(
        overrun >= 1,
        "si_overrun {overrun} after 80 ms of a 5 ms timer blocked"
    );
    check_eq!(t!(timer_getoverrun(id)), overrun);
    // Deleted, it signals no more (not even a queued expiry).
    sys::sleep_ns(20 * MS);
    t!(timer_delete(id));
    let n = TSIG.load(Ordering::SeqCst);
    t!(sigprocmask(SIG_SETMASK, Some(open)));
    sys::sleep_ns(40 * MS);
    t!(sigprocmask(SIG_SETMASK, Some(old_mask | bit(SIGUSR1))));
    check_eq!(TSIG.load(Ordering::SeqCst), n, "signals after timer_delete");
    check_eq!(timer_gettime(id).map(|_| ()), Err(EINVAL));
    check_eq!(timer_delete(id), Err(EINVAL));

    // TIMER_ABSTIME on CLOCK_REALTIME and CLOCK_MONOTONIC; a time already past fires at once.
    for clock in [CLOCK_REALTIME, CLOCK_MONOTONIC] {
        TSIG.store(0, Ordering::SeqCst);
        let ev = SigEvent::new(SIGEV_SIGNAL, SIGUSR1, 7);
        let id = t!(timer_create(clock, Some(&ev)));
        let now = t!(sys::clock_gettime(clock)).ns();
        t!(timer_settime(id, TIMER_ABSTIME, now + 15 * MS, 0));
        check!(wait_signals(1, open));
        check!(
            t!(sys::clock_gettime(clock)).ns() >= now + 15 * MS,
            "clock {clock} early"
        );
        t!(timer_settime(id, TIMER_ABSTIME, now, 0));
        check!(wait_signals(2, open));
        t!(timer_delete(id));
    }

    // SIGEV_THREAD_ID: to this thread.
    TSIG.store(0, Ordering::SeqCst);
    let mut ev = SigEvent::new(SIGEV_SIGNAL | SIGEV_THREAD_ID, SIGUSR1, 9);
    ev.tid = sys::gettid();
    let id = t!(timer_create(CLOCK_BOOTTIME, Some(&ev)));
    t!(timer_settime(id, 0, 5 * MS, 0));
    check!(wait_signals(1, open));
    check_eq!(T_VALUE.load(Ordering::SeqCst), 9);
    t!(timer_delete(id));

    // SIGEV_NONE: no signal, but it counts down.
    let ev = SigEvent::new(SIGEV_NONE, 0, 0);
    let id = t!(timer_create(CLOCK_MONOTONIC, Some(&ev)));
    t!(timer_settime(id, 0, 2_000 * MS, 0));
    sys::sleep_ns(5 * MS);
    let left = t!(timer_gettime(id)).value.ns();
    check!(left > 0 && left < 2_000 * MS, "SIGEV_NONE left {left}");
    let old = t!(timer_settime(id, 0, 0, 0));
    check!(old.value.ns() > 0 && old.value.ns() <= left, "{old:?}");
    t!(timer_delete(id));

    // No sigevent: SIGALRM with the id as value.
    let id = t!(timer_create(CLOCK_MONOTONIC, None));
    t!(timer_delete(id));

    t!(sigprocmask(SIG_SETMASK, Some(old_mask)));
    t!(set_disposition(SIGUSR1, SIG_DFL));
    Ok(())
}

fn posix_timer_errors() -> TestResult {
    let ev = SigEvent::new(SIGEV_SIGNAL, SIGUSR1, 0);
    check_eq!(timer_create(99, Some(&ev)), Err(EINVAL));
    check_eq!(
        timer_create(CLOCK_MONOTONIC_RAW, Some(&ev)),
        Err(EOPNOTSUPP)
    );
    check_eq!(
        timer_create(CLOCK_MONOTONIC, Some(&SigEvent::new(99, SIGUSR1, 0))),
        Err(EINVAL)
    );
    for bad in [0, 65, -1] {
        let e = SigEvent::new(SIGEV_SIGNAL, bad, 0);
        check_eq!(
            timer_create(CLOCK_MONOTONIC, Some(&e)),
            Err(EINVAL),
            "signal {bad}"
        );
    }
    // A thread of another process, or of nobody.
    let other = t!(Other::start());
    for tid in [other.0, 0x3fff_fff0, 0] {
        let mut e = SigEvent::new(SIGEV_SIGNAL | SIGEV_THREAD_ID, SIGUSR1, 0);
        e.tid = tid;
        check_eq!(
            timer_create(CLOCK_MONOTONIC, Some(&e)),
            Err(EINVAL),
            "tid {tid}"
        );
    }
    check_eq!(
        sys::syscall(NR_TIMER_CREATE, &[CLOCK_MONOTONIC as usize, 8, 0]).map(|_| ()),
        Err(EFAULT)
    );
    check_eq!(
        sys::syscall(NR_TIMER_CREATE, &[CLOCK_MONOTONIC as usize, 0, 8]).map(|_| ()),
        Err(EFAULT)
    );
    let id0 = t!(timer_create(CLOCK_MONOTONIC, Some(&ev)));
    check_eq!(timer_settime(id0 + 1000, 0, MS, 0).map(|_| ()), Err(EINVAL));
    check_eq!(
        sys::syscall(NR_TIMER_SETTIME, &[id0 as usize, 0, 0, 0]).map(|_| ()),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(NR_TIMER_SETTIME, &[id0 as usize, 0, 8, 0]).map(|_| ()),
        Err(EFAULT)
    );
    let bad = Itimerspec {
        interval: Timespec::default(),
        value: Timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000_000,
        },
    };
    check_eq!(
        sys::syscall(
            NR_TIMER_SETTIME,
            &[id0 as usize, 0, &bad as *const _ as usize, 0]
        )
        .map(|_| ()),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(NR_TIMER_GETTIME, &[id0 as usize, 8]).map(|_| ()),
        Err(EFAULT)
    );
    check_eq!(timer_getoverrun(id0 + 1000), Err(EINVAL));
    check_eq!(timer_getoverrun(id0), Ok(0));
    check_eq!(timer_delete(-1), Err(EINVAL));
    t!(timer_delete(id0));
    drop(other);
    Ok(())
}

fn cpu_clocks() -> TestResult {
    check!(burn_user(10 * MS));
    // clock_getcpuclockid(0) and pthread_getcpuclockid(self) as glibc builds them.
    let pid = sys::getpid();
    let tid = sys::gettid();
    let process_clock = |p: i32| ((!p) << 3 | 2) as u32;
    let thread_clock = |t: i32| ((!t) << 3 | 6) as u32;
    let a = t!(cpu_ns(process_clock(0)));
    let b = t!(cpu_ns(process_clock(pid)));
    let c = t!(cpu_ns(CLOCK_PROCESS_CPUTIME_ID));
    check!(a > 0 && a <= b && b <= c, "{a} {b} {c}");
    let d = t!(cpu_ns(thread_clock(tid)));
    let e = t!(cpu_ns(CLOCK_THREAD_CPUTIME_ID));
    check!(d > 0 && d <= e, "{d} {e}");
    // A pid nobody has; a thread of another process (its process clock is fine).
    check_eq!(cpu_ns(process_clock(0x3fff_fff0)), Err(EINVAL));
    let other = t!(Other::start());
    check_eq!(cpu_ns(thread_clock(other.0)), Err(EINVAL));
    t!(cpu_ns(process_clock(other.0)));
    drop(other);
    // The user-time (CPUCLOCK_VIRT) clock never exceeds the whole (CPUCLOCK_PROF).
    let virt = t!(cpu_ns(((!0i32) << 3 | 1) as u32));
    let prof = t!(cpu_ns(((!0i32) << 3) as u32));
    check!(virt > 0 && virt <= prof, "virt {virt} prof {prof}");
    let mut res = Timespec::default();
    t!(sys::syscall(
        nr::CLOCK_GETRES,
        &[
            CLOCK_PROCESS_CPUTIME_ID as usize,
            &mut res as *mut _ as usize
        ]
    ));
    check!(res.tv_sec == 0 && res.tv_nsec > 0, "{res:?}");
    // A POSIX timer on our own CPU clock fires as we work.
    t!(set_handler(SIGUSR1, on_timer, SA_RESTART, 0));
    TSIG.store(0, Ordering::SeqCst);
    let ev = SigEvent::new(SIGEV_SIGNAL, SIGUSR1, 3);
    let id = t!(timer_create(CLOCK_PROCESS_CPUTIME_ID, Some(&ev)));
    t!(timer_settime(id, 0, 10 * MS, 0));
    let wall = sys::now_ns();
    while TSIG.load(Ordering::SeqCst) == 0 && sys::now_ns() - wall < PATIENCE {
        burn_user(5 * MS);
    }
    check_eq!(TSIG.load(Ordering::SeqCst), 1);
    check_eq!(T_CODE.load(Ordering::SeqCst), SI_TIMER);
    t!(timer_delete(id));
    t!(set_disposition(SIGUSR1, SIG_DFL));
    Ok(())
}

/// The image a timer's process execs into: its timer is gone, so in 80 ms no expiry (due at
/// 30 ms) is pending; its SIGUSR1 stays blocked across exec. 0: none came.
fn after_exec() -> i32 {
    sys::sleep_ns(80 * MS);
    match sigpending() {
        Ok(set) if set & bit(SIGUSR1) == 0 => 0,
        Ok(_) => 2,
        Err(_) => 3,
    }
}

fn timers_go_at_exec() -> TestResult {
    let st = t!(proc::in_child(|| {
        if sigprocmask(SIG_BLOCK, Some(bit(SIGUSR1))).is_err() {
            return 10;
        }
        let ev = SigEvent::new(SIGEV_SIGNAL, SIGUSR1, 0);
        let Ok(id) = timer_create(CLOCK_MONOTONIC, Some(&ev)) else {
            return 11;
        };
        if timer_settime(id, 0, 30 * MS, 0).is_err() {
            return 12;
        }
        let e = sys::execve(
            "/bin/tests/cputime",
            &["/bin/tests/cputime", "--after-exec"],
            &[],
        );
        eprintln!("# execve: {e:?}");
        13
    }));
    check_eq!(
        st,
        0,
        "after exec (2: the timer fired): {}",
        proc::describe(st)
    );
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--after-exec") {
        return after_exec();
    }
    proc::mount_when_init();
    ktap::run(&[
        ("user_time_grows", user_time_grows),
        ("system_time_and_proc_stat", system_time_and_proc_stat),
        ("switch_counts", switch_counts),
        ("children_time_after_wait", children_time_after_wait),
        ("maxrss_covers_touched_memory", maxrss_covers_touched_memory),
        ("itimer_virtual_prof", cpu_itimers),
        ("posix_timer_signals", posix_timer_signals),
        ("posix_timer_errors", posix_timer_errors),
        ("timers_go_at_exec", timers_go_at_exec),
        ("cpu_clocks", cpu_clocks),
    ])
}

entry!(main);
